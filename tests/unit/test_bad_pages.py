"""Pages that are not what a parser expects, read with --extract by both
analyzers: no <body>, a frameset, XHTML served as XML, NUL bytes and broken
UTF-8, Shift_JIS, a 20 MB page (deep nesting: test_analyzer.py)."""

from __future__ import annotations

import pytest

from mpcrawler.settings import Settings
from mpcrawler.worker.analyzer import HtmlAnalyzer, LxmlAnalyzer
from mpcrawler.worker.downloader import Response

ANALYZERS = pytest.mark.parametrize("analyzer", [HtmlAnalyzer, LxmlAnalyzer], ids=["bs4", "lxml"])


def read(
    analyzer: type[HtmlAnalyzer],
    body: bytes,
    content_type: str = "text/html",
    charset: str | None = "utf-8",
    **options: object,
) -> tuple[list[str], dict[str, object], str | None]:
    """(links, item, the text a fingerprint is of) of ``body``, with --extract."""
    found = analyzer(Settings(extract=True, **options)).analyze(  # type: ignore[arg-type]
        Response(
            url="http://x.test/", status=200, content_type=content_type, charset=charset, body=body
        )
    )
    return [str(link) for link in found.links], found.item, found.text


@ANALYZERS
def test_a_page_without_a_body_element_gives_its_text(analyzer: type[HtmlAnalyzer]) -> None:
    body = b"<html><head><title>T</title></head><p>Text of a page with no body element.</p></html>"
    _, item, _ = read(analyzer, body)
    assert item["title"] == "T" and item["text"] == "Text of a page with no body element."


@ANALYZERS
def test_a_frameset_links_its_frames_and_its_noframes_is_no_text(
    analyzer: type[HtmlAnalyzer],
) -> None:
    """A frameset's frames are its links (an embed each with
    --page-requisites); <noframes>, which a browser showing frames does not
    show, is no text (libxml2 reads it as raw markup: it was '<p>...</p>')."""
    body = (
        b'<html><head><title>F</title></head><frameset cols="50%,50%"><frame src="left.html">'
        b'<frame src="right.html"><noframes><p>Your browser shows no frames.</p></noframes>'
        b"</frameset></html>"
    )
    links, item, text = read(analyzer, body)
    assert links == ["left.html", "right.html"] and item["title"] == "F"
    assert item["text"] == "" and "frames" not in (text or "") and "<p>" not in (text or "")
    embedded, _, _ = read(analyzer, body, page_requisites=True)
    assert embedded == []  # frames are embeds then


@ANALYZERS
def test_an_iframe_is_a_link_of_its_page(analyzer: type[HtmlAnalyzer]) -> None:
    body = b'<body><p>Around the frame.</p><iframe src="inner.html"></iframe><a href="a">a</a>'
    links, item, _ = read(analyzer, body)
    assert links == ["inner.html", "a"] and item["text"] == "Around the frame."


@ANALYZERS
def test_xhtml_served_as_xml_is_read_as_html(analyzer: type[HtmlAnalyzer]) -> None:
    body = (
        b'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        b"<head><title>X</title></head><body><p>XHTML served as XML, with "
        b'<a href="n.html">a link</a>.</p></body></html>'
    )
    links, item, _ = read(analyzer, body, "application/xhtml+xml", None)
    assert links == ["n.html"] and item["title"] == "X"
    assert item["text"] == "XHTML served as XML, with a link."


@ANALYZERS
def test_nul_bytes_and_broken_utf8_are_replacement_characters(
    analyzer: type[HtmlAnalyzer],
) -> None:
    body = b"<title>caf\xc3\xa9\x00</title><p>Before\x00after, and \xff\xfe\xc3( bytes.</p>"
    _, item, _ = read(analyzer, body)
    assert item["title"] == "caf\u00e9\ufffd"
    assert item["text"] == "Before\ufffdafter, and \ufffd\ufffd\ufffd( bytes."


@ANALYZERS
def test_a_shift_jis_page_is_read_right(analyzer: type[HtmlAnalyzer]) -> None:
    page = "<meta charset=shift_jis><title>日本語</title><p>東京の天気は晴れです。</p>"
    _, item, _ = read(analyzer, page.encode("shift_jis"), charset=None)
    assert item["title"] == "日本語" and item["text"] == "東京の天気は晴れです。"


@ANALYZERS
def test_a_20_mb_page_gives_its_links_and_the_text_of_its_first_part(
    analyzer: type[HtmlAnalyzer],
) -> None:
    paragraph = b"<p>Paragraph %d of the twenty megabytes, <a href='/p%d'>a link</a>.</p>\n"
    body = (
        b"<title>Twenty</title><main>"
        + b"".join(paragraph % (n, n) for n in range(270_000))
        + b"</main>"
    )
    assert len(body) > 20 << 20
    links, item, text = read(analyzer, body)
    assert len(links) == 270_000 and links[-1] == "/p269999" and item["title"] == "Twenty"
    assert str(item["text"]).startswith("Paragraph 0 of the twenty megabytes")
    assert item["text_truncated"] is True and (text or "").rstrip().endswith("a link.")
