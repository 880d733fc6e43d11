"""The options of ``crawl --help``'s "watch" section.

Watching a running crawl: metrics and the web page. A group of
:class:`mpcrawler.settings.Settings` (``settings.watch``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import option

__all__ = ["WatchOptions"]


@dataclass(frozen=True)
class WatchOptions:
    """Options: watching a running crawl: metrics and the web page."""

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
