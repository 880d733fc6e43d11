"""Frontier throughput and memory: mpcrawler's UrlQueueManager beside peers.

Each measurement runs in a fresh process (so RSS is its own): put N URLs,
then lease (and ack) all N.  Reports put/s, get+ack/s, the combined rate
(N / total time of both phases) against queuelib's in the same run, and the
RSS growth over an empty queue (after the puts, and at the end of the gets).
URL layouts (``--layouts``):

* ``one-host``     every URL on one host
* ``100k-hosts``   URLs spread round-robin over 100,000 hosts
* ``100k-blocked`` the same, but every host is blocked after its first URL is
                   leased (as Crawl-delay does), until nothing else is left:
                   the frontier must read past them, so every host's URLs
                   spill to blocks of their own; then all are unblocked

Queues: ``mpcrawler`` (UrlQueueManager(cache_size=10_000), flushed at the end of
the puts), ``mpcrawler-ckpt`` (a flush every 10,000 operations, as the crawler
checkpoints), ``queuelib`` (FifoDiskQueue, Scrapy's disk queue: one host-blind
FIFO, no crash safety) and ``diskcache`` (diskcache.Deque, crash-safe; at most
``--diskcache-max`` items, because it runs at about 10,000 ops/s) and
``python-floor`` (a per-host queue wholly in memory -- a dict of deques and a
heap of hosts -- that journals every put, lease and ack as mpcrawler does:
no disk tiers, no bound on memory, no blocking; what any crash-safe per-host
queue written in Python pays at least, so the ceiling of a Python frontier
against queuelib's host-blind FIFO).

Then the SeenSet: adds with a flush every 10,000 (the master's pattern) and
membership tests.

    python benchmarks/bench_frontier.py --layouts one-host:5000000,100k-hosts:1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any


def rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    return 0


HOSTS = 100_000


def url(i: int, layout: str = "one-host") -> str:
    if layout == "one-host":
        return f"http://www.example.com/section/{i % 997}/page-{i}.html"
    return f"http://h{i % HOSTS}.example.com/section/{i % 997}/page-{i}.html"


def run_one(impl: str, n: int, directory: str, layout: str = "one-host") -> dict[str, Any]:
    """Runs in its own process."""
    peak = end_rss = 0
    if impl.startswith("mpcrawler"):
        from mpcrawler.frontier import FOREVER, UrlQueueManager
        from mpcrawler.web.urls import host_key

        q = UrlQueueManager(directory, cache_size=10_000)
        every = 10_000 if impl == "mpcrawler-ckpt" else 0
        base = rss()
        t0 = time.perf_counter()
        for i in range(n):
            q.put(url(i, layout), depth=i % 7)
            if every and i % every == 0:
                q.flush()
        q.flush()
        t1 = time.perf_counter()
        peak = rss() - base
        got = 0
        blocking = layout == "100k-blocked"
        blocked: list[str] = []
        while True:
            item = q.lease()
            if item is None:
                if not blocked:
                    break
                peak = max(peak, rss() - base)  # everything left is in hosts' blocks
                for host in blocked:
                    q.block(host, 0)
                blocked, blocking = [], False
                continue
            q.ack(item)
            got += 1
            if every and got % every == 0:
                q.flush()
            if blocking:
                host = host_key(item.url)
                if not q.blocked(host):
                    q.block(host, FOREVER)
                    blocked.append(host)
        end_rss = rss() - base
        q.close()
        t2 = time.perf_counter()
    elif impl == "queuelib":
        from queuelib import FifoDiskQueue

        q = FifoDiskQueue(directory)
        base = rss()
        t0 = time.perf_counter()
        for i in range(n):
            q.push(f"{i % 7}|0|{url(i, layout)}".encode())
        t1 = time.perf_counter()
        peak = rss() - base
        got = 0
        while q.pop() is not None:
            got += 1
        q.close()
        t2 = time.perf_counter()
    elif impl == "python-floor":
        got, t0, t1, t2, peak, end_rss = python_floor(n, directory, layout)
    elif impl == "diskcache":
        import diskcache

        q = diskcache.Deque(directory=directory)
        base = rss()
        t0 = time.perf_counter()
        for i in range(n):
            q.append(f"{i % 7}|0|{url(i, layout)}")
        t1 = time.perf_counter()
        peak = rss() - base
        got = 0
        while True:
            try:
                q.popleft()
            except IndexError:
                break
            got += 1
        t2 = time.perf_counter()
    elif impl == "seenset":
        from mpcrawler.frontier import SeenSet

        seen = SeenSet(directory)
        base = rss()
        t0 = time.perf_counter()
        for i in range(n):
            seen.add(url(i))
            if i % 10_000 == 9_999:
                seen.flush()
        seen.flush()
        t1 = time.perf_counter()
        peak = rss() - base
        got = 0
        for i in range(0, 2 * n, 2):  # membership only: half seen, half new
            got += url(i) in seen
        t2 = time.perf_counter()
        # A crawl's pattern: test every link, add it when new (1 in 10 here),
        # flush every 10,000 adds.
        adds = 0
        for i in range(n):
            j = n + i if i % 10 == 0 else i
            if seen.add(url(j)):
                adds += 1
                if adds % 10_000 == 0:
                    seen.flush()
        seen.flush()
        t3 = time.perf_counter()
        seen.close()
        return {
            "impl": impl,
            "n": n,
            "put_per_s": n / (t1 - t0),
            "get_per_s": n / (t2 - t1),
            "mixed_per_s": n / (t3 - t2),
            "rss_mb": peak / 2**20,
        }
    else:
        raise SystemExit(f"unknown implementation {impl}")
    assert got == n or impl == "seenset", (impl, got, n)
    return {
        "impl": impl,
        "n": n,
        "put_per_s": n / (t1 - t0),
        "get_per_s": n / (t2 - t1),
        "rate": n / (t2 - t0),
        "rss_mb": peak / 2**20,
        "end_rss_mb": max(end_rss, 0) / 2**20,
    }


def python_floor(n: int, directory: str, layout: str) -> tuple[int, float, float, float, int, int]:
    """The ``python-floor`` queue (see the module's docstring): got, the
    three times, RSS after the puts and at the end."""
    import heapq
    import struct
    import zlib
    from collections import deque

    from mpcrawler.frontier.base import UrlInfo
    from mpcrawler.web.urls import host_key

    put_op, seq_op, header = struct.Struct("<cqqIIBH"), struct.Struct("<cq"), struct.Struct("<II")
    os.makedirs(directory, exist_ok=True)
    journal = open(os.path.join(directory, "journal"), "ab")  # noqa: SIM115 - closed below
    buf = bytearray()

    def frame() -> None:
        journal.write(header.pack(len(buf), zlib.crc32(buf)) + buf)
        buf.clear()

    hosts: dict[str, deque[UrlInfo]] = {}
    heap: list[tuple[int, int, str]] = []
    unacked: dict[int, UrlInfo] = {}
    base = rss()
    t0 = time.perf_counter()
    for i in range(n):
        text = url(i, layout)
        data = text.encode()
        buf += put_op.pack(b"P", i, 0, i % 7, len(data), 0, 0)
        buf += data
        if len(buf) >= 1 << 16:
            frame()
        item = UrlInfo(text, i % 7, 0, i)
        key = host_key(text)
        lane = hosts.get(key)
        if lane is None:
            lane = hosts[key] = deque()
            heapq.heappush(heap, (0, i, key))
        lane.append(item)
    t1 = time.perf_counter()
    peak = rss() - base
    got = 0
    while heap:
        key = heap[0][2]
        lane = hosts[key]
        item = lane.popleft()
        if lane:
            heapq.heapreplace(heap, (0, lane[0].seq, key))
        else:
            heapq.heappop(heap)
            del hosts[key]
        unacked[item.seq] = item
        buf += seq_op.pack(b"G", item.seq)
        if len(buf) >= 1 << 16:
            frame()
        del unacked[item.seq]
        buf += seq_op.pack(b"A", item.seq)
        if len(buf) >= 1 << 16:
            frame()
        got += 1
    frame()
    journal.close()
    t2 = time.perf_counter()
    return got, t0, t1, t2, peak, rss() - base


def measure(impl: str, n: int, layout: str, base: str | None = None) -> dict[str, Any]:
    """``impl`` in a process of its own; ``mpcrawler@base``: the mpcrawler
    queue of the tree ``base``."""
    directory = tempfile.mkdtemp(prefix=f"bench-{impl}-")
    tree = None
    if impl.endswith("@base"):
        impl, tree = impl.removesuffix("@base"), base
    env = {**os.environ, "PYTHONPATH": tree} if tree else None
    try:
        out = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--one", impl, str(n), directory, layout],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=tree,
        ).stdout
        return json.loads(out)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--layouts",
        default="one-host:5000000,100k-hosts:1000000,100k-blocked:1000000",
        help="LAYOUT:URLS, comma-separated",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--diskcache-max", type=int, default=200_000)
    parser.add_argument("--seen", type=int, default=1_000_000, help="URLs for the SeenSet")
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--base", help="also measure the mpcrawler queue of this git revision")
    args = parser.parse_args()
    if args.one:
        impl, n, directory, layout = args.one
        print(json.dumps(run_one(impl, int(n), directory, layout)))
        return
    with contextlib.ExitStack() as stack:
        base = None
        if args.base:
            sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            from benchmarks.common import worktree

            base = str(stack.enter_context(worktree(args.base)))
        rows = measure_all(args, base)
    report(args, rows)


def measure_all(args: argparse.Namespace, base: str | None) -> list[dict[str, Any]]:
    rows = []
    for spec in args.layouts.split(","):
        layout, n_text = spec.split(":")
        n = int(n_text)
        impls = ["mpcrawler", "mpcrawler-ckpt", "queuelib", "python-floor"]
        if base:
            impls.insert(1, "mpcrawler@base")
        if layout != "100k-blocked":
            impls.append("diskcache")
        runs: dict[str, list[dict[str, Any]]] = {i: [] for i in impls}
        for _ in range(args.repeat):  # interleaved, so drift hits all alike
            for impl in impls:
                size = min(n, args.diskcache_max) if impl == "diskcache" else n
                runs[impl].append(measure(impl, size, layout, base))
        for impl in impls:
            r = runs[impl]
            rows.append(
                {"impl": impl, "layout": layout, "n": r[0]["n"]}
                | {
                    k: statistics.median(x[k] for x in r)
                    for k in ("put_per_s", "get_per_s", "rate", "rss_mb", "end_rss_mb")
                }
            )
    return rows


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    seen_runs = [measure("seenset", args.seen, "one-host") for _ in range(args.repeat)]
    print(
        f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; "
        f"medians of {args.repeat} runs" + (f"; base {args.base}" if args.base else "") + "\n"
    )
    print(
        f"{'layout':<14}{'queue':<16}{'URLs':>11}{'put/s':>11}{'get+ack/s':>11}"
        f"{'both/s':>10}{'vs queuelib':>12}{'RSS MB':>8}{'at end':>8}"
    )
    for row in rows:
        peer = next(r for r in rows if r["impl"] == "queuelib" and r["layout"] == row["layout"])
        print(
            f"{row['layout']:<14}{row['impl']:<16}{row['n']:>11,}{row['put_per_s']:>11,.0f}"
            f"{row['get_per_s']:>11,.0f}{row['rate']:>10,.0f}{row['rate'] / peer['rate']:>11.2f}x"
            f"{row['rss_mb']:>8.1f}{row['end_rss_mb']:>8.1f}"
        )
    seen = {
        k: statistics.median(r[k] for r in seen_runs)
        for k in ("put_per_s", "get_per_s", "mixed_per_s", "rss_mb")
    }
    print(f"\nSeenSet, {args.seen:,} URLs (16-byte digests in diskcache):")
    print(f"  add, all new, flush every 10,000   {seen['put_per_s']:>10,.0f}/s")
    print(f"  membership test, half new          {seen['get_per_s']:>10,.0f}/s")
    print(f"  crawl mix: test + add 1 in 10 new  {seen['mixed_per_s']:>10,.0f}/s")
    print(f"  RSS growth                         {seen['rss_mb']:>10.1f} MB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"queues": rows, "seen": seen}, f, indent=2)


if __name__ == "__main__":
    main()
