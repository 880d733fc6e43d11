"""``mpcrawler.extract``: bytes or str, their charset, a URL that is not one."""

from __future__ import annotations

import pytest

import mpcrawler

PAGE = (
    "<html><head><title>Caf\u00e9 | Site</title><meta property='og:site_name' content='Site'>"
    "</head><body><article><h1>Caf\u00e9</h1><p>" + "Un caf\u00e9 au lait. " * 30 + "</p>"
    "<a href='/next'>next</a></article></body></html>"
)


def test_bytes_and_str_give_the_same_fields() -> None:
    from_str = mpcrawler.extract(PAGE, "https://example.org/a/b")
    from_bytes = mpcrawler.extract(PAGE.encode("latin-1"), "https://example.org/a/b",
                                   charset="iso-8859-1")  # fmt: skip
    assert from_str == from_bytes
    assert from_str["title"] == "Caf\u00e9 | Site" and from_str["headline"] == "Caf\u00e9"
    assert from_str["site_name"] == "Site" and "caf\u00e9 au lait" in from_str["text"].lower()
    assert "](https://example.org/next)" in from_str["markdown"]
    assert from_str["lang"] == "fr" and len(from_str["text_digest"]) > 10


def test_max_text_cuts_as_the_option_does() -> None:
    found = mpcrawler.extract(PAGE, "https://example.org/", max_text=20)
    assert len(found["text"]) == 20 and found["text_truncated"] is True


def test_no_html_gives_no_text() -> None:
    assert mpcrawler.extract(b"", "https://example.org/") == {"title": None, "text": ""}


@pytest.mark.parametrize("url", ["not a url", "ftp://example.org/", "/relative"])
def test_a_url_that_is_not_absolute_http_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="not an absolute http"):
        mpcrawler.extract(PAGE, url)
