"""The options of ``crawl --help``'s "shared" section.

A crawl shared by many machines through Redis. A group of
:class:`mpcrawler.settings.Settings` (``settings.shared``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import option

__all__ = ["SharedOptions"]


@dataclass(frozen=True)
class SharedOptions:
    """Options: a crawl shared by many machines through Redis."""

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
