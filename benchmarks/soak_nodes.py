"""Soak test of a shared crawl's liveness: nodes join while others run, over and over.

    python benchmarks/soak_nodes.py --runs 20 --nodes 3 --gap 0.3 --hosts 8 \\
        --pages 150 --latency 0.03 --timeout 120

Each run is a fresh crawl of the built-in test site spread over ``--hosts``
loopback hosts (127.0.0.2, 127.0.0.3, ...; ``--pages`` pages each), by
``--nodes`` real ``python -m mpcrawler crawl ... --redis`` processes of one
worker x ``--threads`` slots with ``--lease-timeout 5`` and the default host
concurrency, started ``--gap`` seconds apart.  ``--nodes``, ``--gap`` and
``--hosts`` take comma-separated lists: each run takes the next combination
in turn (2 to 4 nodes, join gaps of 0 to 2 s, 4 to 16 hosts, ...).

A run *ended* when every node exited by itself within ``--timeout``
seconds; one that did not is killed (its Redis keys are printed first, for
the post-mortem) and counted as not ended.  For every run the site's own
request counts give the pages never fetched (*missing*) and the pages
fetched more than once (*twice*).  Prints a line per run and the table:
runs, ended, median and worst time to end, missing, twice; exits 1 if any
run did not end cleanly.  Starts its own redis-server and site; nothing
beyond loopback.
"""

from __future__ import annotations

import argparse
import itertools
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from benchmarks.bench_nodes import serve
from benchmarks.common import ROOT, machine, start_redis


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


class SiteProcess:
    """The test site on ``hosts`` loopback hosts, in a child process; its
    request counts are read when it stops."""

    def __init__(self, hosts: int, pages: int, latency: float) -> None:
        self.ports_file = tempfile.mktemp(prefix="soak-site-")
        self.proc = subprocess.Popen(
            [
                *(sys.executable, __file__, "--serve", self.ports_file, "--hosts", str(hosts)),
                *("--pages", str(pages), "--latency", str(latency)),
            ]
        )
        deadline = time.monotonic() + 30
        path = Path(self.ports_file)
        while not path.exists() or not path.read_text():
            assert self.proc.poll() is None and time.monotonic() < deadline, "no site"
            time.sleep(0.05)
        self.seeds: list[str] = json.loads(path.read_text())

    def stop(self) -> dict[str, dict[str, int]]:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        hits_path = Path(self.ports_file + ".hits")
        hits = json.loads(hits_path.read_text())
        for p in (Path(self.ports_file), hits_path):
            p.unlink(missing_ok=True)
        return hits


def post_mortem(client: redis.Redis, crawl: str) -> str:
    """What Redis holds of a crawl that did not end: owners, queues, leases."""
    p = f"mpc:{{{crawl}}}:"
    lines = [f"queued {client.get(p + 'queued')} leased {client.hlen(p + 'leased')}"]
    lines.append(f"owner {client.hgetall(p + 'owner')}")
    lines.append(f"hosts {client.zrange(p + 'hosts', 0, -1, withscores=True)}")
    lines.append(f"inflight {client.hgetall(p + 'inflight')}")
    lines.append(f"free_at {client.hgetall(p + 'free_at')}")
    for key in client.scan_iter(match=p + "own:*"):
        lines.append(f"{key.decode()} {client.zrange(key, 0, -1, withscores=True)}")
    for key in client.scan_iter(match=p + "q:*"):
        lines.append(f"{key.decode()} {client.zcard(key)} queued")
    return "\n    ".join(lines)


def one_run(
    args: argparse.Namespace, redis_url: str, nodes: int, gap: float, hosts: int
) -> dict[str, Any]:
    site = SiteProcess(hosts, args.pages, args.latency)
    crawl = f"soak-{uuid.uuid4().hex[:8]}"
    jobs = [tempfile.mkdtemp(prefix="soak-node-") for _ in range(nodes)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "mpcrawler", "crawl", *site.seeds]
    cmd += ["--redis", redis_url, "--crawl", crawl, "--workers", "1"]
    cmd += ["--threads", str(args.threads), "--lease-timeout", "5", "--quiet"]
    cmd += ["--allow-private-networks", "--retry-delay", "0.05"]
    client = redis.Redis.from_url(redis_url)
    procs: list[subprocess.Popen[bytes]] = []
    start = time.monotonic()
    ended, note = True, ""
    try:
        for i, job in enumerate(jobs):
            if i:
                time.sleep(gap)  # the scenario: nodes joining while the first ones run
            procs.append(
                subprocess.Popen(
                    [*cmd, "--node", f"n{i}", "--job-dir", job],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env=env,
                    start_new_session=True,
                )
            )
        deadline = start + args.timeout
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        took = time.monotonic() - start
        if any(p.poll() is None for p in procs):
            ended, note = False, post_mortem(client, crawl)
        codes = []
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate(timeout=60)
            codes.append(p.returncode)
            if p.returncode not in (0, -signal.SIGKILL) and not note:
                note = err.decode(errors="replace")[-1500:]
    finally:
        hits = site.stop()
        for job in jobs:
            shutil.rmtree(job, ignore_errors=True)
        keys = list(client.scan_iter(match=f"mpc:{{{crawl}}}:*"))
        if keys:
            client.delete(*keys)
        client.close()
    counts = [
        n for hits_of in hits.values() for path, n in hits_of.items() if path != "/robots.txt"
    ]
    fetched_pages = len(counts)
    return {
        "nodes": nodes,
        "gap": gap,
        "hosts": hosts,
        "ended": ended and all(c == 0 for c in codes),
        "codes": codes,
        "seconds": took,
        "missing": hosts * args.pages - fetched_pages,
        "twice": sum(n - 1 for n in counts if n > 1),
        "note": note,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--nodes", type=ints, default=[3], help="e.g. 2,3,4")
    parser.add_argument("--gap", type=floats, default=[0.3], help="seconds, e.g. 0,0.3,1,2")
    parser.add_argument("--hosts", type=ints, default=[8], help="e.g. 4,8,16")
    parser.add_argument("--pages", type=int, default=150, help="pages per host")
    parser.add_argument("--latency", type=float, default=0.03)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=120, help="a run not over by then hangs")
    parser.add_argument("--json", type=Path, help="also write every run's figures here")
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the site's child process
    args = parser.parse_args()
    if args.serve:
        serve(args.hosts[0], args.pages, args.latency, 4_000, args.serve)
        return
    redis_proc, redis_url, redis_dir = start_redis()
    combos = itertools.cycle(itertools.product(args.nodes, args.gap, args.hosts))
    runs = []
    try:
        for r in range(args.runs):
            nodes, gap, hosts = next(combos)
            run = one_run(args, redis_url, nodes, gap, hosts)
            runs.append(run)
            verdict = "ended" if run["ended"] else f"DID NOT END (exit codes {run['codes']})"
            print(
                f"run {r + 1}: {nodes} nodes {gap:g} s apart, {hosts} hosts: {verdict} "
                f"in {run['seconds']:.1f} s, missing {run['missing']}, twice {run['twice']}",
                flush=True,
            )
            if run["note"]:
                print("    " + run["note"], flush=True)
    finally:
        redis_proc.kill()
        redis_proc.wait()
        shutil.rmtree(redis_dir, ignore_errors=True)
    ended = [r for r in runs if r["ended"]]
    times = [r["seconds"] for r in ended]
    print(f"\n{machine()}")
    print(
        f"{args.pages} pages a host at {args.latency * 1000:.0f} ms; nodes of 1 worker x "
        f"{args.threads} slots, --lease-timeout 5; timeout {args.timeout:g} s"
    )
    print("| runs | ended | median s to end | worst s to end | missing | twice |")
    print("|---|---|---|---|---|---|")
    median = f"{statistics.median(times):.1f}" if times else "-"
    worst = f"{max(times):.1f}" if times else "-"
    print(
        f"| {len(runs)} | {len(ended)} | {median} | {worst} | "
        f"{sum(r['missing'] for r in runs)} | {sum(r['twice'] for r in runs)} |"
    )
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    clean = len(ended) == len(runs) and not any(r["missing"] or r["twice"] for r in runs)
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
