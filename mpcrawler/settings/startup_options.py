"""The options of ``crawl --help``'s "startup" section.

Running the crawl: processes, the job dir, the log. A group of
:class:`mpcrawler.settings.Settings` (``settings.startup``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .options import option

__all__ = ["StartupOptions"]


@dataclass(frozen=True)
class StartupOptions:
    """Options: running the crawl: processes, the job dir, the log."""

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
    job_dir: str | None = option(
        None,
        help="directory for the frontier, seen set, output and stats (default: a temporary "
        "directory, removed at the end)",
        group="startup",
    )
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
    log_file: str | None = option(None, help="write the full log here", group="startup")
    repair: bool = option(
        False,
        help="go on from a damaged job dir with what can be trusted, and say what was lost",
        group="startup",
    )
    max_active_hosts: int = option(
        1000,
        minimum=1,
        help="idle hosts kept in memory; the others wait on disk with their robots.txt and "
        "pacing (default %(default)s)",
        group="startup",
    )
