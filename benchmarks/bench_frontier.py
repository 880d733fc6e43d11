"""Frontier throughput and memory: mpcrawler's UrlQueueManager beside peers.

For each size, each queue runs in a fresh process (so RSS is its own): put N
URLs, then get (and ack) all N.  Reports put/s, get+ack/s and the RSS growth
over an empty queue, measured in the same run for:

* ``mpcrawler``          UrlQueueManager(cache_size=10_000), flushed once at the end of puts
* ``mpcrawler-ckpt``     the same, with a checkpoint (flush) every 10,000 operations,
                         as the crawler does
* ``queuelib``           queuelib.FifoDiskQueue (Scrapy's disk queue; no crash safety)
* ``diskcache``          diskcache.Deque (crash-safe); at most ``--diskcache-max`` items,
                         because it runs at about 10,000 ops/s

Then the SeenSet: adds with a flush every 10,000 (the master's pattern) and
membership tests.

    python benchmarks/bench_frontier.py --sizes 1000000,10000000 --repeat 3
"""

from __future__ import annotations

import argparse
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


def url(i: int) -> str:
    return f"http://www.example.com/section/{i % 997}/page-{i}.html"


def run_one(impl: str, n: int, directory: str) -> dict[str, Any]:
    """Runs in its own process."""
    peak = 0
    if impl.startswith("mpcrawler"):
        from mpcrawler.frontier import UrlQueueManager

        q = UrlQueueManager(directory, cache_size=10_000)
        every = 10_000 if impl == "mpcrawler-ckpt" else 0
        base = rss()
        t0 = time.perf_counter()
        for i in range(n):
            q.put(url(i), depth=i % 7)
            if every and i % every == 0:
                q.flush()
        q.flush()
        t1 = time.perf_counter()
        peak = rss() - base
        got = 0
        while (item := q.get()) is not None:
            q.ack(item)
            got += 1
            if every and got % every == 0:
                q.flush()
        q.close()
        t2 = time.perf_counter()
    elif impl == "queuelib":
        from queuelib import FifoDiskQueue

        q = FifoDiskQueue(directory)
        base = rss()
        t0 = time.perf_counter()
        for i in range(n):
            q.push(f"{i % 7}|0|{url(i)}".encode())
        t1 = time.perf_counter()
        peak = rss() - base
        got = 0
        while q.pop() is not None:
            got += 1
        q.close()
        t2 = time.perf_counter()
    elif impl == "diskcache":
        import diskcache

        q = diskcache.Deque(directory=directory)
        base = rss()
        t0 = time.perf_counter()
        for i in range(n):
            q.append(f"{i % 7}|0|{url(i)}")
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
        "rss_mb": peak / 2**20,
    }


def measure(impl: str, n: int) -> dict[str, Any]:
    directory = tempfile.mkdtemp(prefix=f"bench-{impl}-")
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--one", impl, str(n), directory],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return json.loads(out)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--diskcache-max", type=int, default=200_000)
    parser.add_argument("--seen", type=int, default=1_000_000, help="URLs for the SeenSet")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.one:
        impl, n, directory = args.one
        print(json.dumps(run_one(impl, int(n), directory)))
        return
    rows = []
    impls = ["mpcrawler", "mpcrawler-ckpt", "queuelib", "diskcache"]
    for n in (int(s) for s in args.sizes.split(",")):
        runs: dict[str, list[dict[str, Any]]] = {i: [] for i in impls}
        for _ in range(args.repeat):  # interleaved, so drift hits all alike
            for impl in impls:
                size = min(n, args.diskcache_max) if impl == "diskcache" else n
                runs[impl].append(measure(impl, size))
        for impl in impls:
            r = runs[impl]
            rows.append(
                {
                    "impl": impl,
                    "n": r[0]["n"],
                    "size": n,
                    "put_per_s": statistics.median(x["put_per_s"] for x in r),
                    "get_per_s": statistics.median(x["get_per_s"] for x in r),
                    "rss_mb": statistics.median(x["rss_mb"] for x in r),
                }
            )
    seen_runs = [measure("seenset", args.seen) for _ in range(args.repeat)]
    print(
        f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; "
        f"medians of {args.repeat} runs\n"
    )
    print(
        f"{'queue':<16}{'URLs':>12}{'put/s':>12}{'get+ack/s':>12}{'RSS MB':>9}{'vs queuelib':>13}"
    )
    for row in rows:
        peer = next(r for r in rows if r["impl"] == "queuelib" and r["size"] == row["size"])
        ratio = (row["put_per_s"] + row["get_per_s"]) / (peer["put_per_s"] + peer["get_per_s"])
        print(
            f"{row['impl']:<16}{row['n']:>12,}{row['put_per_s']:>12,.0f}"
            f"{row['get_per_s']:>12,.0f}{row['rss_mb']:>9.1f}{ratio:>12.2f}x"
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
