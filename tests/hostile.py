"""A scripted loopback server for politeness and hostile-input tests.

Each route is a function of (handler, hit number) returning status, headers
and body (bytes, or an iterator of bytes to stream).  The server logs every
request with its time and how many requests were open at once, per host.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mpcrawler.testing.site import serving

Reply = tuple[int, dict[str, str], bytes | Iterable[bytes]]
Route = Callable[["Handler", int], Reply]


def html(
    body: str,
    status: int = 200,
    charset: str | None = "utf-8",
    encoding: str = "utf-8",
    **headers: str,
) -> Reply:
    content_type = "text/html" + (f"; charset={charset}" if charset else "")
    return status, {"Content-Type": content_type, **headers}, body.encode(encoding)


def links(*hrefs: str, title: str = "page") -> Reply:
    items = "".join(f'<a href="{h}">{h}</a>' for h in hrefs)
    return html(f"<html><head><title>{title}</title></head><body>{items}</body></html>")


def redirect(location: str, status: int = 302) -> Reply:
    return status, {"Location": location, "Content-Type": "text/html"}, b""


@dataclass
class Hit:
    path: str
    start: float
    end: float = 0.0
    agent: str = ""  # the User-Agent header
    authorization: str = ""  # the Authorization header
    headers: dict[str, str] = field(default_factory=dict)  # every header (names lower-case)
    sent: int = 0  # body bytes the socket took
    done: threading.Event = field(default_factory=threading.Event)  # the reply is over


@dataclass
class Log:
    hits: list[Hit] = field(default_factory=list)
    open_now: int = 0
    max_open: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def counts(self) -> Counter[str]:
        return Counter(h.path for h in self.hits)

    def paths(self) -> list[str]:
        return [h.path for h in self.hits]


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        host: str,
        port: int,
        routes: dict[str, Route],
        default: Route | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.routes = routes
        self.default = default
        self.log = Log()
        self.scheme = "https" if tls else "http"
        super().__init__((host, port), Handler)
        if tls is not None:  # the handshake happens in the handler's thread
            self.socket = tls.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.server_address[0]}:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        log = self.server.log
        hit = Hit(
            self.path,
            time.monotonic(),
            agent=self.headers.get("User-Agent", ""),
            authorization=self.headers.get("Authorization", ""),
            headers={k.lower(): v for k, v in self.headers.items()},
        )
        with log.lock:
            n = sum(1 for h in log.hits if h.path == self.path)
            log.hits.append(hit)
            log.open_now += 1
            log.max_open = max(log.max_open, log.open_now)
        try:
            route = self.server.routes.get(self.path, self.server.default)
            if route is None:
                status, headers, body = html("<title>nope</title>", status=404)
            else:
                status, headers, body = route(self, n)
        finally:
            # Closed as soon as the answer is ready: the client cannot start its
            # next request before it has read this one.
            hit.end = time.monotonic()
            with log.lock:
                log.open_now -= 1
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if isinstance(body, bytes):
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                hit.sent = len(body)
            else:
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for chunk in body:
                    self.wfile.write(chunk)
                    hit.sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            hit.done.set()


@contextmanager
def serve(
    routes: dict[str, Route],
    host: str = "127.0.0.1",
    port: int = 0,
    default: Route | None = None,
    tls: ssl.SSLContext | None = None,
) -> Iterator[Server]:
    with serving(Server(host, port, routes, default, tls)) as server:
        yield server


def in_groups(
    reply: Reply, size: int, total: int, linger_s: float = 0.2, limit_s: float = 30.0
) -> Route:
    """Hold requests until ``size`` have arrived (the last group may be
    smaller: ``total`` requests are expected), then ``linger_s`` more, so a
    concurrency limit of ``size`` is reached however slow the client, and a
    client that goes past it has time to show it.  A client that never sends
    ``size`` at once waits ``limit_s`` per group."""
    arrived = [0]

    def route(handler: Handler, n: int) -> Reply:
        changed = handler.server.log.changed
        deadline = time.monotonic() + limit_s
        with changed:
            arrived[0] += 1
            group_end = min(-(-arrived[0] // size) * size, total)
            changed.notify_all()
            while arrived[0] < group_end and time.monotonic() < deadline:
                changed.wait(deadline - time.monotonic())
        time.sleep(linger_s)
        return reply

    return route


def stream_forever(chunk: bytes = b"x" * 65536, limit_s: float = 20.0) -> Iterator[bytes]:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        yield chunk
