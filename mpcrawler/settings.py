"""Every option of a crawl, as one plain dataclass, and the option table.

Each command-line option is written once, as a field of ``Settings`` made
with ``option()``: its name, type (the annotation), default, bounds and help.
The CLI builds its parser from that table (``OPTIONS``) and a Settings from
the parsed arguments; ``validate()`` checks the bounds for the CLI and the
Python API alike; ``--help`` lists the limits from it.  Workers receive the
settings as a dict (``to_dict``), and the job directory stores them as JSON
so that a resumed crawl can check it runs with the same scope.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .__version__ import __version__
from .web.redact import redact_url

__all__ = [
    "BROAD_CRAWL_DEFAULTS",
    "DEFAULT_USER_AGENT",
    "OPTIONS",
    "SCOPES",
    "UPPER_BOUNDS",
    "Option",
    "Settings",
    "flag_of",
    "option",
    "setting_value",
]

DEFAULT_USER_AGENT = f"mpcrawler/{__version__} (+https://pypi.org/project/mpcrawler/)"
MIB = 1 << 20


SCOPES = ("hosts", "domains", "any")
POLITENESS_KEYS = ("host", "domain", "ip")
HTML_TYPES = ("text/html", "application/xhtml+xml")
PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")
RENDER_MODES = ("never", "auto", "always")
# The browser's resource types (Playwright's request.resource_type) that --render-block takes.
RENDER_BLOCKABLE = ("image", "font", "media", "stylesheet", "script", "xhr", "fetch", "other")
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MAX_SLOTS = 4096  # workers x threads
EMBED_HOPS_LIMIT = 8  # --max-embed-hops at most (the embed band of priorities in the frontier)


def comma_list(*texts: str) -> list[str]:
    """The comma-separated items of ``texts``, stripped, lower-case, none empty."""
    return [item.strip().lower() for text in texts for item in text.split(",") if item.strip()]


def check_redis_url(url: str) -> None:
    """ValueError (one line, the password hidden) unless ``url`` is a
    redis://, rediss:// or unix:// URL whose database, if given, is a number."""
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"--redis {redact_url(url)}: not a redis:// URL")
    if url.startswith("unix://"):
        return
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise ValueError(f"--redis {redact_url(url)}: {exc}") from None
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ValueError(f"--redis {redact_url(url)}: the database must be a number, not {db!r}")


# With --scope any: a per-host budget (URLs queued per host, seeds included)
# and a depth limit (wget's default for -r).
BROAD_CRAWL_DEFAULTS: dict[str, int] = {
    "max_pages_per_host": 10_000,
    "max_depth": 5,
}


@dataclass(frozen=True)
class Option:
    """How a setting is given on the command line and what values it takes:
    the table every option is written in once (``option()``); argparse, the
    checks, ``--help`` and its limits all come from it."""

    help: str = ""
    flag: str | None = None  # default: --name-with-dashes
    metavar: str | None = None
    minimum: float | None = None  # the least value allowed
    above: float | None = None  # values must be more than this
    maximum: float | None = None  # the most a real machine can honour
    choices: tuple[str, ...] | None = None
    size: bool = False  # bytes, with K, M or G
    duration: bool = False  # seconds, with s, m, h or d
    group: str = ""  # its section of crawl --help: one of cli.parser.GROUPS


def option(default: Any = dataclasses.MISSING, **how: Any) -> Any:
    """A field of Settings given by a command-line option (see Option);
    ``default_factory`` as for ``dataclasses.field``."""
    factory = how.pop("default_factory", dataclasses.MISSING)
    return field(default=default, default_factory=factory, metadata={"option": Option(**how)})


@dataclass
class Settings:
    """Every setting of a crawl.  A field made with ``option()`` is a
    command-line option; the others come from the seeds (priorities,
    credentials) or are for the Python API and tests."""

    seeds: list[str] = field(default_factory=list)
    workers: int = option(
        default_factory=lambda: min(os.cpu_count() or 1, 256),
        minimum=1,
        maximum=256,
        help="worker processes (default: the CPU count, %(default)s here)",
        group="startup",
    )
    threads: int = option(
        4,
        minimum=1,
        maximum=256,
        help="download slots per worker (default %(default)s)",
        group="startup",
    )
    out: list[str] = option(
        default_factory=list,
        metavar="SINK",
        help="where the records go (repeatable): PATH.jsonl (or any other path: JSON "
        "Lines, appended to; the job's journal), PATH.jsonl.gz or PATH.jsonl.zst, "
        "PATH.parquet or parquet:DIR (a Parquet dataset, pip install "
        "'mpcrawler[parquet]'), postgresql://USER@HOST/DB?table=pages (pip install "
        "'mpcrawler[postgres]'); default: pages.jsonl in the job dir, or ./pages.jsonl",
        group="outputs",
    )
    upload: str | None = option(
        None,
        metavar="s3://BUCKET/PREFIX",
        help="upload the Parquet parts, WARC files, WACZ and the other outputs to this S3 "
        "prefix as each is complete, then a manifest.json (pip install 'mpcrawler[s3]')",
        group="outputs",
    )
    s3_endpoint_url: str | None = option(
        None,
        metavar="URL",
        help="--upload to this S3-compatible store (MinIO, Ceph...) instead of AWS",
        group="outputs",
    )
    sink_batch: int = option(
        10_000,
        minimum=1,
        metavar="N",
        help="a Parquet part, and a PostgreSQL transaction at most, every N records "
        "(default %(default)s; and at every checkpoint for PostgreSQL, at the end for both)",
        group="outputs",
    )
    job_dir: str | None = option(
        None,
        help="directory for the frontier, seen set, output and stats (default: a temporary "
        "directory, removed at the end)",
        group="startup",
    )
    max_pages: int | None = option(
        None, minimum=1, help="stop after this many records", group="limits"
    )
    max_depth: int | None = option(None, minimum=0, help="seeds are depth 0", group="limits")
    max_duration: float | None = option(
        None,
        above=0,
        duration=True,
        metavar="DURATION",
        help="end this run gracefully after this long (90s, 30m, 2h, 1d): in-flight requests "
        "finish, the job is saved, exit 3; the same command goes on with a new budget",
        group="limits",
    )
    retry_failed: bool = option(
        False,
        help="a finished job: fetch again every page that failed for want of an answer "
        "(connection, DNS, timeout, robots.txt unreachable) or with a 5xx or 429; with "
        "--job-dir, not --redis",
        group="limits",
    )
    on_finish: str | None = option(
        None,
        metavar="CMD",
        help="run CMD with /bin/sh once a run has ended and its outputs are closed, with "
        "MPCRAWLER_EXIT_STATUS, MPCRAWLER_OUTCOME, MPCRAWLER_JOB_DIR, MPCRAWLER_OUT, "
        "MPCRAWLER_PAGES and MPCRAWLER_ERRORS in its environment; its failure is reported and "
        "leaves the crawl's exit status as it was",
        group="outputs",
    )
    max_total_bytes: int | None = option(
        None,
        minimum=1,
        size=True,
        metavar="BYTES",
        help="end this run gracefully once the bodies it downloaded add up to this (600KB, "
        "500MB, 5GB): as --max-duration; not a page's cap (that is --max-bytes)",
        group="limits",
    )
    depth_priority: int = option(
        0,
        metavar="N",
        help="subtract N x depth from each URL's priority: N > 0 crawls breadth-first, "
        "N < 0 depth-first (default 0: first in, first out)",
        group="limits",
    )
    seed_priorities: dict[str, int] = field(default_factory=dict)
    allow_domains: list[str] = option(
        default_factory=list,
        flag="--allow-domain",
        metavar="D",
        help="also crawl domain D and its subdomains (repeatable)",
        group="filters",
    )
    user_agent: str = option(DEFAULT_USER_AGENT, help="default: %(default)s", group="requests")
    quiet: bool = option(False, help="no progress bar", group="startup")
    cache_size: int = option(
        10_000,
        minimum=1,
        help="URLs the frontier keeps in memory (default %(default)s)",
        group="startup",
    )
    downloader: str = option(
        "mpcrawler.worker.http:HttpDownloader",
        metavar="NAME",
        help="http (requests and urllib3, the default), curl (libcurl, a worker's slots "
        "driven from one thread: the least CPU a page; pip install 'mpcrawler[curl]'), or a "
        "plug-in as pkg.mod:Class",
        group="startup",
    )
    analyzer: str = option(
        "bs4",
        metavar="NAME",
        help="bs4 (BeautifulSoup, the default), lxml (the same links, faster), or a plug-in "
        "as pkg.mod:Class",
        group="startup",
    )
    pipelines: list[str] = option(
        default_factory=list,
        flag="--pipeline",
        metavar="PKG.MOD:CLASS",
        help="a pipeline run on every record before the output (repeatable)",
        group="startup",
    )
    robots: bool = option(True, flag="--no-robots", help="ignore robots.txt", group="politeness")
    host_concurrency: int = option(
        8,
        minimum=1,
        maximum=1024,
        help="requests in flight per host (default %(default)s)",
        group="politeness",
    )
    delay: float = option(
        0.0,
        minimum=0,
        maximum=3600,
        help="seconds between the starts of two requests to one host (default %(default)s)",
        group="politeness",
    )
    max_redirects: int = option(
        5,
        minimum=0,
        maximum=100,
        help="redirects followed in one chain (default %(default)s)",
        group="requests",
    )
    timeout: float = option(
        30.0,
        above=0,
        maximum=3600,
        help="seconds for connect and for each read (default %(default)s)",
        group="requests",
    )
    retries: int = option(
        2, minimum=0, help="retries of a transient failure (default %(default)s)", group="requests"
    )
    retry_delay: float = option(
        1.0,
        minimum=0,
        maximum=3600,
        help="first retry backoff in seconds, doubled each time (default %(default)s)",
        group="requests",
    )
    max_retry_after: float = option(
        60.0,
        minimum=0,
        maximum=86400,
        help="cap on a server's Retry-After, in seconds (default %(default)s)",
        group="requests",
    )
    max_bytes: int = option(
        10 * MIB,
        minimum=1,
        size=True,
        metavar="BYTES",
        help="cap on one decoded body, a page's (not the crawl's); K, M, G suffixes (default 10M)",
        group="requests",
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
    warc_dir: str | None = option(
        None,
        flag="--warc",
        metavar="DIR",
        help="archive every fetch in WARC/1.1 files in DIR (each worker writes its own)",
        group="archive",
    )
    warc_size: int = option(
        1024 * MIB,
        minimum=1,
        size=True,
        metavar="BYTES",
        help="start a new WARC file past this size; K, M, G suffixes (default 1G)",
        group="archive",
    )
    page_requisites: bool = option(
        False,
        flag="--page-requisites",
        help="also fetch what each page needs to render (images, stylesheets, scripts, fonts, "
        "media, frames) from any host, as embeds: not counted by --max-pages (wget -p)",
        group="archive",
    )
    max_embed_hops: int = option(
        3,
        minimum=1,
        maximum=EMBED_HOPS_LIMIT,
        help="--page-requisites: embeds of embeds followed this many hops from their page "
        "(a stylesheet's fonts are 2; default %(default)s)",
        group="archive",
    )
    max_embeds: int | None = option(
        None,
        minimum=1,
        help="--page-requisites: embeds queued at most (default: none)",
        group="archive",
    )
    filter_embeds: bool = option(
        False,
        help="--page-requisites: --accept-regex, --reject-ext and --accept-type apply to embeds "
        "too (by default they apply to pages only)",
        group="archive",
    )
    cdxj: bool = option(
        False,
        help="--warc: keep DIR/index.cdxj, a sorted CDXJ index of the WARC files (as "
        "cdxj-indexer writes it), written at each checkpoint and at the end",
        group="archive",
    )
    wacz: str | None = option(
        None,
        metavar="FILE",
        help="--warc: at the end, package the WARC files, their index and the pages as a "
        "WACZ file (implies --cdxj)",
        group="archive",
    )
    max_url_length: int = option(
        2048,
        minimum=1,
        maximum=1 << 16,
        help="longer URLs are dropped (default %(default)s)",
        group="filters",
    )
    max_pages_per_host: int | None = option(
        None,
        minimum=1,
        help="URLs queued per host at most (default: none; 10000 with --scope any)",
        group="limits",
    )
    grace: float = option(
        10.0,
        minimum=0,
        maximum=3600,
        help="on SIGINT/SIGTERM, seconds to let in-flight requests finish (default %(default)s)",
        group="startup",
    )
    hang_timeout: float | None = option(
        None,
        above=0,
        maximum=86400,
        help="kill a worker that holds one request this long (default: 4 x timeout + 10 s, "
        "plus (threads + 1) x --pdf-timeout with --extract, and the render times with --render)",
        group="startup",
    )
    revisit_after: float | None = option(
        None,
        minimum=0,
        duration=True,
        metavar="DURATION",
        help="fetch again, with conditional requests, every page recorded longer ago than "
        "this (0, 30s, 10m, 6h, 1d); may change on any rerun",
        group="revisits",
    )
    continuous: bool = option(
        False,
        help="never finish: revisit each page when it is due, its interval adapting between "
        "--revisit-min and --revisit-max",
        group="revisits",
    )
    revisit_min: float = option(
        3600.0,
        above=0,
        duration=True,
        metavar="DURATION",
        help="--continuous: the shortest interval of a page (default 1h)",
        group="revisits",
    )
    revisit_max: float = option(
        30 * 86400.0,
        above=0,
        duration=True,
        metavar="DURATION",
        help="--continuous: the longest interval of a page (default 30d)",
        group="revisits",
    )
    log_file: str | None = option(None, help="write the full log here", group="startup")
    repair: bool = option(
        False,
        help="go on from a damaged job dir with what can be trusted, and say what was lost",
        group="startup",
    )
    checkpoint_interval: float = 2.0
    robots_retry_delay: float = option(
        30.0,
        minimum=0,
        maximum=86400,
        help="wait before refetching a robots.txt that failed, doubled each time; the host "
        "is given up after 3 failures (default %(default)s)",
        group="politeness",
    )
    robots_ttl: float = option(
        86400.0,
        above=0,
        duration=True,
        metavar="DURATION",
        help="fetch a host's robots.txt again once its copy is older than this, before the "
        "host's next request (RFC 9309 2.4; default 1d)",
        group="politeness",
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
    ca_bundle: str | None = option(
        None, metavar="FILE", help="also trust the CA certificates in FILE", group="requests"
    )
    insecure: bool = option(False, help="do not verify TLS certificates", group="requests")
    max_active_hosts: int = option(
        1000,
        minimum=1,
        help="idle hosts kept in memory; the others wait on disk with their robots.txt and "
        "pacing (default %(default)s)",
        group="startup",
    )
    record_links: bool = option(
        False,
        help="list each page's links in its record (out-of-scope ones marked), for the link graph",
        group="outputs",
    )
    redis: str | None = option(
        None,
        metavar="URL",
        group="shared",
        help="share the crawl through redis://[:PASSWORD@]HOST:PORT/DB (default with --crawl: "
        "$REDIS_URL, which keeps a password off the command line)",
    )
    crawl: str | None = option(
        None, metavar="NAME", group="shared", help="the shared crawl's name (with --redis)"
    )
    node: str | None = option(
        None, metavar="ID", group="shared", help="this node's id (default: hostname-pid)"
    )
    lease_timeout: float = option(
        30.0,
        above=0,
        maximum=86400,
        group="shared",
        help="a node silent this long is dead: its work goes to the others (default %(default)s s)",
    )
    redis_partitions: int = option(
        1,
        minimum=1,
        maximum=1024,
        group="shared",
        help="split the crawl's Redis keys into this many partitions by host, each in its "
        "own cluster slot, so a Redis Cluster spreads the crawl over its shards; every node "
        "gives the same number (default %(default)s)",
    )
    redis_timeout: float = option(
        300.0,
        above=0,
        maximum=7 * 86400,
        group="shared",
        help="stop (resumable) after Redis is unreachable this long (default %(default)s s)",
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
    dedup: bool = option(
        True,
        flag="--no-dedup",
        group="content",
        help="do not recognise pages by their text: by default a page whose normalized text "
        "(digits folded) another URL had is recorded with duplicate_of and its links are not "
        "followed, and one within a few bits of a page of its host is recorded with "
        "near_duplicate_of",
    )
    skip_near_duplicates: bool = option(
        False,
        group="content",
        help="do not follow the links of a near duplicate either",
    )
    soft_404_probe: bool = option(
        False,
        group="content",
        help="after a host's first page, ask it once for a path that cannot exist: a 200 "
        "with a text is its soft-404 page, and a page with that text is recorded with "
        "soft_404 and its links are not followed (one more request a host; not with "
        "--no-dedup)",
    )
    extract: bool = option(
        False,
        help="record each page's main content: text, markdown, lang and text_digest (HTML, and "
        "PDFs where --accept-type takes application/pdf: their text, pages and title); "
        "with --warc, the text is archived as a conversion record",
        group="content",
    )
    max_text: int = option(
        1 * MIB,
        minimum=1,
        size=True,
        metavar="CHARS",
        help="--extract: a record's text and markdown are cut at this many characters each, "
        "and the record says text_truncated (its text_digest is of the whole text); K, M, G "
        "suffixes (default 1M)",
        group="content",
    )
    pdf_timeout: float = option(
        30.0,
        above=0,
        maximum=3600,
        duration=True,
        metavar="DURATION",
        help="--extract: the longest a PDF may take to read (each in a process of its worker's "
        "own, off its parser); one that takes longer is its page's error (default 30s)",
        group="content",
    )
    render: str = option(
        "never",
        choices=RENDER_MODES,
        group="render",
        help="run pages' JavaScript in headless Chromium (Playwright) before reading them: "
        "never, always (every HTML page), or auto (only pages whose HTML looks like an "
        "application's empty shell); the browser's own requests go through the crawl's "
        "politeness, robots.txt, address rules and WARC (default %(default)s)",
    )
    browser_path: str | None = option(
        None,
        metavar="PATH",
        group="render",
        help="the Chromium or Chrome to render with (default: chromium, chromium-browser, "
        "google-chrome or google-chrome-stable on the PATH)",
    )
    render_block: str = option(
        "image,font,media",
        metavar="TYPES",
        group="render",
        help="the browser's requests not fetched, by resource type (comma-separated: "
        f"{', '.join(RENDER_BLOCKABLE)}; none); with --page-requisites nothing is blocked "
        "(default %(default)s)",
    )
    render_tabs: int = option(
        4,
        minimum=1,
        maximum=64,
        group="render",
        help="pages each worker's browser renders at once, each in a tab (default %(default)s)",
    )
    render_timeout: float = option(
        30.0,
        above=0,
        maximum=3600,
        group="render",
        help="seconds a page may take to render, its requests included; one that takes "
        "longer keeps what its HTML had, with render_error (default %(default)s)",
    )
    render_restart: int = option(
        100,
        minimum=1,
        maximum=1_000_000,
        group="render",
        help="start a new browser after this many renders (default %(default)s)",
    )
    render_memory: int = option(
        2048 * MIB,
        minimum=64 * MIB,
        size=True,
        group="render",
        help="start a new browser when its processes hold more memory than this, in "
        "bytes, with K, M or G (default 2G)",
    )
    politeness_key: str = option(
        "host",
        choices=POLITENESS_KEYS,
        help="what shares one delay and concurrency budget: the host name (any scheme or "
        "port), its registered domain, or its IP address (default %(default)s)",
        group="politeness",
    )
    headers: list[str] = option(
        default_factory=list,
        flag="--header",
        metavar="'NAME: VALUE'",
        group="requests",
        help="send this header with every request (repeatable)",
    )
    cookies: str | None = option(
        None,
        metavar="FILE",
        group="requests",
        help="send the cookies of this Netscape cookies.txt file (as wget --load-cookies)",
    )
    proxy: str | None = option(
        None,
        metavar="URL",
        group="requests",
        help="send every request through this http://, https:// or socks5:// proxy",
    )
    metrics_port: int | None = option(
        None,
        minimum=0,
        maximum=65535,
        metavar="PORT",
        help="serve /metrics (Prometheus) and /status (JSON) on this port while crawling",
        group="watch",
    )
    metrics_bind: str = option(
        "127.0.0.1",
        metavar="ADDRESS",
        help="--metrics-port's address (default %(default)s)",
        group="watch",
    )
    web_port: int | None = option(
        None,
        minimum=0,
        maximum=65535,
        metavar="PORT",
        help="serve the crawl's web page (as mpcrawler web) on this port while crawling "
        "(pip install 'mpcrawler[web]')",
        group="watch",
    )
    web_bind: str = option(
        "127.0.0.1",
        metavar="ADDRESS",
        help="--web-port's address (default %(default)s; any other needs --web-token-file)",
        group="watch",
    )
    web_token_file: str | None = option(
        None,
        metavar="FILE",
        help="--web-port: every request must carry the token this file holds (a header)",
        group="watch",
    )
    # host (scheme://host[:port]) -> [user, password], sent as its Basic
    # Authorization header: from the seeds' own user:password@ and --http-user.
    # A secret: to_dict() writes the password as *** (only the workers get it).
    credentials: dict[str, list[str]] = field(default_factory=dict)

    def apply_scope_defaults(self) -> None:
        """The trap guards a crawl that follows links anywhere needs, where
        the user set none: BROAD_CRAWL_DEFAULTS."""
        if self.scope == "any":
            for name, value in BROAD_CRAWL_DEFAULTS.items():
                if getattr(self, name) is None:
                    setattr(self, name, value)

    def effective_reject_ext(self) -> list[str]:
        """The extensions --reject-ext skips: its own, else the default list
        less the extensions of the types --accept-type asks for (none with
        --warc or --accept-type '*': an archive, or a crawl of every type,
        wants everything)."""
        if self.reject_ext is None:
            if self.warc_dir:
                return []
            from .web.filters import DEFAULT_REJECT_EXT

            accepted = self.accepted_types()
            if accepted is None:  # --accept-type '*': every type asked for, no extension skipped
                return []
            return sorted(  # an extension of a type asked for (--accept-type) is not skipped
                e for e in DEFAULT_REJECT_EXT if _type_of(e) not in accepted
            )
        return [e.lstrip(".") for e in comma_list(self.reject_ext)]

    def accepted_types(self) -> frozenset[str] | None:
        """The content types whose bodies are read (None: every type);
        with --follow-feeds, feeds' too (and the XML and JSON types a feed
        may be served as)."""
        if self.accept_type is None:
            types = None if self.warc_dir else frozenset(HTML_TYPES)
        else:
            types = frozenset(comma_list(self.accept_type))
            types = None if "*" in types or "*/*" in types else types
        if types is not None and self.follow_feeds:
            from .web.feeds import FEED_TYPES, SNIFF_TYPES

            types |= FEED_TYPES | SNIFF_TYPES
        return types

    def strip_patterns(self) -> list[str]:
        """--strip-query's parameter name globs, lower-case."""
        return comma_list(*self.strip_query)

    def header_pairs(self) -> list[tuple[str, str]]:
        """--header values as (name, value)."""
        pairs = []
        for text in self.headers:
            name, _, value = text.partition(":")
            pairs.append((name.strip(), value.strip()))
        return pairs

    def __post_init__(self) -> None:
        if isinstance(self.out, (str, os.PathLike)):  # one sink, as --out once was
            self.out = [os.fspath(self.out)]

    def output_path(self) -> Path | None:
        """The records file, the job's journal: the ``--out`` that is a plain
        ``.jsonl`` file, else pages.jsonl in the job dir, else ./pages.jsonl
        when no other sink is given (None: then the temporary job dir's)."""
        from .output.sinks import journal_of

        if (journal := journal_of(self.out)) is not None:
            return Path(journal)
        if self.job_dir:
            return Path(self.job_dir) / "pages.jsonl"
        return None if self.out else Path("pages.jsonl")

    def to_dict(self, secrets: bool = False) -> dict[str, Any]:
        """The settings as plain data, as job.json keeps them: no secret
        (the Redis URL's and the hosts' passwords are ``***``) unless
        ``secrets`` (for the workers, over their pipes, never to a file)."""
        data = dataclasses.asdict(self)
        if not secrets:
            data.update((name, self.public(name)) for name in SECRET_FIELDS)
        return data

    def public(self, name: str) -> Any:
        """The setting ``name`` as ``to_dict`` writes it: its secrets ``***``."""
        value = getattr(self, name)
        if name in ("redis", "proxy"):
            return redact_url(value) if value else value
        if name == "credentials":
            return {host: [user, "***"] for host, (user, _) in value.items()}
        if name == "headers":
            return [
                f"{header}: ***" if header.lower() in SECRET_HEADERS else f"{header}: {text}"
                for header, text in self.header_pairs()
            ]
        if name == "out":
            return [redact_url(spec) for spec in value]
        return value

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def validate(self) -> None:
        """Raise ValueError with one clear line for an impossible setting."""
        for name, how in OPTIONS.items():
            if (problem := out_of_bounds(how, getattr(self, name))) is not None:
                raise ValueError(f"{flag_of(name)} {problem}")
        if self.revisit_min > self.revisit_max:
            raise ValueError("--revisit-min must not be more than --revisit-max")
        if self.workers * self.threads > MAX_SLOTS:
            raise ValueError(f"--workers x --threads must be at most {MAX_SLOTS}")
        if self.scope not in SCOPES:
            raise ValueError(f"--scope must be one of {', '.join(SCOPES)}")
        if (self.cdxj or self.wacz) and not self.warc_dir:
            raise ValueError(f"{'--wacz' if self.wacz else '--cdxj'} needs --warc DIR")
        if self.follow_feeds:
            import importlib.util

            if importlib.util.find_spec("feedparser") is None:
                raise ValueError(
                    "--follow-feeds: the feedparser package is not installed "
                    "(pip install 'mpcrawler[feeds]')"
                )
        if (self.redis is None) != (self.crawl is None):
            raise ValueError("--redis and --crawl go together: --redis URL --crawl NAME")
        if self.redis is not None:
            check_redis_url(self.redis)
        if self.upload and not self.job_dir:
            raise ValueError("--upload needs --job-dir DIR (it keeps there what went up)")
        if self.retry_failed and (self.redis is not None or not self.job_dir):
            raise ValueError("--retry-failed takes a local job: --job-dir DIR, without --redis")
        if self.crawl is not None and not re.fullmatch(r"[\w.-]{1,100}", self.crawl):
            raise ValueError("--crawl must be 1-100 letters, digits, '.', '_' or '-'")
        self._validate_filters()
        self._validate_requests()
        self._validate_render()
        from .output.sinks import check_outputs

        check_outputs(self.out, self.upload)  # ValueError: a sink unknown, or its extra missing
        if self.ca_bundle is not None and not os.path.isfile(self.ca_bundle):
            raise ValueError(f"--ca-bundle {self.ca_bundle}: no such file")
        if self.ca_bundle is not None:
            try:
                ssl.create_default_context().load_verify_locations(cafile=self.ca_bundle)
            except (ssl.SSLError, ValueError) as exc:
                reason = getattr(exc, "reason", None) or exc
                raise ValueError(
                    f"--ca-bundle {self.ca_bundle}: no PEM certificates in it ({reason})"
                ) from None

    def _validate_filters(self) -> None:
        from .web.patterns import PatternSet

        for name in ("accept_regex", "reject_regex"):
            PatternSet(getattr(self, name), flag_of(name))  # ValueError: RE2 cannot take one
        if self.politeness_key not in POLITENESS_KEYS:
            raise ValueError(f"--politeness-key must be one of {', '.join(POLITENESS_KEYS)}")
        for kind in comma_list(self.accept_type or ""):
            if kind != "*" and not re.fullmatch(r"[\w.+-]+/[\w.+*-]+", kind):
                raise ValueError(f"--accept-type {kind!r}: not a content type like text/html")

    def _validate_render(self) -> None:
        for kind in self.render_blocked():
            if kind not in RENDER_BLOCKABLE:
                raise ValueError(
                    f"--render-block {kind!r}: not one of {', '.join(RENDER_BLOCKABLE)} (or none)"
                )
        if self.render == "never":
            return
        import importlib.util

        if importlib.util.find_spec("playwright") is None:
            raise ValueError(
                f"--render {self.render}: the playwright package is not installed "
                "(pip install 'mpcrawler[render]', and Chromium: apt-get install chromium)"
            )
        self.browser()  # ValueError if there is none

    def render_blocked(self) -> frozenset[str]:
        """The resource types the browser does not fetch (--render-block)."""
        kinds = frozenset(comma_list(self.render_block)) - {"none"}
        return frozenset() if self.page_requisites else kinds

    def browser(self) -> str:
        """The browser's executable: --browser-path, else the first Chromium
        on the PATH.  ValueError (one line, how to get one) if there is none."""
        import shutil

        if self.browser_path is not None:
            if not (os.path.isfile(self.browser_path) and os.access(self.browser_path, os.X_OK)):
                raise ValueError(f"--browser-path {self.browser_path}: not an executable file")
            return self.browser_path
        for name in BROWSERS:
            found = shutil.which(name)
            if found is not None:
                return found
        raise ValueError(
            f"--render {self.render}: no Chromium found on the PATH (apt-get install chromium, "
            "or give one with --browser-path)"
        )

    def _validate_requests(self) -> None:
        for text in self.headers:
            name, colon, _ = text.partition(":")
            if not colon or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name.strip()):
                raise ValueError(f"--header {text!r}: not 'Name: value'")
            if "\r" in text or "\n" in text:
                raise ValueError("--header: a header may not hold a line break")
            try:
                text.encode("latin-1")
            except UnicodeEncodeError:
                raise ValueError(
                    f"--header {name.strip()!r}: its value is not Latin-1 (HTTP sends header "
                    "values as bytes: percent-encode or RFC 2047-encode it)"
                ) from None
        if self.cookies is not None:
            from .web.cookies import read_cookies_file

            read_cookies_file(self.cookies)  # ValueError if it cannot be read
        if self.proxy is not None:
            scheme, sep, _ = self.proxy.partition("://")
            if not sep or scheme.lower() not in PROXY_SCHEMES or not _proxy_host(self.proxy):
                raise ValueError(
                    f"--proxy {redact_url(self.proxy)}: not a proxy URL "
                    "(http://, https://, socks5:// or socks5h://HOST:PORT)"
                )
            if scheme.lower().startswith("socks"):
                try:
                    import socks  # noqa: F401 - PySocks, requests[socks]
                except ImportError:
                    raise ValueError(
                        "--proxy socks5://: PySocks is not installed "
                        "(pip install 'requests[socks]')"
                    ) from None


def _proxy_host(url: str) -> bool:
    """``url`` names a host (and, if any, a port from 1 to 65535) as
    urllib3 parses a proxy URL."""
    import urllib3.util

    try:
        parsed = urllib3.util.parse_url(url)
    except (ValueError, urllib3.exceptions.LocationParseError):
        return False
    return bool(parsed.host) and (parsed.port is None or 0 < parsed.port < 65536)


# Headers whose values are secrets: job.json, --print-config and the log show ***.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key"})
# The settings that may hold a secret: ``Settings.public`` writes them without it.
SECRET_FIELDS = ("redis", "proxy", "credentials", "headers", "out")

# The option table: each command-line option's field name and how it is given.
OPTIONS: dict[str, Option] = {
    f.name: f.metadata["option"] for f in dataclasses.fields(Settings) if "option" in f.metadata
}
# The most of each that a real machine can honour (checked before anything is
# written): processes and threads to fork, and times a person means.
UPPER_BOUNDS: dict[str, float] = {
    name: how.maximum for name, how in OPTIONS.items() if how.maximum is not None
}


def _number_kinds() -> dict[str, type]:
    """int or float: the number each numeric option takes (by its annotation)."""
    import typing

    hints = typing.get_type_hints(Settings)
    kinds: dict[str, type] = {}
    for name in OPTIONS:
        kind = hints[name]
        if kind is not bool:
            found = next((k for k in (int, float) if kind is k or k in typing.get_args(kind)), None)
            if found is not None:
                kinds[name] = found
    return kinds


NUMBER_KINDS = _number_kinds()


def setting_value(name: str, value: Any) -> int | float:
    """``value`` (text, or a number read from JSON) for the numeric setting
    ``name``, as the command line takes it: its type and its bounds in the
    option table (``control set``, and a resume's overrides).  ValueError
    with one line (the value too big or not a number says so)."""
    kind = NUMBER_KINDS[name]
    what = "an integer" if kind is int else "a number"
    number: Any = value
    if isinstance(value, str):
        try:
            number = kind(value.strip())
        except ValueError:
            raise ValueError(f"{value[:40]!r} is not {what}") from None
    elif isinstance(value, bool) or not isinstance(value, int if kind is int else (int, float)):
        raise ValueError(f"{str(value)[:40]!r} is not {what}")
    if (problem := out_of_bounds(OPTIONS[name], number)) is not None:
        raise ValueError(problem)
    return kind(number)


def flag_of(name: str) -> str:
    """The command-line flag of the setting ``name``."""
    return OPTIONS[name].flag or "--" + name.replace("_", "-")


def out_of_bounds(how: Option, value: Any) -> str | None:
    """Why ``value`` is not allowed for the option ``how`` (None: it is)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        if how.choices is not None and value not in how.choices:
            return f"must be one of {', '.join(how.choices)}"
        return None
    if how.minimum is not None and not value >= how.minimum:  # NaN is not
        return "must be at least 1" if how.minimum == 1 else "must not be negative"
    if how.above is not None and not value > how.above:
        return f"must be more than {how.above:g}"
    if how.maximum is not None and not (math.isfinite(value) and value <= how.maximum):
        return f"must be at most {how.maximum:g}"
    return None


def _type_of(extension: str) -> str | None:
    """The content type a file name with ``extension`` usually has."""
    import mimetypes

    return mimetypes.guess_type(f"x.{extension}", strict=False)[0]
