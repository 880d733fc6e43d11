"""Listings: what a worker reads of a body that is no page but lists URLs
(a sitemap, a feed with --follow-feeds, a stylesheet's requisites with
--page-requisites), and of a page's requisites and rel=canonical, through
the crawl's URL rules as the worker has them now.

The worker makes a new one when the rules change (``control add-seeds``,
``exclude``): one assignment, so a page is read under the old rules or the
new, never a mix.  A URL the rules refuse is reported with its page, once
(``refused``, the worker's memory of those reported).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..archive import requisites
from ..messages import PageResult
from ..robots.page import canonical_from_link_header
from ..settings.worker import WorkerConfig
from ..web import feeds, sitemaps
from ..web.filters import FirstSeen, UrlRules
from .downloader import Response
from .links import LinkResolver

__all__ = ["Listings"]


class Listings:
    """The listing readers of a worker under ``rules`` (see the module)."""

    def __init__(
        self, settings: WorkerConfig, rules: UrlRules, resolver: LinkResolver, refused: FirstSeen
    ) -> None:
        self.settings, self.rules, self.resolver, self.refused = settings, rules, resolver, refused

    def read(self, result: PageResult, response: Response) -> bool:
        """A body that is no page but lists URLs (a sitemap, a feed, a
        stylesheet's requisites) is read here, into ``result``: whether it was."""
        if result.kind == "sitemap":
            self.read_sitemap(result, response)
        elif self.settings.follow_feeds and feeds.is_feed(response.content_type, response.body):
            self.read_feed(result, response)
        elif self.settings.page_requisites and response.content_type == "text/css":
            self.read_stylesheet(result, response)
        else:
            return False
        return True

    def read_stylesheet(self, result: PageResult, response: Response) -> None:
        """--page-requisites: what a stylesheet needs (its imports, fonts and
        images, resolved against its own URL) are its embeds."""
        if not 200 <= response.status < 300:
            return
        try:
            found = requisites.stylesheet_urls(response.body, response.charset)
        except Exception as exc:  # tinycss2 takes any bytes; a bug is this page's error
            result.error, result.error_kind = f"stylesheet: {type(exc).__name__}: {exc}", "css"
            return
        self.add_embeds(result, found, response.url)

    def add_embeds(self, result: PageResult, found: list[tuple[str, str]], base: str) -> None:
        """The distinct requisites a document named: counted by kind, and
        those the rules allow as embeds (``allowed``) in
        ``result.embeds``; a refusal goes with ``result`` (once)."""
        kinds: dict[str, str] = {}
        for href, how in found:
            url = self.resolver.canonical(href, base)
            if url is not None and url not in kinds and url != result.url:
                kinds[url] = how
        counts: dict[str, int] = {}
        for url, how in kinds.items():
            counts[how] = counts.get(how, 0) + 1
            if self.allowed(result, url, embed=True):
                result.embeds.append(url)
        result.embeds_found, result.embed_kinds = len(kinds), counts

    def allowed(
        self, result: PageResult, url: str, sitemap: bool = False, embed: bool = False
    ) -> bool:
        """The rules allow ``url`` (a ``sitemap``'s? an ``embed``?); if not,
        its refusal goes with ``result`` (once)."""
        rule = self.rules.refusal(url, sitemap, embed)
        if rule is not None and self.refused.first(url):
            result.dropped.append((url, rule))
        return rule is None

    def canonical(self, href: str | None, response: Response, base: str) -> str | None:
        """The page's rel=canonical (its own, else its Link header's), canonical."""
        href = href or canonical_from_link_header(response.headers.get("link"))
        return None if href is None else self.resolver.canonical(href, base)

    def read_sitemap(self, result: PageResult, response: Response) -> None:
        """Add what a sitemap lists to ``result``: its pages (resolved and in
        scope) with their priorities and lastmods, and its child sitemaps."""
        if not 200 <= response.status < 300:
            return
        try:
            sitemap = sitemaps.parse(response.body)
        except sitemaps.SitemapError as exc:
            result.error, result.error_kind = f"sitemap: {exc}", "sitemap"
            return
        found = self.listed_pages(result, response.url, sitemap.pages)
        for loc in sitemap.sitemaps:
            url = self.resolver.canonical(loc, response.url)
            if url is not None and self.allowed(result, url, True) and url not in result.sitemaps:
                result.sitemaps.append(url)
        result.links = len(sitemap.pages) + len(sitemap.sitemaps)
        result.item = {"sitemap_urls": len(found), "sitemap_children": len(result.sitemaps)}
        if sitemap.dropped:
            result.item["sitemap_dropped"] = sitemap.dropped

    def listed_pages(
        self, result: PageResult, base: str, entries: Iterable[tuple[str, int, str | None]]
    ) -> dict[str, int]:
        """The pages a sitemap or a feed lists, as (URL, priority, lastmod):
        each resolved against ``base`` and allowed by the rules, once, into
        ``result``'s outlinks with its lastmod; {url: priority}."""
        found: dict[str, int] = {}
        for loc, priority, lastmod in entries:
            url = self.resolver.canonical(loc, base)
            if url is not None and self.allowed(result, url) and url not in found:
                found[url] = priority
                if lastmod:
                    result.lastmods[url] = lastmod[:64]
        result.outlinks = list(found.items())
        return found

    def read_feed(self, result: PageResult, response: Response) -> None:
        """--follow-feeds: add what a feed lists to ``result``: its entries'
        links (resolved and in scope), each with its date as ``lastmod``."""
        if not 200 <= response.status < 300:
            return
        try:
            feed = feeds.parse(response.body, response.url)
        except feeds.FeedError as exc:
            result.error, result.error_kind = f"feed: {exc}", "feed"
            return
        except Exception as exc:  # feedparser on bytes it did not expect: this feed's error
            result.error, result.error_kind = f"feed: {type(exc).__name__}: {exc}", "feed"
            return
        found = self.listed_pages(result, response.url, ((u, 0, d) for u, d in feed.entries))
        result.links = len(feed.entries)
        result.item = {"feed": feed.kind, "feed_entries": len(found)}
        if feed.dropped:
            result.item["feed_dropped"] = feed.dropped
