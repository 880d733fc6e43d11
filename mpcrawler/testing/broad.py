"""A broad test web: many hosts answered by one server, with no setup a host.

Used by the broad-crawl test and ``benchmarks/bench_broad.py``.  One server
bound to 0.0.0.0 answers for every 127.X.Y.Z (the whole of 127/8 is
loopback); a peer from any other address is hung up on.  Host k is
127.A.B.C with A = 1 + k // 62500, B = 1 + (k // 250) % 250,
C = 1 + k % 250.  Page i (``/p/i``) lives on host ``i % hosts``, links to
its children ``i*FANOUT+1 .. i*FANOUT+FANOUT`` (each on its own host) and
answers with about 2 KB; each host has its own robots.txt.  The server
counts the requests it served by host and path (``hits``) and the TCP
connections it accepted (``connections``).
"""

from __future__ import annotations

import collections
import ipaddress
import threading
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .site import serving

__all__ = ["FANOUT", "BroadServer", "host_of", "serving_broad"]

FANOUT = 10  # depth 5 (the broad-crawl default --max-depth) reaches 111,111 pages
FILLER = b"<p>" + b"broad crawl filler text " * 80 + b"</p>\n"  # about 2 KB a page
ROBOTS = b"User-agent: *\nAllow: /\n"


_SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "ro", "vi", "de", "po")


def page_name(i: int) -> str:
    """A word of page ``i``'s own (its number in syllables): no two pages
    of the site have the same text."""
    word = ""
    while True:
        i, digit = divmod(i, len(_SYLLABLES))
        word += _SYLLABLES[digit]
        if not i:
            return word


def host_of(k: int) -> str:
    """The address of host number ``k``."""
    return f"127.{1 + k // 62500}.{1 + (k // 250) % 250}.{1 + k % 250}"


class BroadServer(ThreadingHTTPServer):
    """Answers ``/p/i`` and ``/robots.txt`` for ``hosts`` hosts and ``pages``
    pages; counts requests by (host, path) and accepted connections."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, hosts: int, pages: int, *, count_hits: bool = True) -> None:
        self.hosts, self.pages = hosts, pages
        self.requests = self.connections = 0
        self.count_hits = count_hits  # a benchmark of 100,000 hosts needs only the totals
        self.hits: collections.Counter[tuple[str, str]] = collections.Counter()
        self.lock = threading.Lock()
        super().__init__(("0.0.0.0", 0), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def url(self, page: int = 0) -> str:
        return f"http://{host_of(page % self.hosts)}:{self.port}/p/{page}"

    def verify_request(self, request: Any, client_address: Any) -> bool:
        return ipaddress.ip_address(client_address[0]).is_loopback  # nobody else's traffic

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            self.connections += 1
        super().process_request(request, client_address)

    def reset_counts(self) -> None:
        with self.lock:
            self.requests = self.connections = 0
            self.hits.clear()


class _Handler(BaseHTTPRequestHandler):
    """Serves each host's pages of the broad site."""

    server: BroadServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        server = self.server
        host = (self.headers.get("Host") or "").split(":")[0]
        with server.lock:
            server.requests += 1
            if server.count_hits:
                server.hits[host, self.path] += 1
        if self.path == "/robots.txt":
            self._send(ROBOTS, "text/plain")
            return
        try:
            i = int(self.path.rsplit("/", 1)[1])
        except ValueError:
            i = -1
        if not 0 <= i < server.pages or host != host_of(i % server.hosts):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        port = server.port
        links = "".join(
            f'<a href="http://{host_of(c % server.hosts)}:{port}/p/{c}">{c}</a>\n'
            for c in range(i * FANOUT + 1, min(server.pages, i * FANOUT + FANOUT + 1))
        )
        name = page_name(i)  # digits are folded in a page's fingerprint: a word of its own
        body = f"<html><head><title>{name}</title></head><body>{links}".encode() + FILLER
        self._send(body + b"</body></html>", "text/html; charset=utf-8")

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serving_broad(
    hosts: int, pages: int, *, count_hits: bool = True
) -> AbstractContextManager[BroadServer]:
    """A BroadServer serving in a thread for the ``with`` block."""
    return serving(BroadServer(hosts, pages, count_hits=count_hits))
