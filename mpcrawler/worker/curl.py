"""CurlDownloader: the Downloader on libcurl (pycurl), for the least CPU a request.

    python -m mpcrawler crawl URL --downloader curl     (pip install 'mpcrawler[curl]')

The same contract as HttpDownloader (:mod:`mpcrawler.worker.downloader`, :mod:`.http`), kept
by the same tests: one ``pycurl.Curl`` handle a download slot (its own
connections and cookie engine), never a redirect followed but robots.txt's,
the body read raw and decoded here (``BoundedDecoder``: the byte cap and the
decompression-bomb guard), the digest of the body as sent, and, with
``--warc``, the exchange as it went over the wire: the request's bytes as
curl sent them (its debug callback), the status line and headers as
received, the body still content-coded.

- **Timeouts**: ``--timeout`` bounds the connect, and the wait for each next
  byte (a progress callback that aborts when nothing came for that long);
  the whole download is cut off after 3 x ``--timeout``.
- **Addresses**: curl's pre-request callback sees the address each
  connection reached, after it connected and before the request is sent, and
  refuses it by the private-network rule (:mod:`mpcrawler.web.addresses`).
  Through a proxy, a host written as an address is checked instead.
- **TLS**: verified against certifi's bundle (as requests does) or
  ``--ca-bundle``; ``--insecure`` verifies nothing.  HTTP/1.1 only, so the
  WARC records are HTTP/1.1 messages.
- **Cookies**: curl's cookie engine, started from ``--cookies`` (a Netscape
  file, as curl reads it), keeps what the sites set, a slot apiece.
"""

from __future__ import annotations

import os
import re
import select
import time
from typing import Any

from ..settings.worker import WorkerConfig
from ..web.codings import BoundedDecoder
from ..web.redact import redact_url
from ..web.urls import host_key, hostname_of
from ..web.validators import digest_text, new_digest
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
    Transfers,
    basic_authorizations,
    connection_guard,
    parse_content_type,
    proxied_refusal,
    request_headers,
)

__all__ = ["CurlDownloader", "CurlTransfers"]

_MAX_REDIRECTS = 5  # robots.txt's redirects, as HttpDownloader


try:
    import pycurl
except ImportError:  # the master says so before anything is written (load_object)
    raise ImportError(
        "--downloader curl needs pycurl: pip install 'mpcrawler[curl]' (or pip install pycurl)"
    ) from None


class _Transfer:
    """What one transfer gathered, from curl's callbacks."""

    def __init__(
        self,
        url: str,
        follow: bool,
        limit: int,
        accept: frozenset[str] | None,
        keep: bool,
        timeout: float,
    ):
        self.url, self.follow = url, follow  # (redirects are followed: robots.txt)
        self.limit, self.accept = limit, accept
        self.keep, self.timeout = keep, timeout
        self.clock = time.perf_counter()
        self.request = b""  # the request's bytes, as sent (the last one's)
        self.status_line = ""
        self.headers: list[tuple[str, str]] = []
        self.started = self.last_byte = time.monotonic()
        self.received = 0.0
        self.decoder: BoundedDecoder | None = None
        self.chunks: list[bytes] = []
        self.sent: list[bytes] = []
        self.size = 0
        self.payload = new_digest()
        self.why: DownloadError | None = None  # why a callback aborted the transfer
        self.skipped: str | None = None
        self.truncated: str | None = None
        self.content_type = ""
        self.refused: str | None = None

    def header(self, line: bytes) -> None:
        self.last_byte = time.monotonic()  # (a header line is a read too)
        text = line.decode("latin-1").rstrip("\r\n")
        if text.startswith("HTTP/"):  # a new response (a redirect's next, an interim 100)
            self.status_line, self.headers, self.decoder = text, [], None
        elif ":" in text:
            name, _, value = text.partition(":")
            self.headers.append((name, value.strip()))

    def debug(self, kind: int, data: bytes) -> None:
        if kind == 2:  # CURLINFO_HEADER_OUT: a request's head, as sent
            self.request = data

    def accepted(self) -> bool:
        """The answer's type is read (--accept-type); if not, ``skipped`` says so."""
        headers = {name.lower(): value for name, value in self.headers}
        self.content_type = parse_content_type(headers.get("content-type", ""))[0]
        if self.accept is not None and self.content_type and self.content_type not in self.accept:
            self.skipped = f"content type {self.content_type} not accepted (--accept-type)"
            self.truncated = "unspecified"
            return False
        self.decoder = BoundedDecoder(headers.get("content-encoding", ""))
        return True

    def body(self, chunk: bytes) -> int | None:
        """A piece of the body, as sent: -1 stops the transfer."""
        if self.decoder is None and not self.accepted():
            return -1
        assert self.decoder is not None
        self.last_byte = time.monotonic()
        self.payload.update(chunk)
        if self.keep:
            self.sent.append(chunk)
        try:
            out, more = self.decoder.feed(chunk, self.limit - self.size)
        except Exception as exc:  # zlib.error, brotli's: the body cannot be decoded
            self.why = BrokenBody(f"broken body: {exc}", self.status, self.content_type, self.size)
            self.truncated = "disconnect"
            return -1
        self.size += len(out)
        self.chunks.append(out)
        if more:
            self.why = BodyTooLarge(
                f"body larger than {self.limit} bytes",
                self.status,
                self.content_type,
                self.size + 1,
            )
            self.truncated = "length"
            return -1
        return None

    def progress(self, dltotal: int, dlnow: int, ultotal: int, ulnow: int) -> int:
        """Curl's progress callback: 1 aborts (a stalled read, the deadline)."""
        now = time.monotonic()
        if dlnow != self.received:
            self.received, self.last_byte = dlnow, now
        if now - self.started > 3 * self.timeout:
            message = f"download took over {3 * self.timeout:g} s (3 x --timeout)"
            self.why, self.truncated = TimedOut(message, self.status or None), "time"
            return 1
        if now - self.last_byte > self.timeout:
            what = "reading body" if self.status_line else "waiting for the answer"
            self.why = TimedOut(f"timeout {what}: no byte for {self.timeout:g} s", self.status)
            self.truncated = "time"
            return 1
        return 0

    @property
    def status(self) -> int | None:
        parts = self.status_line.split(" ", 2)
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None

    def exchange(self) -> Exchange:
        return Exchange(
            request=self.request,
            status_line=self.status_line,
            headers=list(self.headers),
            body=b"".join(self.sent),
            truncated=self.truncated,
        )


class CurlDownloader(Downloader):
    """A download slot on libcurl; see the module's docstring."""

    def __init__(self, settings: WorkerConfig) -> None:
        super().__init__(settings)
        self.guard = connection_guard(settings)
        self.authorization = basic_authorizations(settings)
        self.accept_types = settings.accepted_types()
        self.keep_exchange = bool(settings.warc_dir)
        self.headers = request_headers(settings)
        curl = self.curl = pycurl.Curl()
        curl.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        curl.setopt(pycurl.NOSIGNAL, 1)
        curl.setopt(pycurl.NOPROGRESS, 0)
        curl.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(settings.timeout * 1000)))
        curl.setopt(pycurl.MAXCONNECTS, 32)
        curl.setopt(pycurl.COOKIEFILE, settings.cookies or "")  # "" starts the engine empty
        if settings.insecure:
            curl.setopt(pycurl.SSL_VERIFYPEER, 0)
            curl.setopt(pycurl.SSL_VERIFYHOST, 0)
        else:
            import certifi  # requests' dependency: the same roots as HttpDownloader

            curl.setopt(pycurl.CAINFO, settings.ca_bundle or certifi.where())
        if settings.proxy:
            curl.setopt(pycurl.PROXY, settings.proxy)
        else:
            curl.setopt(pycurl.PROXY, "")  # not the environment's either: as --proxy says
            curl.setopt(pycurl.NOPROXY, "*")

    def download(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        follow_redirects: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Response:
        with self.track():
            transfer = self.begin(url, max_bytes, follow_redirects, headers)
            try:
                self.curl.perform()
            except pycurl.error as exc:
                return self.end(transfer, exc.args[0], str(exc.args[1]))
            return self.end(transfer)

    @classmethod
    def transfers(cls, downloaders: list[Downloader]) -> CurlTransfers:
        """The slots' handles driven by one ``CurlMulti`` from the worker's
        one thread (:mod:`mpcrawler.worker.loop`)."""
        return CurlTransfers([d for d in downloaders if isinstance(d, CurlDownloader)])

    def begin(
        self,
        url: str,
        max_bytes: int | None,
        follow_redirects: bool,
        extra: dict[str, str] | None,
    ) -> _Transfer:
        """Set this slot's handle up for a download of ``url`` (raises
        BlockedAddress for an address refused through a proxy)."""
        limit = self.settings.max_bytes if max_bytes is None else max_bytes
        accept = self.accept_types if max_bytes is None else None
        if self.settings.proxy and (reason := proxied_refusal(self.guard, url)):
            raise BlockedAddress(f"blocked address: {reason}")
        transfer = _Transfer(
            url, follow_redirects, limit, accept, self.keep_exchange, self.settings.timeout
        )
        curl = self.curl
        headers = dict(self.headers)
        if self.authorization and (auth := self.authorization.get(host_key(url))):
            headers["Authorization"] = auth  # (curl sends it to this host only)
        if extra:
            headers.update(extra)
        host = hostname_of(url)
        curl.setopt(pycurl.URL, url)
        curl.setopt(pycurl.HTTPHEADER, [f"{name}: {value}" for name, value in headers.items()])
        curl.setopt(pycurl.FOLLOWLOCATION, 1 if follow_redirects else 0)
        curl.setopt(pycurl.MAXREDIRS, _MAX_REDIRECTS)
        curl.setopt(pycurl.HEADERFUNCTION, transfer.header)
        curl.setopt(pycurl.WRITEFUNCTION, transfer.body)
        curl.setopt(pycurl.XFERINFOFUNCTION, transfer.progress)
        if self.keep_exchange:
            curl.setopt(pycurl.VERBOSE, 1)
            curl.setopt(pycurl.DEBUGFUNCTION, transfer.debug)
        if not self.settings.proxy:

            def check(primary: str, local: str, primary_port: int, local_port: int) -> int:
                transfer.refused = self.guard.refusal(host, primary)
                return pycurl.PREREQFUNC_ABORT if transfer.refused else pycurl.PREREQFUNC_OK

            curl.setopt(pycurl.PREREQFUNCTION, check)
        return transfer

    def end(self, transfer: _Transfer, code: int | None = None, message: str = "") -> Response:
        """The response of the transfer ``begin`` set up, which ended with
        curl's error ``code`` (None: none); raises the DownloadError it means."""
        if code is not None and not (
            transfer.skipped is not None and code == pycurl.E_WRITE_ERROR and not transfer.refused
        ):  # (a body not read for its type: the transfer stopped on purpose)
            raise self._failure(code, message, transfer) from None
        if transfer.decoder is None and transfer.skipped is None:
            transfer.accepted()  # an empty body: its type still says whether it was read
        response_headers: dict[str, str] = {}
        for name, value in transfer.headers:
            key = name.lower()
            response_headers[key] = (
                f"{response_headers[key]}, {value}" if key in response_headers else value
            )
        content_type, charset = parse_content_type(response_headers.get("content-type", ""))
        final = self.curl.getinfo(pycurl.EFFECTIVE_URL) if transfer.follow else transfer.url
        return Response(
            url=final,
            status=transfer.status or 0,
            headers=response_headers,
            body=b"" if transfer.skipped else b"".join(transfer.chunks),
            content_type=content_type,
            charset=charset,
            elapsed_ms=(time.perf_counter() - transfer.clock) * 1000.0,
            exchange=transfer.exchange() if self.keep_exchange else None,
            digest=None if transfer.skipped else digest_text(transfer.payload),
            skipped=transfer.skipped,
        )

    def _failure(self, code: int, message: str, transfer: _Transfer) -> DownloadError:
        """What curl's error ``code`` means, as HttpDownloader's errors."""
        if transfer.refused:
            return BlockedAddress(f"blocked address: {transfer.refused}")
        error = transfer.why
        if error is None:
            error = self._curl_error(code, message, transfer)
        if self.keep_exchange and transfer.status_line:
            error.exchange = transfer.exchange()
        return error

    def _curl_error(self, code: int, message: str, transfer: _Transfer) -> DownloadError:
        host = hostname_of(transfer.url)
        status = transfer.status
        if code == pycurl.E_COULDNT_RESOLVE_HOST:
            return NameNotFound(f"dns: {host} does not resolve")
        if code in _TLS_ERRORS:
            return TlsFailed(f"tls: {_tls_reason(message)}")
        if code == pycurl.E_OPERATION_TIMEDOUT:
            return TimedOut(f"timeout: {message}", status)
        if code == pycurl.E_TOO_MANY_REDIRECTS:
            return DownloadError(f"too many redirects: {message}")
        if self.settings.proxy and code in _PROXY_ERRORS:
            reason = _errno_reason(self.curl, message)
            return ConnectFailed(
                f"connection failed: proxy {redact_url(self.settings.proxy)} unreachable ({reason})"
            )
        if status is not None and code in _BODY_ERRORS:
            transfer.truncated = "disconnect"
            return BrokenBody(
                f"broken body: {message}", status, transfer.content_type, transfer.size
            )
        if code in _CONNECT_ERRORS:
            return ConnectFailed(f"connection failed: {_errno_reason(self.curl, message)} ({host})")
        return DownloadError(f"request failed: {message}")

    def close(self) -> None:
        self.curl.close()


class CurlTransfers(Transfers):
    """The slots' CurlDownloaders driven by one ``pycurl.CurlMulti``: each
    slot's handle is added when its download starts and removed when it
    ends, so a slot is the same handle (its cookies, its settings) as its
    blocking ``download``.  The multi handle keeps the connections."""

    def __init__(self, downloaders: list[CurlDownloader]) -> None:
        self.downloaders = downloaders
        self.multi = pycurl.CurlMulti()
        self.running: dict[Any, tuple[int, _Transfer]] = {}  # handle -> (slot, transfer)
        self.ended: list[tuple[int, Response | Exception]] = []

    @property
    def active(self) -> int:
        return len(self.running) + len(self.ended)

    def start(
        self,
        slot: int,
        url: str,
        *,
        max_bytes: int | None = None,
        follow_redirects: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        downloader = self.downloaders[slot]
        downloader.call_started()
        try:
            transfer = downloader.begin(url, max_bytes, follow_redirects, headers)
        except Exception as exc:  # refused before it started
            downloader.call_ended(False)
            self.ended.append((slot, exc))
            return
        self.running[downloader.curl] = (slot, transfer)
        self.multi.add_handle(downloader.curl)

    def wait(self, timeout: float, wake: int) -> list[tuple[int, Response | Exception]]:
        self._perform()
        if not self.ended and timeout > 0:
            wanted = self.multi.timeout()  # ms until curl wants to be called (-1: no timer)
            if wanted != 0:
                bound = timeout if wanted < 0 else min(timeout, wanted / 1000.0)
                poller = select.poll()
                reads, writes, errors = self.multi.fdset()
                for fd in {*reads, *writes, *errors}:
                    mask = (select.POLLIN if fd in reads else 0) | (
                        select.POLLOUT if fd in writes else 0
                    )
                    poller.register(fd, mask | select.POLLPRI)
                poller.register(wake, select.POLLIN)
                poller.poll(bound * 1000.0)
            self._perform()
        ended, self.ended = self.ended, []
        return ended

    def _perform(self) -> None:
        multi = self.multi
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        while True:
            queued, succeeded, failed = multi.info_read()
            for curl in succeeded:
                self._end(curl, None, "")
            for curl, code, message in failed:
                self._end(curl, code, str(message))
            if not queued:
                break

    def _end(self, curl: Any, code: int | None, message: str) -> None:
        self.multi.remove_handle(curl)
        slot, transfer = self.running.pop(curl)
        downloader = self.downloaders[slot]
        try:
            outcome: Response | Exception = downloader.end(transfer, code, message)
        except Exception as exc:
            outcome = exc
        downloader.call_ended(not isinstance(outcome, Exception))
        self.ended.append((slot, outcome))

    def close(self) -> None:
        for curl in list(self.running):
            self.multi.remove_handle(curl)
        self.running.clear()
        self.multi.close()


def _errno_reason(curl: Any, message: str) -> str:
    """``connection refused`` and the like, from the OS error, else curl's message."""
    errno = curl.getinfo(pycurl.OS_ERRNO)
    return os.strerror(errno).lower() if errno else message


def _tls_reason(message: str) -> str:
    """curl's TLS message as HttpDownloader words it where they agree."""
    lowered = message.lower()
    for marker in ("verify result:", "certificate problem:"):
        if marker in lowered:
            reason = message[lowered.index(marker) + len(marker) :].strip()
            return "certificate verify failed: " + _CODE_SUFFIX.sub("", reason)
    if "no alternative certificate subject name matches" in lowered or "does not match" in lowered:
        return f"certificate verify failed: {message}"
    return message


_CODE_SUFFIX = re.compile(r"\s*\(\d+\)$")  # OpenSSL's verify code, after its words
# libcurl's error codes, by what they mean here (pycurl names most; CURLE_PROXY 97,
# CURLE_SSL_CLIENTCERT 98, CURLE_HTTP2_STREAM 92 and CURLE_HTTP3 95 it does not).
_TLS_ERRORS = frozenset(
    {
        pycurl.E_SSL_CONNECT_ERROR,
        51,
        pycurl.E_SSL_ENGINE_NOTFOUND,
        pycurl.E_SSL_ENGINE_SETFAILED,
        pycurl.E_SSL_CERTPROBLEM,
        pycurl.E_SSL_CIPHER,
        pycurl.E_PEER_FAILED_VERIFICATION,
        pycurl.E_FTP_SSL_FAILED,
        pycurl.E_SSL_ENGINE_INITFAILED,
        pycurl.E_SSL_CACERT_BADFILE,
        pycurl.E_SSL_SHUTDOWN_FAILED,
        pycurl.E_SSL_CRL_BADFILE,
        pycurl.E_SSL_ISSUER_ERROR,
        pycurl.E_SSL_PINNEDPUBKEYNOTMATCH,
        pycurl.E_SSL_INVALIDCERTSTATUS,
        98,
    }
)  # fmt: skip  (51: the old CURLE_PEER_FAILED_VERIFICATION)
_BODY_ERRORS = frozenset(
    {pycurl.E_PARTIAL_FILE, pycurl.E_WRITE_ERROR, pycurl.E_RECV_ERROR,
     pycurl.E_BAD_CONTENT_ENCODING, 92}
)  # fmt: skip
_CONNECT_ERRORS = frozenset(
    {
        pycurl.E_COULDNT_CONNECT,
        pycurl.E_GOT_NOTHING,
        pycurl.E_SEND_ERROR,
        pycurl.E_RECV_ERROR,
        8,
        95,
    }
)  # fmt: skip  (8: CURLE_WEIRD_SERVER_REPLY)
_PROXY_ERRORS = frozenset({pycurl.E_COULDNT_CONNECT, pycurl.E_COULDNT_RESOLVE_PROXY, 97})
