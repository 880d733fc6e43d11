"""The options of ``crawl --help``'s "limits" section.

How much to crawl: pages, depth, time, bytes. A group of
:class:`mpcrawler.settings.Settings` (``settings.limits``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import option

__all__ = ["LimitOptions"]


@dataclass(frozen=True)
class LimitOptions:
    """Options: how much to crawl: pages, depth, time, bytes."""

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
    max_pages_per_host: int | None = option(
        None,
        minimum=1,
        help="URLs queued per host at most (default: none; 10000 with --scope any)",
        group="limits",
    )
