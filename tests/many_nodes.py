"""Helpers for crawls shared by several nodes: a site spread over loopback
hosts (127.0.0.2, 127.0.0.3, ...), each a logging server of :mod:`hostile`,
and nodes started as real CLI processes against a real Redis."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hostile import Handler, Reply, Server, links, serve
from support import Lines, start_cli

from mpcrawler.testing.redis import RedisServer

# A request's way from dispatch to the server (pipe, thread, socket) varies by
# a few ms on a loaded machine, so two arrivals may be a little closer than
# the delay between their dispatches; a second node ignoring the first one's
# delay shows as a gap near 0.
JITTER = 0.02


def shared(url: str, name: str, *extra: str) -> list[str]:
    """The options of a node of crawl ``name`` through Redis ``url``: one
    worker of two slots, short retries."""
    slots = ("--workers", "1", "--threads", "2", "--retry-delay", "0.05")
    return ["--redis", url, "--crawl", name, *slots, *extra]


GATE_LIMIT = 60.0  # seconds a closed gate holds a page at most (a test that forgot it)


class Site:
    """``hosts`` servers of ``pages`` pages each: /p0 ... /pN-1.  Page i links
    to pages 2i+1 and 2i+2 of its own host and to page i of the next host;
    every page answers after ``latency`` seconds, so overlapping requests show
    in the servers' logs."""

    def __init__(self, servers: list[Server], pages: int, gate: threading.Event) -> None:
        self.servers = servers
        self.pages = pages
        self.gate = gate  # cleared, every page waits (robots.txt does not) until it is set

    @property
    def seeds(self) -> list[str]:
        return [f"{s.url}/p0" for s in self.servers]

    def all_urls(self) -> set[str]:
        return {f"{s.url}/p{i}" for s in self.servers for i in range(self.pages)}

    def fetch_counts(self) -> Counter[str]:
        """How many times each page was requested, from the servers' logs."""
        counts: Counter[str] = Counter()
        for s in self.servers:
            for hit in s.log.hits:
                if hit.path != "/robots.txt":
                    counts[f"{s.url}{hit.path}"] += 1
        return counts

    def max_open(self) -> int:
        """The most requests any one host had open at once."""
        return max(s.log.max_open for s in self.servers)

    def min_gap(self) -> float:
        """The shortest time between two page requests' arrivals at one host."""
        return self.closest()[0]

    def closest(self) -> tuple[float, str, str, str]:
        """The two page requests that arrived closest at one host: (the gap,
        the host, and each as 'path by agent at start'), for a failure to show."""
        found = []
        for s in self.servers:
            hits = sorted((h for h in s.log.hits if h.path != "/robots.txt"), key=lambda h: h.start)
            for a, b in itertools.pairwise(hits):
                found.append(
                    (
                        b.start - a.start,
                        s.url,
                        *(f"{h.path} by {h.agent} at {h.start:.3f}" for h in (a, b)),
                    )
                )
        return min(found)

    def args(self) -> list[str]:
        """The seeds (one per host: each host is in scope) and what loopback hosts need."""
        return [*self.seeds, "--allow-private-networks"]


def _letters(n: int) -> str:
    """``n`` spelled with a letter a digit (13: "bd")."""
    return "".join(chr(ord("a") + int(d)) for d in str(n))


@contextlib.contextmanager
def serve_site(hosts: int = 6, pages: int = 30, latency: float = 0.01) -> Iterator[Site]:
    urls: list[str] = []
    gate = threading.Event()
    gate.set()

    def page(index: int) -> Any:
        def route(handler: Handler, n: int) -> Reply:
            path = handler.path
            if path == "/robots.txt":
                return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n"
            if not path.startswith("/p") or not path[2:].isdigit() or int(path[2:]) >= pages:
                return 404, {"Content-Type": "text/html"}, b"<title>no</title>"
            gate.wait(GATE_LIMIT)
            time.sleep(latency)
            i = int(path[2:])
            hrefs = [f"/p{c}" for c in (2 * i + 1, 2 * i + 2) if c < pages]
            hrefs.append(f"{urls[(index + 1) % hosts]}/p{i}")
            # Its number in letters too: texts that differ only in digits are
            # one text (a calendar's months), and these pages are not that.
            return links(*hrefs, title=f"host {index} page {i} {_letters(index)} {_letters(i)}")

        return route

    with contextlib.ExitStack() as stack:
        servers = [
            stack.enter_context(serve({}, host=f"127.0.0.{2 + k}", default=page(k)))
            for k in range(hosts)
        ]
        urls.extend(s.url for s in servers)
        try:
            yield Site(servers, pages, gate)
        finally:
            gate.set()  # no answer held past the test


class Node:
    """One node of a shared crawl: ``python -m mpcrawler crawl`` in its own
    process group, with its own job dir."""

    def __init__(self, name: str, job: Path, args: list[str]) -> None:
        self.name, self.job = name, job
        self.agent = f"mpcrawler-test-node {name}"  # the servers' logs tell the nodes apart
        self.proc = start_cli(
            *("crawl", *args, "--node", name, "--job-dir", str(job), "--quiet"),
            *("--user-agent", self.agent),
        )
        self.lines = Lines(self.proc)

    def records(self) -> list[dict[str, Any]]:
        """The node's records so far (read while it writes: a last line
        without its newline yet is left for the next read)."""
        try:
            data = (self.job / "pages.jsonl").read_bytes()
        except FileNotFoundError:  # not yet written
            return []
        return [json.loads(line) for line in data.split(b"\n")[:-1]]

    def finish(self, timeout: float = 90) -> int:
        self.lines.finish(timeout=timeout)
        return int(self.proc.returncode)

    def stop_holding(self, holds: Callable[[], bool], timeout: float = 60) -> None:
        """SIGSTOP the node (its process group) at a moment ``holds()`` is
        true: checked once its master is stopped, so it stays true (a lease
        cannot be acked by a stopped node); else it goes on and is tried
        again.  Raises if that moment does not come within ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            os.killpg(self.proc.pid, signal.SIGSTOP)
            wait_until(lambda: _state(self.proc.pid) in ("T", "t", None), 10, "the node stopped")
            if holds():
                return
            os.killpg(self.proc.pid, signal.SIGCONT)
            assert time.monotonic() < deadline, f"{self.name} never stopped holding it"
            time.sleep(0.01)

    def kill(self) -> None:
        """SIGKILL the master and its workers (the node's process group)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    @property
    def err(self) -> str:
        return "".join(self.lines.err)


def _state(pid: int) -> str | None:
    """The process's state letter (R, S, T...), or None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def wait_until(condition: Any, timeout: float = 60, what: str = "condition") -> None:
    """Poll ``condition()`` (bounded) until it is true."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not seen within {timeout} s: {what}"
        time.sleep(0.02)


RedisProcess = RedisServer  # a redis-server a test may kill and start again
