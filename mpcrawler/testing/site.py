"""The built-in test site: a deterministic web of pages served on loopback.

Used by ``demo``, ``serve-site``, the tests and the benchmarks.  Page 0 is
``/`` and page *i* is ``/page/i``.  Every page links to its two children in a
binary tree (so every page is reachable from ``/``), to ``fanout`` more pages
chosen by a seeded generator, back home, to a few spellings of the same URLs
(fragments, relative paths, an upper-case scheme), to an off-site host
(``127.0.0.2``, same port) and to mailto/javascript links that must be
ignored.  Pages are padded with text to ``size`` bytes; ``latency`` seconds
of delay are added to every response.  The server counts every request it
serves by path (``hits``), so tests can check what was fetched and how often.
"""

from __future__ import annotations

import collections
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

__all__ = ["SiteServer", "TestSite", "serve_site", "serving"]

_WORDS = [
    "crawler",
    "frontier",
    "politeness",
    "robots",
    "scheduler",
    "worker",
    "process",
    "queue",
    "disk",
    "cache",
    "waiting",
    "finding",
    "analyzer",
    "pipeline",
    "downloader",
    "request",
    "response",
    "link",
    "page",
    "site",
    "host",
    "depth",
    "weight",
    "priority",
    "checkpoint",
    "record",
    "throughput",
    "latency",
]


class TestSite:
    """The page graph and page bodies, independent of any server."""

    __test__ = False  # not a pytest class

    def __init__(
        self,
        pages: int = 500,
        size: int = 30_000,
        fanout: int = 12,
        offsite_host: str = "127.0.0.2",
        seed: int = 7,
    ) -> None:
        if pages < 1:
            raise ValueError("pages must be at least 1")
        self.pages = pages
        self.size = size
        self.fanout = fanout
        self.offsite_host = offsite_host
        self.seed = seed
        rng = random.Random(seed)
        words = [rng.choice(_WORDS) for _ in range(max(64, size // 6))]
        sentences = []
        for i in range(0, len(words), 12):
            sentences.append(" ".join(words[i : i + 12]).capitalize() + ".")
        self._filler = "\n".join(
            f"<p>{' '.join(sentences[i : i + 5])}</p>" for i in range(0, len(sentences), 5)
        )
        while len(self._filler) < size:
            self._filler += self._filler

    @staticmethod
    def path(i: int) -> str:
        return "/" if i == 0 else f"/page/{i}"

    def paths(self) -> list[str]:
        return [self.path(i) for i in range(self.pages)]

    def links(self, i: int) -> list[int]:
        """The pages page ``i`` links to (children first, then the seeded ones)."""
        out = [c for c in (2 * i + 1, 2 * i + 2) if c < self.pages]
        rng = random.Random(self.seed * 1_000_003 + i)
        out += [rng.randrange(self.pages) for _ in range(min(self.fanout, self.pages))]
        return out

    def body(self, i: int, port: int) -> bytes:
        hrefs = []
        for n, j in enumerate(self.links(i)):
            if n % 5 == 3 and i != 0 and j != 0:
                hrefs.append(f"{j}")  # relative to /page/
            elif n % 5 == 4:
                hrefs.append(f"{self.path(j)}#section-{n}")
            else:
                hrefs.append(self.path(j))
        hrefs += [
            "/",
            f"HTTP://127.0.0.1:{port}{self.path(i)}",
            f"http://{self.offsite_host}:{port}/offsite/{i}",
            "mailto:crawler@example.invalid",
            "javascript:void(0)",
        ]
        nav = "\n".join(f'<li><a href="{h}">link {n}</a></li>' for n, h in enumerate(hrefs))
        head = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>Page {i}</title>"
            "<style>body{font-family:sans-serif}li{margin:2px}</style></head>\n"
            f"<body><h1>Page {i}</h1>\n<nav><ul>\n{nav}\n</ul></nav>\n<main>\n"
        )
        tail = "\n</main></body></html>\n"
        room = max(0, self.size - len(head) - len(tail))
        return (head + self._filler[:room] + tail).encode("utf-8")

    def page_index(self, path: str) -> int | None:
        if path == "/":
            return 0
        if path.startswith("/page/"):
            rest = path[6:]
            if rest.isdigit() and int(rest) < self.pages and rest == str(int(rest)):
                return int(rest) if int(rest) > 0 else None
        return None


class SiteServer(ThreadingHTTPServer):
    """A threaded HTTP/1.1 server for a TestSite, counting requests by path."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(
        self,
        site: TestSite,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        robots: str | None = None,
    ) -> None:
        self.site = site
        self.latency = latency
        self.robots = robots
        self.hits: collections.Counter[str] = collections.Counter()
        self.hits_lock = threading.Lock()
        super().__init__((host, port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-response is routine for a crawler's test site."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.server_address[0]}:{self.port}/"


class _Handler(BaseHTTPRequestHandler):
    server: SiteServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out without a 40 ms stall

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        server = self.server
        path = self.path.split("?", 1)[0]
        with server.hits_lock:
            server.hits[self.path] += 1
        if server.latency:
            time.sleep(server.latency)
        if path == "/robots.txt" and server.robots is not None:
            self._send(200, server.robots.encode(), "text/plain")
            return
        index = server.site.page_index(path)
        if index is None:
            self._send(404, b"<html><title>Not found</title></html>", "text/html")
            return
        self._send(200, server.site.body(index, server.port), "text/html; charset=utf-8")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serve_site(
    site: TestSite,
    host: str = "127.0.0.1",
    port: int = 0,
    latency: float = 0.0,
    robots: str | None = None,
) -> Iterator[SiteServer]:
    """Serve ``site`` from a background thread for the duration of the block."""
    with serving(SiteServer(site, host, port, latency, robots)) as server:
        yield server


ServerT = TypeVar("ServerT", bound=ThreadingHTTPServer)


@contextmanager
def serving(server: ServerT) -> Iterator[ServerT]:
    """Run any HTTP server from a background thread for the duration of the block."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
