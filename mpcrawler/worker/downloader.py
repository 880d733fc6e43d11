"""The Downloader contract: one request in, one response (or a DownloadError) out.

Runs in a worker process, one instance per download slot (``for_slots``).
What every downloader shares is here: ``Response`` and ``Exchange`` (what
the worker records and archives), the errors by kind, ``Transfers`` (a
downloader that drives many downloads from one thread: the worker's event
loop, :mod:`.loop`), and the rules every request keeps: its headers, its
credentials, the private-network rule (``connection_guard``) and how many
hosts' connections a worker keeps (``host_pools``).

The built-in downloaders live beside it, each with its client:
:mod:`.http` (``http``, the default, on requests and urllib3) and
:mod:`.curl` (``curl``, on libcurl).  This module imports neither, so a
worker loads only its crawl's (the forkserver preloads it:
``mpcrawler.master.forkserver.preload``).  A path that names ``HttpDownloader``
here, as before (a job dir's ``downloader``), is read as the one in
:mod:`.http` (``modules.MOVED_OBJECTS``).
"""

from __future__ import annotations

import base64
import ipaddress
import resource
from dataclasses import dataclass, field

from ..errors import DownloadError
from ..modules import Module
from ..settings.worker import WorkerConfig
from ..web.addresses import AddressGuard
from ..web.codings import ACCEPT_ENCODING
from ..web.urls import hostname_of

__all__ = [
    "BlockedAddress",
    "BodyTooLarge",
    "BrokenBody",
    "ConnectFailed",
    "DownloadError",
    "Downloader",
    "Exchange",
    "NameNotFound",
    "Response",
    "TimedOut",
    "TlsFailed",
    "Transfers",
    "basic_authorizations",
    "connection_guard",
    "parse_content_type",
    "proxied_refusal",
    "request_headers",
]

HOST_POOLS = 1024  # hosts a worker keeps connections for (Scrapy keeps every host's 240 s)
ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309: parse at least 500 KiB


@dataclass
class Exchange:
    """A fetch as it went over the wire, for the WARC archive: the request as
    sent, the status line and headers as received (names in their case, in
    order, repeats kept), and the body still content-coded.  ``truncated``
    (WARC's reasons: ``length``, ``time``, ``disconnect``) says the body was
    cut short."""

    request: bytes
    status_line: str
    headers: list[tuple[str, str]]
    body: bytes
    truncated: str | None = None


@dataclass
class Response:
    """A downloaded response.  ``headers`` has lower-case names; ``body`` is
    decoded from its content coding.  ``exchange`` is set by a Downloader
    that keeps one (HttpDownloader, when --warc is on)."""

    url: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str = ""
    charset: str | None = None
    elapsed_ms: float = 0.0
    exchange: Exchange | None = None
    digest: str | None = None  # sha1:BASE32 of the body as sent (see web.validators)
    skipped: str | None = None  # why the body was not read (its type is not accepted)


class ConnectFailed(DownloadError):
    """The connection could not be made or was lost: retried."""

    kind = "connection"
    transient = True


class NameNotFound(DownloadError):
    """The host name does not resolve (NXDOMAIN, no address): not retried."""

    kind = "dns"


class TlsFailed(DownloadError):
    """The TLS handshake failed (certificate not trusted, expired, for another
    name...): a retry cannot fix it."""

    kind = "tls"


class BlockedAddress(DownloadError):
    """The connection reached an address the crawl may not use (see addresses)."""

    kind = "blocked_address"


class TimedOut(DownloadError):
    """No byte within the timeout (connect or read): retried."""

    kind = "timeout"
    transient = True


class BodyTooLarge(DownloadError):
    """The decoded body went past its cap (--max-bytes): not retried."""

    kind = "too_large"


class BrokenBody(DownloadError):
    """The body could not be read or decoded (truncated, bad chunking, bad gzip)."""

    kind = "broken_body"
    transient = True


def parse_content_type(value: str) -> tuple[str, str | None]:
    """``text/html; charset=UTF-8`` -> (``text/html``, ``utf-8``)."""
    mime, _, params = value.partition(";")
    charset = None
    for param in params.split(";"):
        name, _, val = param.partition("=")
        if name.strip().lower() == "charset":
            charset = val.strip().strip("\"'").lower() or None
    return mime.strip().lower(), charset


class Downloader(Module):
    """Interface: ``download(url) -> Response``; raises DownloadError.
    ``headers`` (a revisit's conditional request) is passed only when there
    are some, so a plug-in that takes none works for every first fetch."""

    type_letter = "D"

    def __init__(self, settings: WorkerConfig) -> None:
        super().__init__()
        self.settings = settings

    @classmethod
    def for_slots(cls, settings: WorkerConfig, slots: int) -> list[Downloader]:
        """The downloaders of a worker's ``slots`` download slots (one each,
        used by one thread at a time)."""
        return [cls(settings) for _ in range(slots)]

    def download(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        follow_redirects: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Response:
        raise NotImplementedError

    @classmethod
    def transfers(cls, downloaders: list[Downloader]) -> Transfers | None:
        """The slots' downloads driven from one thread, an event loop
        (``downloaders``: one a slot, from ``for_slots``); None: each slot's
        ``download`` runs in a thread of its own (the default)."""
        return None

    def close(self) -> None:
        """Release connections."""


class Transfers:
    """Interface: many downloads at once, from one thread.  ``start`` one in
    a free slot; ``wait`` returns those that ended, each as ``download``
    would have: its Response, or the exception it would have raised."""

    def start(
        self,
        slot: int,
        url: str,
        *,
        max_bytes: int | None = None,
        follow_redirects: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        raise NotImplementedError

    def wait(self, timeout: float, wake: int) -> list[tuple[int, Response | Exception]]:
        """The downloads that ended, by slot, waiting at most ``timeout``
        seconds for one, or until the file descriptor ``wake`` is readable."""
        raise NotImplementedError

    @property
    def active(self) -> int:
        """Downloads started and not yet returned by ``wait``."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop what is still running (the slots' downloaders close apart)."""


def host_pools(slots: int) -> int:
    """Hosts whose connections a worker keeps: HOST_POOLS, fewer if the
    process may open few files (a quarter of its limit), never fewer than
    its slots."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    room = HOST_POOLS if soft == resource.RLIM_INFINITY else min(HOST_POOLS, soft // 4)
    return max(slots, room)


def connection_guard(settings: WorkerConfig) -> AddressGuard:
    """The private-network rule for the connections of a crawl of ``settings``."""
    return AddressGuard(
        (hostname_of(seed) for seed in settings.seeds),
        allow_private=settings.allow_private_networks,
    )


def request_headers(settings: WorkerConfig) -> dict[str, str]:
    """The headers every request of a crawl of ``settings`` sends (--header
    wins, whatever the case of its name)."""
    headers = {
        "User-Agent": settings.user_agent,
        "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8",
        "Accept-Encoding": ACCEPT_ENCODING,  # the codings decoded here
    }
    for name, value in settings.header_pairs():
        for same in [key for key in headers if key.lower() == name.lower()]:
            del headers[same]
        headers[name] = value
    return headers


def basic_authorizations(settings: WorkerConfig) -> dict[str, str]:
    """host -> its Basic Authorization header (--http-user, credentials in a
    seed), as wget --user sends it."""
    return {
        host: "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        for host, (user, password) in settings.credentials.items()
    }


def proxied_refusal(guard: AddressGuard, url: str) -> str | None:
    """Through a proxy, which resolves and connects: the private-network rule
    for a host written as an address (the only one that can be checked)."""
    host = hostname_of(url)
    return guard.refusal(host, host) if _is_address(host) else None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
