"""A page's metadata (``web.metadata``): real pages with known answers
(Readability's, ``tests/data/metadata``), each source in its order of
trust, dates in ISO 8601, bylines, and the bounds on what a page gives."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from pathlib import Path

import lxml.html
import pytest

from mpcrawler.content import metadata
from mpcrawler.content.metadata import byline_name, iso_date, page_metadata

DATA = Path(__file__).resolve().parent.parent / "data" / "metadata"
BASE = "http://fakehost/test/page.html"
# Readability's name of a field -> ours.
FIELDS = {
    "title": "headline",
    "byline": "author",
    "siteName": "site_name",
    "publishedTime": "published",
}
FIRST_PARAGRAPH = {"004-metadata-space-separated-properties", "parsely-metadata"}
# Readability trusts Dublin Core over Open Graph; the order here puts Open Graph first.
ORDER_DIFFERS = {("004-metadata-space-separated-properties", "title")}


def meta_of(html: str, base: str = BASE) -> dict[str, object]:
    return page_metadata(lxml.html.document_fromstring(html), base)


def words(text: object) -> str:
    """A byline or excerpt as compared: without "By", punctuation or case."""
    text = re.sub(r"^\s*(by|par)\s+", "", str(text or "").strip(), flags=re.I)
    return re.sub(r"\W+", " ", text).strip().lower()


def same_time(got: object, want: str) -> bool:
    wanted = iso_date(want)
    if not isinstance(got, str) or wanted is None:
        return False
    if len(got) > 10 and len(wanted) > 10:
        return dt.datetime.fromisoformat(got) == dt.datetime.fromisoformat(wanted)
    return got[:10] == wanted[:10]


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir() if p.is_dir()))
def test_real_pages_give_the_metadata_readability_expects(name: str) -> None:
    expected = json.loads((DATA / name / "expected-metadata.json").read_text())
    html = gzip.decompress((DATA / name / "source.html.gz").read_bytes()).decode("utf-8")
    found = meta_of(html)
    checked = 0
    for theirs, ours in FIELDS.items():
        if expected.get(theirs) and (name, theirs) not in ORDER_DIFFERS:
            checked += 1
            if theirs == "publishedTime":
                assert same_time(found.get(ours), expected[theirs]), (ours, found.get(ours))
            else:
                assert words(found.get(ours)) == words(expected[theirs]), (ours, found.get(ours))
    if expected.get("excerpt") and name not in FIRST_PARAGRAPH:  # (theirs: a meta description)
        assert words(found.get("description")) == words(expected["excerpt"])
    assert checked


def page(head: str = "", body: str = "") -> str:
    return f"<html><head><title>t</title>{head}</head><body>{body}<p>text</p></body></html>"


LD = '<script type="application/ld+json">{}</script>'


def test_each_field_comes_from_the_most_trusted_source_that_says_it() -> None:
    ld = LD.format(
        json.dumps(
            {
                "@context": "https://schema.org",
                "@graph": [
                    {"@type": "WebSite", "name": "Site From LD"},
                    {"@type": "NewsArticle", "author": [{"name": "A One"}, {"name": "B Two"}],
                     "datePublished": "2021-03-04T05:06:07Z", "keywords": ["k1", "k2"]},
                ],
            }
        )
    )  # fmt: skip
    og = (
        '<meta property="og:site_name" content="Site From OG">'
        '<meta property="article:published_time" content="2020-01-01">'
        '<meta property="og:description" content="From OG">'
        '<meta property="article:modified_time" content="2021-04-05T06:07:08+02:00">'
        '<meta property="og:image" content="/img.png">'
    )
    dc = '<meta name="DC.description" content="From DC"><meta name="dc.creator" content="C Three">'
    meta = '<meta name="description" content="From meta"><meta name="keywords" content="x, y">'
    found = meta_of(page(ld + og + dc + meta + '<link rel="canonical" href="/canon">'))
    assert found == {
        "headline": "t",  # the page's <title>: neither JSON-LD nor Open Graph gave one
        "author": "A One, B Two",
        "published": "2021-03-04T05:06:07+00:00",
        "modified": "2021-04-05T06:07:08+02:00",
        "description": "From OG",
        "site_name": "Site From LD",
        "canonical": "http://fakehost/canon",
        "image": "http://fakehost/img.png",
        "tags": ["k1", "k2"],
    }
    # Without JSON-LD and Open Graph, Dublin Core's, then the other metas'.
    assert meta_of(page(dc + meta))["description"] == "From DC"
    assert meta_of(page(meta))["tags"] == ["x", "y"]


def test_a_time_element_and_the_visible_byline_are_the_last_resort() -> None:
    body = (
        '<article><header><span class="byline">By Jane Doe | Staff</span>'
        '<time datetime="2019-06-07">June 7</time></header></article>'
    )
    assert meta_of(page(body=body)) == {
        "headline": "t",
        "author": "Jane Doe",
        "published": "2019-06-07",
    }
    marked = '<time datetime="2018-01-02" itemprop="datePublished">x</time><time datetime="2017">'
    assert meta_of(page(body=marked))["published"] == "2018-01-02"
    named = '<div itemprop="author"><span itemprop="name">Ann Author</span>, editor</div>'
    assert meta_of(page(body=named))["author"] == "Ann Author"


@pytest.mark.parametrize(
    ("head", "headline"),
    [
        ('<title>The Story | The Site</title><meta property="og:site_name" content="The Site">',
         "The Story"),
        ("<title>The Site - A Longer Story Here</title>"
         '<meta property="og:site_name" content="The Site">', "A Longer Story Here"),
        ("<title>A Story Of Three Words - Some Site</title>", "A Story Of Three Words"),
        ("<title>Short - Some Site</title>", "Short - Some Site"),
        ('<title>Raw | Site</title><meta property="og:title" content="From OG">', "From OG"),
        ('<title>Raw</title><meta property="og:title" content="From OG">'
         + LD.format('{"@type": "NewsArticle", "headline": "From LD"}'), "From LD"),
    ],
)  # fmt: skip
def test_the_headline_is_the_title_without_the_sites_name(head: str, headline: str) -> None:
    html = f"<html><head>{head}</head><body><p>text</p></body></html>"
    assert meta_of(html)["headline"] == headline


def test_an_author_that_is_a_url_is_not_a_name() -> None:
    head = '<meta property="article:author" content="https://facebook.com/someone">'
    body = '<a rel="author" href="/people/x">Real Name</a>'
    assert meta_of(page(head, body))["author"] == "Real Name"


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("2020-05-06", "2020-05-06"),
        ("2020-05-06T07:08:09Z", "2020-05-06T07:08:09+00:00"),
        ("2020-05-06T07:08:09.123-08:00", "2020-05-06T07:08:09.123000-08:00"),
        ("Wed, 06 May 2020 07:08:09 GMT", "2020-05-06T07:08:09+00:00"),
        ("May 6, 2020", "2020-05-06"),
        ("6th May 2020", "2020-05-06"),
        ("2020/05/06", "2020-05-06"),
        ("1970-01-01", None),  # before 1990: not a page's date
        ("2999-01-01", None),
        ("yesterday", None),
        ("", None),
    ],
)
def test_dates_are_written_in_iso_8601(text: str, iso: str | None) -> None:
    assert iso_date(text, today=dt.date(2026, 12, 6)) == iso


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("By Nathan Willis\n   March 25, 2015", "Nathan Willis"),
        ("Tech Industry by Steven Musil January 18, 2017", "Steven Musil"),
        ("Dan Goodin - Apr 16, 2015 8:02 pm UTC", "Dan Goodin"),
        ("Nikhil Marathe", "Nikhil Marathe"),  # "Mar..." is no month without a date
        ("Theresa May", "Theresa May"),
        ("Last Updated: January 7, 2025", None),
        ("https://medium.com/@someone", None),
        ("one two three four five six seven eight nine ten", None),
    ],
)
def test_a_bylines_name(text: str, name: str | None) -> None:
    assert byline_name(text) == name


def test_json_ld_in_cdata_or_comments_is_read_and_broken_json_skipped() -> None:
    wrapped = LD.format('<![CDATA[ {"@type": "Article", "author": "Wrapped Name"} ]]>')
    broken = LD.format('{"@type": "Article", "author": ')
    assert meta_of(page(broken + wrapped))["author"] == "Wrapped Name"


def test_what_a_page_gives_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_SCRIPTS scripts, or a script past MAX_SCRIPT_BYTES, nothing
    more is read; tags stop at MAX_TAGS and texts at MAX_TEXT."""
    filler = LD.format('{"@type": "Thing"}') * metadata.MAX_SCRIPTS
    late = LD.format('{"@type": "Article", "author": "Too Late"}')
    assert "author" not in meta_of(page(filler + late))
    monkeypatch.setattr(metadata, "MAX_SCRIPT_BYTES", 50)
    big = LD.format(json.dumps({"@type": "Article", "author": "Big", "x": "y" * 60}))
    assert "author" not in meta_of(page(big))
    tags = ", ".join(f"t{i}" for i in range(1000))
    long = "d" * 5000
    found = meta_of(page(f'<meta name="keywords" content="{tags}"><meta name="description" '
                         f'content="{long}">'))  # fmt: skip
    assert len(found["tags"]) == metadata.MAX_TAGS  # type: ignore[arg-type]
    assert len(found["description"]) == metadata.MAX_TEXT  # type: ignore[arg-type]
