"""Sitemaps (sitemaps.org): what one sitemap file lists, read defensively.

Runs in a worker, on the body of a URL fetched as kind ``sitemap`` (found in
a robots.txt ``Sitemap:`` line, or listed by a sitemap index).  A pure
function of the bytes: :func:`parse` returns the pages and child sitemaps
listed, or raises :class:`SitemapError` with a short reason, which becomes
that sitemap's error record.  The worker resolves and scope-checks the URLs
like any link; the master queues them (pages at depth 1, children as
sitemaps one level deeper, up to MAX_DEPTH).

Formats: ``<urlset>`` and ``<sitemapindex>`` XML, gzip-compressed or not
(whatever the Content-Encoding said), and plain text (one URL a line).  The
protocol's limits are caps, never trusted: at most MAX_URLS entries are read
from a file and at most MAX_BYTES of it decompressed.  A sitemap with a
DOCTYPE is refused (that is how entity bombs and external entities come in),
and the XML parser resolves no entities, loads no DTD and reads no network
in any case.

``<priority>`` (0.0 to 1.0, default 0.5) becomes the frontier's integer
priority as ``round(20 x (p - 0.5))``: the default 0.5 is 0 like any link,
1.0 is +10, 0.0 is -10.  ``<lastmod>`` is kept as written, for the page's record.
"""

from __future__ import annotations

import datetime
import math
import zlib
from dataclasses import dataclass, field

from lxml import etree

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_URLS",
    "Sitemap",
    "SitemapError",
    "parse",
    "scaled_priority",
]

MAX_URLS = 50_000
MAX_BYTES = 50 * 1024 * 1024
MAX_DEPTH = 3  # an index may list indexes, this deep at most
_PRIORITY_SCALE = 20


class SitemapError(ValueError):
    """The body is not a sitemap that can be read; ``str()`` is the reason."""


@dataclass
class Sitemap:
    """What one sitemap file lists.  ``pages`` are (loc, priority, lastmod);
    ``dropped`` counts entries past MAX_URLS."""

    pages: list[tuple[str, int, str | None]] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    dropped: int = 0


def scaled_priority(text: str | None) -> int:
    """A sitemap ``<priority>`` on the frontier's integer scale (see above)."""
    try:
        value = float(text) if text is not None else 0.5
    except ValueError:
        value = 0.5
    if not math.isfinite(value):
        value = 0.5
    return round(_PRIORITY_SCALE * (min(1.0, max(0.0, value)) - 0.5))


def _gunzip(body: bytes) -> bytes:
    """A gzip body decompressed, MAX_BYTES at most (a bomb stops there)."""
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = decoder.decompress(body, MAX_BYTES + 1)
    except zlib.error as exc:
        raise SitemapError(f"broken gzip: {exc}") from None
    if len(out) > MAX_BYTES or decoder.unconsumed_tail:
        raise SitemapError(f"larger than {MAX_BYTES // 2**20} MB uncompressed")
    if not decoder.eof:
        raise SitemapError("broken gzip: it ends before its end")
    return out


_PARSER_OPTIONS = {
    "resolve_entities": False,
    "load_dtd": False,
    "no_network": True,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
}


def parse(body: bytes) -> Sitemap:
    """The pages and sitemaps ``body`` lists.  Raises SitemapError."""
    if body[:2] == b"\x1f\x8b":
        body = _gunzip(body)
    if len(body) > MAX_BYTES:
        raise SitemapError(f"larger than {MAX_BYTES // 2**20} MB")
    head = body[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if not head.startswith(b"<"):
        return _parse_text(body)
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head:
        raise SitemapError("not a sitemap: an HTML page")
    if b"<!doctype" in body[:65536].lower():
        # Sitemaps have no use for one; it is how entity bombs and external
        # entities come in.  (The parser would not expand them either.)
        raise SitemapError("a DOCTYPE (entity declarations) is not allowed in a sitemap")
    return _parse_xml(body)


def _parse_text(body: bytes) -> Sitemap:
    sitemap = Sitemap()
    for line in body.decode("utf-8-sig", "replace").splitlines():
        url = line.strip()
        if not url:
            continue
        if len(sitemap.pages) >= MAX_URLS:
            sitemap.dropped += 1
            continue
        sitemap.pages.append((url, 0, None))
    return sitemap


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _parse_xml(body: bytes) -> Sitemap:
    parser = etree.XMLParser(**_PARSER_OPTIONS)  # type: ignore[arg-type]
    try:
        root = etree.fromstring(body, parser)
    except etree.XMLSyntaxError as exc:
        raise SitemapError(f"malformed XML: {exc}") from None
    kind = _local(root.tag)
    if kind not in ("urlset", "sitemapindex"):
        raise SitemapError(f"not a sitemap: the root element is <{kind or '?'}>")
    entry = "url" if kind == "urlset" else "sitemap"
    sitemap = Sitemap()
    for element in root:
        if _local(element.tag) != entry:
            continue
        fields = {_local(child.tag): (child.text or "").strip() for child in element}
        loc = fields.get("loc")
        if not loc:
            continue
        if len(sitemap.pages) + len(sitemap.sitemaps) >= MAX_URLS:
            sitemap.dropped += 1
            continue
        if kind == "sitemapindex":
            sitemap.sitemaps.append(loc)
        else:
            priority = scaled_priority(fields.get("priority"))
            sitemap.pages.append((loc, priority, fields.get("lastmod") or None))
    return sitemap


def lastmod_time(text: str) -> float | None:
    """Unix time of a ``<lastmod>`` (W3C datetime: a date, or a date and a
    time with its zone; no zone is read as UTC), or None if unreadable."""
    value = text.strip()
    try:
        when = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp()
