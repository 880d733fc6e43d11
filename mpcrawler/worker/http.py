"""HttpDownloader: the default downloader, on requests and urllib3.

One instance per download slot (``for_slots``), each with its own
``requests.Session``; the slots of a worker share one pool of connections,
kept for the HOST_POOLS hosts used last, so a host's next page reuses a
connection whichever slot fetches it (requests keeps pools for 10 hosts a
session: a broad crawl opened 0.85 connections a request).  It never
follows redirects (the master checks every hop like a link) and reads the
body as a stream, counting decoded bytes, so a huge page or a compression
bomb costs at most ``max_bytes`` of memory.  ``timeout`` bounds the
connect and each read; a whole download is cut off after 3 x ``timeout``,
so a server that drips bytes cannot hold a slot.  A page's request skips
requests' session machinery (:mod:`.transport`).  The contract and what it
shares with the other downloaders: :mod:`.downloader`.
"""

from __future__ import annotations

import functools
import os
import socket
import ssl
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable
from typing import Any

import requests
import requests.adapters
import urllib3
import urllib3.connection

from ..settings.worker import WorkerConfig
from ..web.addresses import AddressGuard
from ..web.codings import BoundedDecoder
from ..web.cookies import read_cookies_file
from ..web.redact import redact_url
from ..web.urls import host_key, hostname_of
from ..web.validators import digest_text, new_digest
from . import transport
from .downloader import (
    BlockedAddress,
    BodyTooLarge,
    BrokenBody,
    ConnectFailed,
    Downloader,
    DownloadError,
    Exchange,
    NameNotFound,
    Response,
    TimedOut,
    TlsFailed,
    basic_authorizations,
    connection_guard,
    host_pools,
    parse_content_type,
    proxied_refusal,
    request_headers,
)

__all__ = ["HttpDownloader"]

_CHUNK = 64 * 1024


class _Refused(Exception):
    """Raised inside urllib3 when a new connection's peer is refused.  Not an
    OSError or urllib3 error, so urllib3 neither retries nor wraps it."""


class _GuardedConnection(urllib3.connection.HTTPConnection):
    """An HTTP connection whose peer address the guard checks once connected."""

    guard: AddressGuard

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        try:
            address = str(sock.getpeername()[0])
        except OSError:
            address = ""
        reason = self.guard.refusal(self.host, address)
        if reason is not None:
            sock.close()
            raise _Refused(reason)
        return sock


class _GuardedHttpsConnection(_GuardedConnection, urllib3.connection.HTTPSConnection):
    """The same, over TLS."""

    pass


class _Adapter(requests.adapters.HTTPAdapter):
    """requests' adapter, with every new connection's address checked by
    ``guard`` and TLS verified by ``ssl_context`` (if given); it keeps
    connections for ``pools`` hosts (the least recently used closed first),
    ``per_host`` each (urllib3 is thread-safe: a worker's slots share it)."""

    def __init__(
        self,
        guard: AddressGuard,
        ssl_context: ssl.SSLContext | None,
        pools: int = 10,
        per_host: int = 10,
    ) -> None:
        self.guard, self._ssl_context = guard, ssl_context
        super().__init__(pool_connections=pools, pool_maxsize=per_host)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        if self._ssl_context is not None:
            kwargs["ssl_context"] = self._ssl_context
        super().init_poolmanager(*args, **kwargs)
        classes = {}
        for scheme, pool, conn in (
            ("http", urllib3.HTTPConnectionPool, _GuardedConnection),
            ("https", urllib3.HTTPSConnectionPool, _GuardedHttpsConnection),
        ):
            guarded = type(conn.__name__, (conn,), {"guard": self.guard})
            classes[scheme] = type(pool.__name__, (pool,), {"ConnectionCls": guarded})
        self.poolmanager.pool_classes_by_scheme = classes


def _connections(settings: WorkerConfig, pools: int, per_host: int) -> _Adapter:
    """An adapter for ``settings``: its address guard and TLS context."""
    guard = connection_guard(settings)
    context = None
    if settings.ca_bundle and not settings.insecure:
        context = ssl.create_default_context()
        context.load_verify_locations(cafile=settings.ca_bundle)
    return _Adapter(guard, context, pools, per_host)


def _find(exc: BaseException, wanted: Callable[[BaseException], bool]) -> BaseException | None:
    """The first exception in ``exc``'s chain (causes, contexts, urllib3's
    reasons and requests' wrapped arguments) that is ``wanted``."""
    todo, seen = [exc], set()
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if wanted(current):
            return current
        linked = [current.__cause__, current.__context__, getattr(current, "reason", None)]
        todo += [e for e in [*linked, *current.args] if isinstance(e, BaseException)]
    return None


def _tls_reason(exc: BaseException) -> str:
    error = _find(exc, lambda e: isinstance(e, ssl.SSLError))
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"certificate verify failed: {error.verify_message}"
    if isinstance(error, ssl.SSLError):
        return error.reason or str(error)
    return str(exc)


def _connect_reason(exc: BaseException) -> str:
    """``connection refused`` and the like, from the OS error in the chain."""
    error = _find(exc, lambda e: isinstance(e, OSError) and bool(e.errno))
    return os.strerror(error.errno).lower() if isinstance(error, OSError) else str(exc)


def _name_not_found(exc: BaseException) -> bool:
    error = _find(exc, lambda e: isinstance(e, socket.gaierror))
    permanent = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}
    return isinstance(error, socket.gaierror) and error.errno in permanent


class HttpDownloader(Downloader):
    """The default: requests, streaming, with timeouts and a byte cap.

    Every connection's address is checked against the private-network rule
    (:mod:`mpcrawler.web.addresses`) once it is made, so a name that resolves to a
    public address for one lookup and a private one for the next gains
    nothing.  (Through a proxy, the proxy makes the connections: no check.)
    """

    def __init__(self, settings: WorkerConfig) -> None:
        super().__init__(settings)
        self.session = requests.Session()
        self.use_connections(_connections(settings, 10, 10))
        if settings.insecure:
            self.session.verify = False
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # logged once
        self.session.headers.update(request_headers(settings))
        self.authorization = basic_authorizations(settings)
        if settings.cookies:
            for c in read_cookies_file(settings.cookies):
                self.session.cookies.set_cookie(
                    requests.cookies.create_cookie(
                        c.name,
                        c.value,
                        domain=c.domain,
                        path=c.path,
                        secure=c.secure,
                        expires=c.expires,
                    )
                )
        self.accept_types = settings.accepted_types()
        # Through a proxy the proxy resolves names and connects, so only a
        # host written as an address can be checked here (see the README).
        self.proxies = {"http": settings.proxy, "https": settings.proxy} if settings.proxy else {}
        self.keep_exchange = bool(settings.warc_dir)
        self.session.max_redirects = 5
        # Looking up proxy settings in the environment costs more than a
        # loopback request; skip it when there are none to find.
        self.session.trust_env = bool(urllib.request.getproxies()) and not self.proxies
        self.timeout = (settings.timeout, settings.timeout)

    @classmethod
    def for_slots(cls, settings: WorkerConfig, slots: int) -> list[Downloader]:
        """One downloader a slot, every one on the same connections."""
        shared = _connections(settings, host_pools(slots), slots)
        downloaders: list[Downloader] = []
        for _ in range(slots):
            downloader = cls(settings)
            downloader.use_connections(shared)
            downloaders.append(downloader)
        return downloaders

    def use_connections(self, adapter: _Adapter) -> None:
        """Make connections through ``adapter`` (its pools and address guard)."""
        self.session.close()  # the adapters it had
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.guard = adapter.guard
        self.adapter = adapter

    def download(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        follow_redirects: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Response:
        limit = self.settings.max_bytes if max_bytes is None else max_bytes
        # A page's body is read only for the accepted types; robots.txt and
        # sitemaps (fetched with their own max_bytes) whatever their type.
        accept = self.accept_types if max_bytes is None else None
        with self.track():
            started = time.perf_counter()
            if self.proxies and (reason := proxied_refusal(self.guard, url)):
                raise BlockedAddress(f"blocked address: {reason}")
            try:
                raw = self._get(url, follow_redirects, headers)
            except _Refused as exc:
                raise BlockedAddress(f"blocked address: {exc}") from None
            except (requests.RequestException, urllib3.exceptions.HTTPError, ValueError) as exc:
                raise self._failure(exc, url) from None
            try:
                return self._read(raw, url, limit, started, follow_redirects, accept)
            finally:
                raw.close()

    def _failure(self, exc: Exception, url: str) -> DownloadError:
        """What a request that failed before its answer means, from requests'
        exceptions (its full path) or urllib3's (``transport``'s)."""
        if isinstance(exc, (requests.exceptions.SSLError, urllib3.exceptions.SSLError)):
            return TlsFailed(f"tls: {_tls_reason(exc)}")
        refused = isinstance(exc, urllib3.exceptions.NewConnectionError)  # (a "timeout" class)
        if isinstance(exc, (requests.Timeout, urllib3.exceptions.TimeoutError)) and not refused:
            return TimedOut(f"timeout: {exc}")
        if isinstance(exc, requests.TooManyRedirects):
            return DownloadError(f"too many redirects: {exc}")
        if isinstance(exc, requests.exceptions.ProxyError):  # not the site: the proxy
            proxy = redact_url(self.settings.proxy) if self.settings.proxy else "the proxy"
            return ConnectFailed(
                f"connection failed: proxy {proxy} unreachable ({_connect_reason(exc)})"
            )
        if refused or isinstance(exc, (requests.ConnectionError, urllib3.exceptions.ProtocolError)):
            if _name_not_found(exc):
                return NameNotFound(f"dns: {hostname_of(url)} does not resolve")
            return ConnectFailed(f"connection failed: {_connect_reason(exc)} ({hostname_of(url)})")
        return DownloadError(f"request failed: {exc}")

    def _get(
        self, url: str, follow_redirects: bool, extra: dict[str, str] | None = None
    ) -> requests.Response:
        """``session.get(url)``, without what a crawler's GET does not need:
        a page's request goes to urllib3 directly (:mod:`.transport`), with
        the session's headers, cookies, pools and TLS settings.  A redirect
        followed (robots.txt), a proxy, or a URL requests would quote take
        requests' own path: prepared from the session's settings directly
        (``Session.request`` merges them into each request, about a third of
        its cost, in Protocol isinstance checks), or, with proxies from the
        environment, the full path (it finds them)."""
        session = self.session
        headers = dict(session.headers)
        if self.authorization and (auth := self.authorization.get(host_key(url))):
            headers["Authorization"] = auth  # requests drops it on a redirect to another host
        if extra:
            headers.update(extra)
        if not follow_redirects and transport.usable(url, session, self.proxies):
            return transport.send(session, self.adapter, url, headers, self.timeout)  # type: ignore[return-value]
        if session.trust_env:
            return session.get(
                url,
                headers=headers,
                stream=True,
                timeout=self.timeout,
                allow_redirects=follow_redirects,
            )
        prepared = requests.PreparedRequest()
        prepared.prepare(
            method="GET",
            url=url,
            headers=headers,
            cookies=session.cookies,
            hooks=session.hooks,
        )
        return session.send(
            prepared,
            stream=True,
            timeout=self.timeout,
            allow_redirects=follow_redirects,
            verify=session.verify,
            proxies=self.proxies,
        )

    def _read(
        self,
        raw: requests.Response,
        url: str,
        limit: int,
        started: float,
        follow_redirects: bool,
        accept: frozenset[str] | None = None,
    ) -> Response:
        """Read the body as sent, decode it within ``limit`` bytes; a body
        of a content type not in ``accept`` (None: all) is not read."""
        headers = {k.lower(): v for k, v in raw.headers.items()}
        content_type, charset = parse_content_type(headers.get("content-type", ""))
        if accept is not None and content_type and content_type not in accept:
            url = raw.url if follow_redirects else url
            return self._not_accepted(raw, url, headers, content_type, charset, started)
        decoder = BoundedDecoder(headers.get("content-encoding", ""))
        chunks: list[bytes] = []
        sent: list[bytes] | None = [] if self.keep_exchange else None
        payload = new_digest()  # of the body as sent, as WARC-Payload-Digest is
        size, status = 0, raw.status_code
        deadline = started + 3 * self.settings.timeout

        failed = functools.partial(self._failed, raw, sent)
        try:
            for chunk in raw.raw.stream(_CHUNK, decode_content=False):
                payload.update(chunk)
                if sent is not None:
                    sent.append(chunk)
                if time.perf_counter() > deadline:
                    message = f"download took over {3 * self.settings.timeout:g} s (3 x --timeout)"
                    raise failed(TimedOut(message, status), "time")
                out, more = decoder.feed(chunk, limit - size)
                size += len(out)
                chunks.append(out)
                if more:
                    error = BodyTooLarge(
                        f"body larger than {limit} bytes", status, content_type, size + 1
                    )
                    raise failed(error, "length")
        except zlib.error as exc:
            error = BrokenBody(f"broken body: {exc}", status, content_type, size)
            raise failed(error, "disconnect") from None
        except (requests.Timeout, urllib3.exceptions.ReadTimeoutError) as exc:
            error = TimedOut(f"timeout reading body: {exc}", status)
            raise failed(error, "time") from None
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            error = BrokenBody(f"broken body: {exc}", status, content_type, size)
            raise failed(error, "disconnect") from None
        return Response(
            url=raw.url if follow_redirects else url,
            status=status,
            headers=headers,
            body=b"".join(chunks),
            content_type=content_type,
            charset=charset,
            elapsed_ms=(time.perf_counter() - started) * 1000.0,
            exchange=None if sent is None else self._exchange(raw, sent, None),
            digest=digest_text(payload),
        )

    def _not_accepted(
        self,
        raw: requests.Response,
        url: str,
        headers: dict[str, str],
        content_type: str,
        charset: str | None,
        started: float,
    ) -> Response:
        """The answer of a content type --accept-type leaves out: its body unread."""
        return Response(
            url=url,
            status=raw.status_code,
            headers=headers,
            content_type=content_type,
            charset=charset,
            elapsed_ms=(time.perf_counter() - started) * 1000.0,
            exchange=self._exchange(raw, [], "unspecified") if self.keep_exchange else None,
            skipped=f"content type {content_type} not accepted (--accept-type)",
        )

    def _failed(
        self,
        raw: requests.Response,
        sent: list[bytes] | None,
        error: DownloadError,
        truncated: str,
    ) -> DownloadError:
        """``error``, with the exchange as far as it went when one is kept."""
        if sent is not None:
            error.exchange = self._exchange(raw, sent, truncated)
        return error

    @staticmethod
    def _exchange(raw: requests.Response, sent: list[bytes], truncated: str | None) -> Exchange:
        request = raw.request
        target = urllib.parse.urlsplit(request.url or "")
        lines = [f"{request.method} {request.path_url} HTTP/1.1", f"Host: {target.netloc}"]
        lines += [f"{name}: {value}" for name, value in request.headers.items()]
        version = {10: "HTTP/1.0", 11: "HTTP/1.1"}.get(raw.raw.version, "HTTP/1.1")
        return Exchange(
            request=("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace"),
            status_line=f"{version} {raw.status_code} {raw.reason or ''}".rstrip(),
            headers=list(raw.raw.headers.items()),
            body=b"".join(sent),
            truncated=truncated,
        )

    def close(self) -> None:
        self.session.close()
