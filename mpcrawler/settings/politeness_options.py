"""The options of ``crawl --help``'s "politeness" section.

Politeness: robots.txt, concurrency and delay a host. A group of
:class:`mpcrawler.settings.Settings` (``settings.politeness``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import POLITENESS_KEYS, option

__all__ = ["PolitenessOptions"]


@dataclass(frozen=True)
class PolitenessOptions:
    """Options: politeness: robots.txt, concurrency and delay a host."""

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
    politeness_key: str = option(
        "host",
        choices=POLITENESS_KEYS,
        help="what shares one delay and concurrency budget: the host name (any scheme or "
        "port), its registered domain, or its IP address (default %(default)s)",
        group="politeness",
    )
