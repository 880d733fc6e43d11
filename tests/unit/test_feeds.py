"""Feeds (``web.feeds``): RSS, Atom and JSON Feed entries with their dates,
what is taken for a feed, and what is refused with a reason."""

from __future__ import annotations

import json

import pytest

from mpcrawler.web import feeds
from mpcrawler.web.feeds import FeedError, feed_link, is_feed, parse

RSS = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>
<item><link>https://news.test/a</link><pubDate>Tue, 02 Jan 2024 03:04:05 GMT</pubDate></item>
<item><link>https://news.test/b</link></item>
<item><title>no link</title></item>
</channel></rss>"""
ATOM = b"""<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://blog.test/posts/">
<title>t</title><entry><link href="one"/><updated>2024-02-03T04:05:06+01:00</updated></entry>
<entry><link href="/two"/><published>2024-02-01</published><updated>2024-02-05</updated></entry>
</feed>"""
JSON_FEED = json.dumps(
    {
        "version": "https://jsonfeed.org/version/1.1",
        "title": "t",
        "items": [
            {"id": "1", "url": "https://j.test/1", "date_published": "2024-03-04T05:06:07Z"},
            {"id": "2", "external_url": "https://elsewhere.test/2"},
            {"id": "3"},
            "not an item",
        ],
    }
).encode()


def test_rss_entries_with_their_dates() -> None:
    feed = parse(RSS, "https://news.test/feed.xml")
    assert feed.kind == "rss20"
    assert feed.entries == [
        ("https://news.test/a", "2024-01-02T03:04:05+00:00"),
        ("https://news.test/b", None),
    ]
    assert feed.dropped == 1


def test_atom_links_are_resolved_and_published_comes_first() -> None:
    feed = parse(ATOM, "https://blog.test/feed")
    assert feed.kind == "atom10"
    assert feed.entries == [
        ("https://blog.test/posts/one", "2024-02-03T04:05:06+01:00"),
        ("https://blog.test/two", "2024-02-01"),
    ]


def test_json_feed_is_read_here() -> None:
    feed = parse(JSON_FEED, "https://j.test/feed.json")
    assert feed.kind == "json11"
    assert feed.entries == [
        ("https://j.test/1", "2024-03-04T05:06:07+00:00"),
        ("https://elsewhere.test/2", None),
    ]
    assert feed.dropped == 2


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"<html><body>not a feed</body></html>", "not a feed"),
        (b"<rss version='2.0'><channel><item><title>x", "malformed"),  # cut before a link
        (b'{"items": []}', "without a JSON Feed version"),
        (b"{not json", "not a feed: JSON"),
        (
            b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
            b"<rss version='2.0'><channel><item><link>&b;</link></item></channel></rss>",
            "declares entities",
        ),
    ],
)
def test_what_is_not_a_readable_feed_says_why(body: bytes, why: str) -> None:
    with pytest.raises(FeedError, match=why):
        parse(body, "https://x.test/feed")


def test_a_feed_cut_short_gives_the_entries_before_the_cut() -> None:
    feed = parse(RSS[: RSS.index(b"<item><title>")], "https://news.test/feed.xml")
    assert [link for link, _ in feed.entries] == ["https://news.test/a", "https://news.test/b"]


def test_a_huge_feed_is_refused_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeds, "MAX_BYTES", 1000)
    with pytest.raises(FeedError, match="larger than"):
        parse(RSS + b" " * 1000, "https://x.test/feed")


def test_entries_stop_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeds, "MAX_ENTRIES", 3)
    items = [{"url": f"https://j.test/{i}"} for i in range(100)]
    body = json.dumps({"version": "https://jsonfeed.org/version/1", "items": items}).encode()
    feed = parse(body, "https://j.test/feed.json")
    assert len(feed.entries) == 3 and feed.dropped == 97


@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        ("application/rss+xml", b"anything", True),
        ("application/atom+xml", b"", True),
        ("text/xml", RSS, True),
        ("application/xml", ATOM, True),
        ("application/json", JSON_FEED, True),
        ("application/json", b'{"a": 1}', False),
        ("text/xml", b"<urlset></urlset>", False),
        ("text/html", RSS, False),
    ],
)
def test_a_feed_is_known_by_its_type_or_its_start(
    content_type: str, body: bytes, expected: bool
) -> None:
    assert is_feed(content_type, body) is expected


@pytest.mark.parametrize(
    ("rel", "kind", "href", "expected"),
    [
        ("alternate", "application/rss+xml", "/feed.xml", "/feed.xml"),
        ("Alternate", "application/atom+xml; charset=utf-8", " /atom ", "/atom"),
        ("alternate", "application/feed+json", "/f.json", "/f.json"),
        ("alternate", "text/html", "/fr/", None),  # a translation, not a feed
        ("stylesheet", "application/rss+xml", "/x", None),
        ("alternate", None, "/x", None),
        ("alternate", "application/rss+xml", None, None),
    ],
)
def test_a_pages_feed_links(
    rel: str, kind: str | None, href: str | None, expected: str | None
) -> None:
    assert feed_link(rel, kind, href) == expected
