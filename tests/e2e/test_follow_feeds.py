"""--follow-feeds end to end: a site whose pages name their feeds, a feed
as a seed, and hostile feeds (malformed, huge, a loop), judged from the
server's log and the records (issue 57, section 3)."""

from __future__ import annotations

import json
from pathlib import Path

from hostile import Reply, html, serve
from support import crawl_records


def typed(kind: str, body: bytes) -> Reply:
    return 200, {"Content-Type": kind}, body


def rss(*items: tuple[str, str]) -> bytes:
    entries = "".join(
        f"<item><link>{link}</link><pubDate>{date}</pubDate></item>" for link, date in items
    )
    head = '<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
    return f"{head}{entries}</channel></rss>".encode()


HOME = html(
    "<html><head><title>home</title>"
    '<link rel="alternate" type="application/rss+xml" href="/feed.rss">'
    '<link rel="alternate" type="application/feed+json" href="/feed.json">'
    '<link rel="alternate" type="application/atom+xml" href="/broken.atom">'
    '<link rel="alternate" type="application/rss+xml" href="/huge.rss">'
    '<link rel="alternate" type="text/html" hreflang="fr" href="/fr/">'
    '</head><body><a href="/linked">a page</a></body></html>'
)


def routes(base: str) -> dict:
    return {
        "/": lambda h, n: HOME,
        "/feed.rss": lambda h, n: typed(
            "application/rss+xml",
            rss(("/from-rss", "Tue, 02 Jan 2024 03:04:05 GMT"), (f"{base}/feed.rss", "")),
        ),  # it lists itself: a loop
        "/feed.json": lambda h, n: typed(
            "application/feed+json",
            json.dumps(
                {
                    "version": "https://jsonfeed.org/version/1.1",
                    "items": [{"url": "/from-json", "date_modified": "2024-05-06T07:08:09+02:00"}],
                }
            ).encode(),
        ),
        "/broken.atom": lambda h, n: typed("application/atom+xml", b"<feed><entry><title>x"),
        "/huge.rss": lambda h, n: typed("application/rss+xml", b"<rss>" + b" " * (9 << 20)),
        "/atom-seed": lambda h, n: typed(
            "text/xml",
            b'<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>'
            b'<entry><link href="/from-atom"/><updated>2023-03-04T05:06:07Z</updated></entry>'
            b"</feed>",
        ),
    }


def page(h: object, n: int) -> Reply:
    return html("<html><head><title>p</title></head><body><p>text</p></body></html>")


def test_feeds_a_page_names_are_read_and_their_entries_crawled(tmp_path: Path) -> None:
    with serve({}, default=page) as site:
        site.routes.update(routes(site.url))
        records = crawl_records(
            site.url + "/", tmp_path / "job", "--follow-feeds", "--max-bytes", "20M"
        )
        counts = site.log.counts()
    by_path = {r["url"].removeprefix(site.url): r for r in records}
    assert by_path["/from-rss"]["lastmod"] == "2024-01-02T03:04:05+00:00"
    assert by_path["/from-json"]["lastmod"] == "2024-05-06T07:08:09+02:00"
    assert by_path["/feed.rss"]["feed"] == "rss20" and by_path["/feed.rss"]["feed_entries"] == 2
    assert by_path["/feed.json"]["feed"] == "json11"
    assert by_path["/broken.atom"]["error_kind"] == "feed"
    assert by_path["/huge.rss"]["error"] == "feed: larger than 8 MB"
    assert counts["/feed.rss"] == 1 and counts["/from-rss"] == 1  # the loop: once each
    assert counts["/linked"] == 1 and "/fr/" not in counts  # a translation is no feed


def test_a_feed_given_as_a_seed_is_read_as_one(tmp_path: Path) -> None:
    with serve({}, default=page) as site:
        site.routes.update(routes(site.url))
        records = crawl_records(site.url + "/atom-seed", tmp_path / "job", "--follow-feeds")
    by_path = {r["url"].removeprefix(site.url): r for r in records}
    assert by_path["/atom-seed"]["feed"] == "atom10"
    assert by_path["/from-atom"]["lastmod"] == "2023-03-04T05:06:07+00:00"


def test_without_the_option_no_feed_is_fetched(tmp_path: Path) -> None:
    with serve({}, default=page) as site:
        site.routes.update(routes(site.url))
        crawl_records(site.url + "/", tmp_path / "job")
        counts = site.log.counts()
    assert counts["/linked"] == 1
    assert not {"/feed.rss", "/feed.json", "/from-rss"} & set(counts)
