"""The options of ``crawl --help``'s "requests" section.

How pages are fetched: agent, timeouts, retries, TLS, headers, proxy. A
group of :class:`mpcrawler.settings.Settings` (``settings.requests``),
frozen: the fields of one section of the option table, each written once
with ``option()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import DEFAULT_USER_AGENT, MIB, option

__all__ = ["RequestOptions"]


@dataclass(frozen=True)
class RequestOptions:
    """Options: how pages are fetched: agent, timeouts, retries, TLS, headers, proxy."""

    user_agent: str = option(DEFAULT_USER_AGENT, help="default: %(default)s", group="requests")
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
    ca_bundle: str | None = option(
        None, metavar="FILE", help="also trust the CA certificates in FILE", group="requests"
    )
    insecure: bool = option(False, help="do not verify TLS certificates", group="requests")
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
