"""The options of ``crawl --help``'s "filters" section.

What to crawl: scope, domains, patterns, types, trap guards. A group of
:class:`mpcrawler.settings.Settings` (``settings.filters``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import SCOPES, option

__all__ = ["FilterOptions"]


@dataclass(frozen=True)
class FilterOptions:
    """Options: what to crawl: scope, domains, patterns, types, trap guards."""

    allow_domains: list[str] = option(
        default_factory=list,
        flag="--allow-domain",
        metavar="D",
        help="also crawl domain D and its subdomains (repeatable)",
        group="filters",
    )
    sitemaps: bool = option(
        True,
        flag="--no-sitemaps",
        help="do not read the sitemaps that robots.txt names",
        group="filters",
    )
    follow_feeds: bool = option(
        False,
        help="fetch the RSS, Atom and JSON feeds pages name (<link rel=alternate>) and queue "
        "their entries, each with its date as lastmod; a feed given as a seed is read as one "
        "(pip install 'mpcrawler[feeds]')",
        group="filters",
    )
    max_url_length: int = option(
        2048,
        minimum=1,
        maximum=1 << 16,
        help="longer URLs are dropped (default %(default)s)",
        group="filters",
    )
    scope: str = option(
        "hosts",
        choices=SCOPES,
        help="follow links to the seeds' hosts (default), their registered domains (Public "
        "Suffix List), or any host",
        group="filters",
    )
    deny_domains: list[str] = option(
        default_factory=list,
        flag="--deny-domain",
        metavar="D",
        help="never crawl domain D or its subdomains (repeatable)",
        group="filters",
    )
    allow_private_networks: bool = option(
        False,
        help="allow loopback, private, link-local and other non-public addresses (by default "
        "only a seed host may be at one)",
        group="filters",
    )
    accept_regex: list[str] = option(
        default_factory=list,
        metavar="RE",
        group="filters",
        help="crawl only URLs this Python regex finds in (repeatable: any of them)",
    )
    reject_regex: list[str] = option(
        default_factory=list,
        metavar="RE",
        group="filters",
        help="never crawl URLs this Python regex finds in (repeatable; wins over --accept-regex)",
    )
    reject_ext: str | None = option(
        None,
        metavar="LIST",
        group="filters",
        help="skip links whose path ends in one of these extensions, comma-separated "
        "(default: archives, images, audio, video, office documents and binaries, less those "
        "of the types --accept-type asks for; none with --warc or --accept-type '*'; '' for "
        "none)",
    )
    accept_type: str | None = option(
        None,
        metavar="LIST",
        group="filters",
        help="read the bodies of these content types only, comma-separated, '*' for all; "
        "others are closed after their headers (default: text/html,application/xhtml+xml; "
        "all with --warc)",
    )
    max_path_repeats: int = option(
        2,
        minimum=1,
        metavar="N",
        group="filters",
        help="refuse a URL whose path repeats a run of segments more than N times one after "
        "another, /a/b/a/b/a/b/ (a crawler trap; default %(default)s, as Heritrix)",
    )
    max_path_segments: int = option(
        20,
        minimum=1,
        metavar="N",
        group="filters",
        help="refuse a URL whose path has more than N segments (a trap that keeps growing; "
        "default %(default)s, as Heritrix)",
    )
    rejected_log: str | None = option(
        None,
        metavar="FILE",
        group="filters",
        help="append one JSON line per URL refused by a rule: the URL, the rule, the page",
    )
    strip_query: list[str] = option(
        default_factory=list,
        metavar="PATTERNS",
        group="filters",
        help="remove query parameters whose names match these globs, comma-separated "
        "(utm_*,gclid,fbclid; repeatable)",
    )
    sort_query: bool = option(False, group="filters", help="sort the query's parameters")
    keep_session_ids: bool = option(
        False,
        group="filters",
        help="keep session ids (jsessionid, phpsessid, aspsessionid*, sid, cfid, cftoken), "
        "which are stripped from URLs by default",
    )
    ignore_nofollow: bool = option(
        False,
        group="filters",
        help="ignore what pages ask of robots (meta robots, X-Robots-Tag, rel=nofollow)",
    )
