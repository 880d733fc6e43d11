"""How long a dead node's work waits before another node takes it over.

    python benchmarks/bench_failover.py --lease-timeout 30 --repeat 3

Starts a redis-server of its own and the built-in test site on ``--hosts``
loopback hosts (in this process, so it can watch each host's requests),
then two nodes (real ``python -m mpcrawler crawl --redis`` processes, one
request at a time per host, ``--delay`` apart).  Once both are crawling it
SIGKILLs one node (master and workers), reads from Redis which hosts it
held, and measures the time until the surviving node's first request to
one of them, and, after the crawl, the pages fetched twice.  Prints the
median and each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from benchmarks.common import ROOT, machine, start_redis
from mpcrawler.testing.site import SiteServer, TestSite, serve_site


def hits(server: SiteServer) -> int:
    with server.hits_lock:
        return sum(server.hits.values())


def one_run(args: argparse.Namespace, redis_url: str) -> dict[str, float]:
    crawl = f"failover-{uuid.uuid4().hex[:8]}"
    site = TestSite(pages=args.pages, size=4_000, offsite_host="127.0.0.250")
    jobs = [tempfile.mkdtemp(prefix="bench-failover-") for _ in range(2)]
    with ExitStack() as stack:
        servers = [
            stack.enter_context(serve_site(site, host=f"127.0.0.{2 + k}"))
            for k in range(args.hosts)
        ]
        cmd = [sys.executable, "-m", "mpcrawler", "crawl", *(s.url for s in servers)]
        cmd += ["--redis", redis_url, "--crawl", crawl, "--workers", "1", "--threads", "2"]
        cmd += ["--host-concurrency", "1", "--delay", str(args.delay), "--no-robots"]
        cmd += ["--quiet", "--allow-private-networks", "--lease-timeout", str(args.lease_timeout)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        nodes = [
            subprocess.Popen(
                [*cmd, "--node", name, "--job-dir", job],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
            for name, job in zip(("doomed", "survivor"), jobs, strict=True)
        ]
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        prefix = f"mpc:{{{crawl}}}:"
        deadline = time.monotonic() + 60
        while not (client.scard(prefix + "held:doomed") and client.scard(prefix + "held:survivor")):
            assert time.monotonic() < deadline, "the nodes did not both start"
            time.sleep(0.05)
        time.sleep(args.warmup)
        held = client.smembers(prefix + "held:doomed")
        os.killpg(nodes[0].pid, signal.SIGKILL)
        killed = time.monotonic()
        watched = [s for s in servers if s.url.rstrip("/") in held]
        before = {s.url: hits(s) for s in watched}
        taken_over = None
        while taken_over is None:
            if any(hits(s) > before[s.url] for s in watched):
                taken_over = time.monotonic() - killed
            assert time.monotonic() - killed < 10 * args.lease_timeout + 60, "never taken over"
            time.sleep(0.005)
        nodes[1].wait(timeout=1800)
        nodes[0].wait()
        counts = [n for s in servers for n in s.hits.values()]
        twice = sum(n - 1 for n in counts if n > 1)
        keys = list(client.scan_iter(match=prefix + "*"))
        if keys:
            client.delete(*keys)
    for job in jobs:
        shutil.rmtree(job, ignore_errors=True)
    return {"taken_over_s": taken_over, "fetched_twice": twice, "hosts_held": len(held)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lease-timeout", type=float, default=30.0)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--pages", type=int, default=400, help="pages per host")
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before the kill")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    proc, url, directory = start_redis()
    try:
        runs = [one_run(args, url) for _ in range(args.repeat)]
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(directory, ignore_errors=True)
    print(machine())
    print(f"lease timeout {args.lease_timeout:g} s; heartbeat every 1 s; runs: {json.dumps(runs)}")
    taken = statistics.median(r["taken_over_s"] for r in runs)
    twice = statistics.median(r["fetched_twice"] for r in runs)
    print(f"median: the dead node's hosts taken over after {taken:.2f} s; {twice:g} pages twice")


if __name__ == "__main__":
    main()
