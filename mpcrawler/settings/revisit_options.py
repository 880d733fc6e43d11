"""The options of ``crawl --help``'s "revisits" section.

Crawling again: when a page is due. A group of
:class:`mpcrawler.settings.Settings` (``settings.revisits``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import option

__all__ = ["RevisitOptions"]


@dataclass(frozen=True)
class RevisitOptions:
    """Options: crawling again: when a page is due."""

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
