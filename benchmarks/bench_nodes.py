"""Aggregate pages/s of one crawl shared by 1, 2 and 4 nodes through Redis.

    python benchmarks/bench_nodes.py --nodes 1,2,4 --hosts 16 --pages 150 \\
        --latency 0.05 --threads 4 --repeat 3 --out results/nodes

Starts a redis-server of its own (no persistence) on a free port and, in a
child process, the built-in test site on ``--hosts`` loopback hosts
(127.0.0.2, 127.0.0.3, ...), each answering after ``--latency`` seconds.
Each run is N real ``python -m mpcrawler crawl ... --redis`` processes with
one worker of ``--threads`` slots each, so one node is latency-bound (its
ideal is threads / latency pages/s).  The node counts are interleaved, R
runs each.  For each count it reports the median aggregate pages/s (pages
over the time from the first record to the last, so start-up is left out),
its ratio to N x the one-node rate, Redis round trips per page (every node's
calls over every page), CPU ms per page of the masters and of the workers,
and pages fetched more than once (from the site's own request counts: there
must be none).  Writes results.json and nodes.png into DIR and prints the
table.

``--partitions 1,3`` also runs each count with the crawl's keys split into
that many partitions (this tree only), and ``--cluster 3`` runs everything
through a Redis Cluster of three servers of its own instead of one Redis:
the table then gives each server's Redis CPU a page and the busiest
server's over an equal share (1.00: perfectly even).
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
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from benchmarks.common import ROOT, crawl_env, machine, start_redis, worktree
from mpcrawler.frontier.redis.client import key_prefix
from mpcrawler.testing.redis import RedisCluster

HOST_BASE = 2  # hosts are 127.0.0.2 ...


def serve(hosts: int, pages: int, latency: float, size: int, ports_file: str) -> None:
    """The child process: serve the test site on every host until killed,
    and write the servers' ports, then each page's request count on SIGTERM."""
    import signal
    from contextlib import ExitStack

    from mpcrawler.testing.site import TestSite, serve_site

    site = TestSite(pages=pages, size=size, offsite_host="127.0.0.250")
    with ExitStack() as stack:
        servers = [
            stack.enter_context(serve_site(site, host=f"127.0.0.{HOST_BASE + k}", latency=latency))
            for k in range(hosts)
        ]
        Path(ports_file).write_text(json.dumps([s.url for s in servers]))

        def dump(*_: Any) -> None:
            hits = {s.url: dict(s.hits) for s in servers}
            Path(ports_file + ".hits").write_text(json.dumps(hits))
            raise SystemExit(0)

        signal.signal(signal.SIGTERM, dump)
        while True:
            time.sleep(3600)


def redis_usage(clients: list[redis.Redis]) -> tuple[list[float], int]:
    """Each server's CPU seconds so far, and the commands they have run (a
    script's own included; INFO and the benchmark's own calls left out)."""
    skip = {"cmdstat_info", "cmdstat_scan", "cmdstat_del", "cmdstat_ping", "cmdstat_cluster"}
    cpus, calls = [], 0
    for client in clients:
        cpu = client.info("cpu")
        stats = client.info("commandstats")
        calls += sum(int(v["calls"]) for k, v in stats.items() if k not in skip)
        cpus.append(float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]))
    return cpus, calls


def run_nodes(
    n: int,
    seeds: list[str],
    servers: list[str],
    threads: int,
    parts: int = 1,
    root: Path = ROOT,
    cluster: RedisCluster | None = None,
) -> dict[str, Any]:
    """One crawl by ``n`` nodes through the Redis ``servers`` (the first is
    the one the nodes are given: a cluster's first server, or the only one);
    on a cluster, a crawl name whose partitions fall on different servers."""
    redis_url = servers[0]
    crawl = f"bench-{uuid.uuid4().hex[:8]}" if cluster is None else cluster.spread_crawl(parts)
    jobs = [tempfile.mkdtemp(prefix="bench-node-") for _ in range(n)]
    env = crawl_env(root)
    clients = [redis.Redis.from_url(url) for url in servers]
    cpu0, calls0 = redis_usage(clients)
    cmd = [sys.executable, "-m", "mpcrawler", "crawl", *seeds, "--redis", redis_url]
    if parts > 1:
        cmd += ["--redis-partitions", str(parts)]
    cmd += ["--crawl", crawl, "--workers", "1", "--threads", str(threads), "--no-robots"]
    cmd += ["--quiet", "--allow-private-networks"]
    try:
        procs = [
            subprocess.Popen(
                [*cmd, "--node", f"n{i}", "--job-dir", job],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
                cwd=root,
            )
            for i, job in enumerate(jobs)
        ]
        for p in procs:
            _, err = p.communicate(timeout=1800)
            if p.returncode != 0:
                raise SystemExit(f"a node failed: {err.decode()[-2000:]}")
        times, pages, trips, cpu_master, cpu_workers, per_node = [], 0, 0, 0.0, 0.0, []
        for job in jobs:
            stats = json.loads(Path(job, "stats.json").read_text())
            with open(Path(job, "pages.jsonl"), encoding="utf-8") as f:
                times += [json.loads(line)["fetched_at"] for line in f]
            pages += stats["pages"]
            per_node.append(stats["pages"])
            trips += stats["frontier"]["redis_round_trips"]
            cpu_master += stats["processes"]["master"]["cpu_s"]
            cpu_workers += sum(w["cpu_s"] for w in stats["processes"]["workers"])
        span = max(times) - min(times)
        cpu1, calls1 = redis_usage(clients)
        used = [after - before for before, after in zip(cpu0, cpu1, strict=True)]
        return {
            "nodes": n,
            "partitions": parts,
            "per_server_us": [1e6 * u / pages for u in used],
            "pages": pages,
            "per_node": per_node,
            "pages_per_s": pages / span,
            "round_trips_per_page": trips / pages,
            "cpu_master_ms": 1000 * cpu_master / pages,
            "cpu_workers_ms": 1000 * cpu_workers / pages,
            "redis_us": 1e6 * sum(used) / pages,
            "redis_commands": (calls1 - calls0) / pages,
        }
    finally:
        for job in jobs:
            shutil.rmtree(job, ignore_errors=True)
        for client in clients:  # each key on the server that holds it
            for p in range(parts):
                for key in client.scan_iter(match=key_prefix(crawl, p) + "*"):
                    client.delete(key)
            client.close()


def plot(rows: list[dict[str, Any]], one: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ns = [r["nodes"] for r in rows]
    ax.plot(ns, [r["pages_per_s"] for r in rows], "o-", label="measured (median)")
    ax.plot(ns, [n * one for n in ns], "--", label="N x one node")
    ax.set_xlabel("nodes (1 worker each)")
    ax.set_ylabel("pages/s, whole crawl")
    ax.set_xticks(ns)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", default="1,2,4")
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--pages", type=int, default=150, help="pages per host")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--size", type=int, default=4_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--base", help="also crawl with this git revision, alternated")
    parser.add_argument(
        "--partitions", default="1", help="--redis-partitions to compare (this tree only)"
    )
    parser.add_argument(
        "--cluster", type=int, default=0, help="a Redis Cluster of this many servers"
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the site's child process
    args = parser.parse_args()
    if args.serve:
        serve(args.hosts, args.pages, args.latency, args.size, args.serve)
        return
    counts = [int(n) for n in args.nodes.split(",")]
    partitions = [int(k) for k in args.partitions.split(",")]
    cluster = RedisCluster(args.cluster) if args.cluster else None
    if cluster is not None:
        servers = [f"redis://127.0.0.1:{port}/0" for port in cluster.ports]
    else:
        redis_proc, redis_url, redis_dir = start_redis()
        servers = [redis_url]
    ports_file = tempfile.mktemp(prefix="bench-nodes-site-")
    site = subprocess.Popen(
        [
            *(sys.executable, __file__, "--serve", ports_file, "--hosts", str(args.hosts)),
            *("--pages", str(args.pages), "--latency", str(args.latency), "--size", str(args.size)),
        ]
    )
    trees = {"this": ROOT}
    with ExitStack() as stack:
        if args.base:
            trees["base"] = stack.enter_context(worktree(args.base))
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(ports_file) or not Path(ports_file).read_text():
                assert site.poll() is None and time.monotonic() < deadline, "the site did not start"
                time.sleep(0.05)
            seeds = json.loads(Path(ports_file).read_text())
            runs: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
            configs = [
                (t, n, k)
                for n in counts
                for k in partitions
                for t in trees
                if t == "this" or k == 1
            ]
            for r in range(args.repeat):
                for tree, n, k in configs if r % 2 == 0 else configs[::-1]:
                    result = run_nodes(n, seeds, servers, args.threads, k, trees[tree], cluster)
                    runs.setdefault((tree, n, k), []).append(result)
                    split = "/".join(f"{us:.0f}" for us in result["per_server_us"])
                    print(
                        f"run {r + 1}, {tree}, {n} node(s), {k} partition(s): "
                        f"{result['pages']} pages, "
                        f"{result['pages_per_s']:.1f} pages/s, per node {result['per_node']}, "
                        f"Redis {result['redis_us']:.0f} us and "
                        f"{result['redis_commands']:.1f} commands a page (by server: {split} us)",
                        flush=True,
                    )
        finally:
            site.terminate()
            site.wait(timeout=30)
            if cluster is not None:
                cluster.close()
            else:
                redis_proc.kill()
                redis_proc.wait()
                shutil.rmtree(redis_dir, ignore_errors=True)
    hits = json.loads(Path(ports_file + ".hits").read_text())
    total_requests = sum(sum(h.values()) for h in hits.values())
    expected = args.repeat * len(configs) * args.hosts * args.pages
    for path in (ports_file, ports_file + ".hits"):
        Path(path).unlink(missing_ok=True)
    figures = ("pages_per_s", "round_trips_per_page", "cpu_master_ms", "cpu_workers_ms")
    figures += ("redis_us", "redis_commands")
    rows = []
    for tree, n, parts in configs:
        rs = runs[tree, n, parts]
        spread = [statistics.median(r["per_server_us"][k] for r in rs) for k in range(len(servers))]
        rows.append(
            {
                "tree": tree,
                "nodes": n,
                "partitions": parts,
                "per_server_us": spread,
                # the busiest server's CPU over an equal share of the total
                "busiest_vs_equal": max(spread) * len(spread) / sum(spread) if sum(spread) else 0,
                **{k: statistics.median(r[k] for r in rs) for k in figures},
                "pages": rs[0]["pages"],
                "runs": [r["pages_per_s"] for r in rs],
            }
        )
    ideal = args.threads / args.latency if args.latency else None
    print(f"\n{machine()}")
    print(
        f"{args.hosts} hosts x {args.pages} pages of {args.size:,} B "
        f"at {args.latency * 1000:.0f} ms; "
        f"nodes of 1 worker x {args.threads} slots (one node's ideal: "
        f"{ideal:.0f} pages/s); median of {args.repeat} runs"
        + (f"; base {args.base}" if args.base else "")
        if ideal
        else ""
    )
    print(
        f"requests the site served: {total_requests:,} for {expected:,} pages "
        f"({total_requests - expected} more than once)"
    )
    where = f"a Redis Cluster of {len(servers)} servers" if cluster else "one Redis"
    print(f"through {where}")
    print(
        "| tree | nodes | partitions | pages/s | vs N x one node | Redis round trips/page "
        "| Redis CPU µs/page | by server | busiest / equal share | Redis commands/page "
        "| master CPU ms/page | worker CPU ms/page |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for tree in trees:
        for parts in partitions:
            mine = [row for row in rows if row["tree"] == tree and row["partitions"] == parts]
            if not mine:
                continue
            one = mine[0]["pages_per_s"] / mine[0]["nodes"]
            for row in mine:
                ratio = row["pages_per_s"] / (row["nodes"] * one)
                row["vs_n_x_one"] = ratio
                split = " / ".join(f"{us:.0f}" for us in row["per_server_us"])
                print(
                    f"| {tree} | {row['nodes']} | {parts} | {row['pages_per_s']:.1f} | "
                    f"{ratio:.2f} | {row['round_trips_per_page']:.2f} | {row['redis_us']:.0f} | "
                    f"{split} | {row['busiest_vs_equal']:.2f} | {row['redis_commands']:.1f} | "
                    f"{row['cpu_master_ms']:.2f} | {row['cpu_workers_ms']:.2f} |"
                )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(
            json.dumps({"args": vars(args) | {"out": str(args.out)}, "rows": rows}, indent=1)
        )
        this = [row for row in rows if row["tree"] == "this" and row["partitions"] == 1]
        plot(this, this[0]["pages_per_s"] / this[0]["nodes"], args.out / "nodes.png")


if __name__ == "__main__":
    main()
