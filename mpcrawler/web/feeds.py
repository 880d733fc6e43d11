"""Feeds (``--follow-feeds``): what one RSS, Atom or JSON Feed lists, read
defensively.

Runs in a worker, on the body of a URL whose answer is a feed: one a page
named in its ``<link rel="alternate">`` (``feed_link``), or a seed.  A pure
function of the bytes: :func:`parse` returns the entries' links, each with
its date (published, else updated, in ISO 8601: the frontier's ``lastmod``,
which the entry's record keeps, as a sitemap's), or raises
:class:`FeedError` with a short reason, which becomes that feed's record's
error.  The worker resolves and scope-checks the links like any page's.

RSS (0.9x, 1.0, 2.0) and Atom are read by feedparser, JSON Feed (1.0, 1.1)
here.  A body is taken for a feed by its type (``FEED_TYPES``), or, for a
generic XML or JSON type (``SNIFF_TYPES``), by how it starts (``<rss``,
``<feed``, ``<rdf:RDF``, a JSON Feed's ``version``).  Bounds, whatever the
feed says: at most ``MAX_BYTES`` are read (a larger body is the feed's
error, not a stall of its worker), at most ``MAX_ENTRIES`` entries, and a
document that declares entities is refused (that is how entity bombs come
in); the parser loads nothing from the network.  A feed that lists itself
or another feed (a loop) is only a link: the seen set fetches each URL once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..content.metadata import iso_date

__all__ = [
    "FEED_TYPES",
    "MAX_BYTES",
    "MAX_ENTRIES",
    "SNIFF_TYPES",
    "Feed",
    "FeedError",
    "feed_link",
    "is_feed",
    "parse",
]

FEED_TYPES = frozenset(
    {"application/rss+xml", "application/x-rss+xml", "application/atom+xml",
     "application/feed+json", "application/rdf+xml"}
)  # fmt: skip
SNIFF_TYPES = frozenset({"text/xml", "application/xml", "application/json"})
MAX_BYTES = 8 << 20
MAX_ENTRIES = 10_000
SNIFF_BYTES = 2048  # of a body's start read to tell a feed
_XML_FEED = re.compile(rb"<(?:rss|feed|rdf:RDF)[\s>]")
_JSON_FEED = re.compile(rb'"version"\s*:\s*"https?://jsonfeed\.org/version/')
_ENTITY = re.compile(rb"<!ENTITY", re.I)


class FeedError(ValueError):
    """Why a feed cannot be read (one short line)."""


@dataclass
class Feed:
    """What a feed lists: (link, date in ISO 8601 or None) a entry, in order."""

    kind: str  # rss20, atom10, json...
    entries: list[tuple[str, str | None]] = field(default_factory=list)
    dropped: int = 0  # entries past MAX_ENTRIES, or without a link


def feed_link(rel: Any, kind: Any, href: Any) -> str | None:
    """The feed a ``<link rel="alternate" type="..." href>`` names, or None."""
    if not isinstance(href, str) or not isinstance(kind, str) or not isinstance(rel, str):
        return None
    if "alternate" not in rel.lower().split():
        return None
    type_ = kind.split(";")[0].strip().lower()
    if type_ not in FEED_TYPES and type_ != "application/json":
        return None
    return href.strip() or None


def is_feed(content_type: str, body: bytes) -> bool:
    """The body is a feed: by its type, or a generic XML or JSON type whose start says so."""
    if content_type in FEED_TYPES:
        return True
    if content_type not in SNIFF_TYPES:
        return False
    start = body[:SNIFF_BYTES]
    return bool(_XML_FEED.search(start) or _JSON_FEED.search(start))


def parse(body: bytes, url: str) -> Feed:
    """The entries of the feed ``body`` found at ``url`` (relative links are
    resolved against it by the caller's resolver; Atom's ``xml:base`` here).
    FeedError: too large, entities declared, or not a feed."""
    if len(body) > MAX_BYTES:
        raise FeedError(f"larger than {MAX_BYTES >> 20} MB")
    start = body.lstrip()[:1]
    if start in (b"{", b"["):
        return _json_feed(body)
    if _ENTITY.search(body[: 64 << 10]):
        raise FeedError("declares entities (refused: an entity bomb's way in)")
    import feedparser

    found = feedparser.parse(body, response_headers={"content-location": url})
    if not found.get("version"):
        reason = found.get("bozo_exception")
        raise FeedError(f"not a feed{f': {str(reason)[:200]}' if reason else ''}")
    feed = Feed(str(found.version))
    for entry in found.entries:
        _add(feed, entry.get("link"), entry.get("published") or entry.get("updated"))
    if found.get("bozo") and not feed.entries:  # broken before any entry could be read
        raise FeedError(f"malformed: {str(found.get('bozo_exception'))[:200]}")
    return feed


def _json_feed(body: bytes) -> Feed:
    """A JSON Feed (https://jsonfeed.org, 1.0 and 1.1)."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise FeedError(f"not a feed: JSON: {exc}") from None
    version = data.get("version") if isinstance(data, dict) else None
    if not isinstance(version, str) or "jsonfeed.org/version/" not in version:
        raise FeedError("not a feed: JSON without a JSON Feed version")
    items = data.get("items")
    if not isinstance(items, list):
        raise FeedError("not a feed: a JSON Feed without items")
    feed = Feed("json" + version.rsplit("/", 1)[-1].replace(".", ""))
    for item in items:
        if not isinstance(item, dict):
            feed.dropped += 1
            continue
        link = item.get("url") or item.get("external_url")
        _add(feed, link, item.get("date_published") or item.get("date_modified"))
    return feed


def _add(feed: Feed, link: Any, date: Any) -> None:
    if not isinstance(link, str) or not link.strip() or len(feed.entries) >= MAX_ENTRIES:
        feed.dropped += 1
        return
    feed.entries.append((link.strip(), iso_date(date) if isinstance(date, str) else None))
