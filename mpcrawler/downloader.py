"""The Downloader: one request in, one response (or a DownloadError) out.

Runs in a worker process, one instance per download slot, each with its own
``requests.Session``.  It never follows redirects (the master checks every hop
like a link) and reads the body as a stream, counting decoded bytes, so a
huge page or a compression bomb costs at most ``max_bytes`` of memory.
``timeout`` bounds the connect and each read; a whole download is cut off
after 3 x ``timeout``, so a server that drips bytes cannot hold a slot.
"""

from __future__ import annotations

import time
import urllib.request
from dataclasses import dataclass, field

import requests
import urllib3

from .modules import Module
from .settings import Settings

__all__ = [
    "BodyTooLarge",
    "DownloadError",
    "Downloader",
    "HttpDownloader",
    "Response",
    "parse_content_type",
]

_CHUNK = 64 * 1024
ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309: parse at least 500 KiB


@dataclass
class Response:
    """A downloaded response.  ``headers`` has lower-case names."""

    url: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str = ""
    charset: str | None = None
    elapsed_ms: float = 0.0


class DownloadError(Exception):
    """The request failed.  ``kind`` names the failure for stats; ``transient``
    says whether a retry may succeed; ``status`` is set when a response came."""

    kind = "download"
    transient = False

    def __init__(
        self, message: str, status: int | None = None, content_type: str = "", size: int = 0
    ) -> None:
        super().__init__(message)
        self.status = status
        self.content_type = content_type
        self.size = size


class ConnectFailed(DownloadError):
    kind = "connection"
    transient = True


class TimedOut(DownloadError):
    kind = "timeout"
    transient = True


class BodyTooLarge(DownloadError):
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
    """Interface: ``download(url) -> Response``; raises DownloadError."""

    type_letter = "D"

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings

    def download(
        self, url: str, *, max_bytes: int | None = None, follow_redirects: bool = False
    ) -> Response:
        raise NotImplementedError

    def close(self) -> None:
        """Release connections."""


class HttpDownloader(Downloader):
    """The default: requests, streaming, with timeouts and a byte cap."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.session = requests.Session()
        self.session.headers["User-Agent"] = settings.user_agent
        self.session.headers["Accept"] = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"
        self.session.max_redirects = 5
        # Looking up proxy settings in the environment costs more than a
        # loopback request; skip it when there are none to find.
        self.session.trust_env = bool(urllib.request.getproxies())
        self.timeout = (settings.timeout, settings.timeout)

    def download(
        self, url: str, *, max_bytes: int | None = None, follow_redirects: bool = False
    ) -> Response:
        limit = self.settings.max_bytes if max_bytes is None else max_bytes
        with self.track():
            started = time.perf_counter()
            try:
                raw = self.session.get(
                    url, stream=True, timeout=self.timeout, allow_redirects=follow_redirects
                )
            except requests.Timeout as exc:
                raise TimedOut(f"timeout: {exc}") from None
            except requests.TooManyRedirects as exc:
                raise DownloadError(f"too many redirects: {exc}") from None
            except requests.ConnectionError as exc:
                raise ConnectFailed(f"connection failed: {exc}") from None
            except (requests.RequestException, urllib3.exceptions.HTTPError, ValueError) as exc:
                raise DownloadError(f"request failed: {exc}") from None
            try:
                headers = {k.lower(): v for k, v in raw.headers.items()}
                content_type, charset = parse_content_type(headers.get("content-type", ""))
                chunks: list[bytes] = []
                size = 0
                deadline = started + 3 * self.settings.timeout
                try:
                    for chunk in raw.iter_content(_CHUNK):
                        if time.perf_counter() > deadline:
                            raise TimedOut(
                                f"download took over {3 * self.settings.timeout:g} s "
                                "(3 x --timeout)",
                                raw.status_code,
                            )
                        size += len(chunk)
                        if size > limit:
                            raise BodyTooLarge(
                                f"body larger than {limit} bytes",
                                raw.status_code,
                                content_type,
                                size,
                            )
                        chunks.append(chunk)
                except requests.Timeout as exc:
                    raise TimedOut(f"timeout reading body: {exc}", raw.status_code) from None
                except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
                    raise BrokenBody(
                        f"broken body: {exc}", raw.status_code, content_type, size
                    ) from None
                return Response(
                    url=raw.url if follow_redirects else url,
                    status=raw.status_code,
                    headers=headers,
                    body=b"".join(chunks),
                    content_type=content_type,
                    charset=charset,
                    elapsed_ms=(time.perf_counter() - started) * 1000.0,
                )
            finally:
                raw.close()

    def close(self) -> None:
        self.session.close()
