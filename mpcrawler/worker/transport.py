"""One GET on urllib3, without requests' per-request machinery.

The built-in downloader (:mod:`mpcrawler.worker.http`) keeps a
``requests.Session`` for what users and plug-ins know (its headers, its
cookie jar, its adapter with the worker's shared pools, TLS settings and
connected-address check), but sends a page's request here: the pool that
requests would pick (``get_connection_with_tls_context``: the same TLS
context, CA bundle and ``verify``) is asked directly for one ``urlopen``,
streaming, with no retries and no redirects.  Cookies go through the
session's jar as requests does, but only when there are any: a request with
an empty jar and an answer without ``Set-Cookie`` cost nothing for them.

``send`` returns an ``Answer``: what the downloader reads of a response,
the same names as ``requests.Response`` (``status_code``, ``reason``,
``headers``, ``url``, ``raw``, ``request``, ``close``), so the reading and
the WARC capture serve both paths.  urllib3's own exceptions come out
unwrapped (``retries=False``); the downloader maps them.

Requests through a proxy, from the environment's proxy settings, or to a
URL that is not plain ASCII take requests' full path instead
(``usable``).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import requests
import requests.cookies
import urllib3
from requests.structures import CaseInsensitiveDict

__all__ = ["Answer", "Sent", "send", "usable"]


class Sent:
    """The request as sent: what the WARC request record and the cookie
    jar read (the names of ``requests.PreparedRequest`` they use)."""

    __slots__ = ("headers", "method", "path_url", "url")

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.method = "GET"
        self.url = url
        parts = urllib.parse.urlsplit(url)
        self.path_url = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.headers: Any = CaseInsensitiveDict(headers)


class Answer:
    """A streaming response: ``raw`` is urllib3's, its body not read yet."""

    __slots__ = ("headers", "raw", "reason", "request", "status_code", "url")

    def __init__(self, raw: urllib3.BaseHTTPResponse, sent: Sent) -> None:
        self.raw = raw
        self.status_code = raw.status
        self.reason = raw.reason
        self.headers = raw.headers
        self.url = sent.url
        self.request = sent

    def close(self) -> None:
        """As ``requests.Response.close``: the connection goes back to its pool."""
        self.raw.close()
        self.raw.release_conn()


def usable(url: str, session: requests.Session, proxies: dict[str, str]) -> bool:
    """This path serves ``url``: no proxy, and a URL with nothing to quote."""
    return not proxies and not session.trust_env and url.isascii() and " " not in url


def send(
    session: requests.Session,
    adapter: requests.adapters.HTTPAdapter,
    url: str,
    headers: dict[str, str],
    timeout: tuple[float, float],
) -> Answer:
    """GET ``url`` with ``headers`` (and the jar's cookies for it)."""
    sent = Sent(url, headers)
    jar = session.cookies
    if len(jar):
        cookie = requests.cookies.get_cookie_header(jar, sent)  # type: ignore[arg-type]
        if cookie:
            sent.headers["Cookie"] = cookie
    pool = adapter.get_connection_with_tls_context(sent, session.verify)  # type: ignore[arg-type]
    raw = pool.urlopen(
        "GET",
        sent.path_url,
        headers=sent.headers,
        redirect=False,
        assert_same_host=False,
        preload_content=False,
        decode_content=False,
        retries=False,
        timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
    )
    if "set-cookie" in raw.headers:
        requests.cookies.extract_cookies_to_jar(jar, sent, raw)  # type: ignore[arg-type]
    return Answer(raw, sent)
