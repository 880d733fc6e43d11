"""The lease call of the shared frontier with many hosts, some blocked: µs a call.

    python benchmarks/bench_lease.py --hosts 10000 --blocked 0,256,1024,4096 [--base REV]

One node of a crawl on a redis-server of the benchmark's own owns ``--hosts``
hosts (three URLs each, queued in host order, so the first hosts have the
best URLs) and blocks its best B of them (``Frontier.block(host, FOREVER)``,
as the scheduler does for a host at its concurrency limit).  Then it leases
``--want`` URLs a call and gives them back, ``--calls`` times.  Reported per
B: the median wall time of a call as the node sees it, Redis's own CPU a
call (``INFO commandstats``: the script's usec over its calls) and, at the
end, the heartbeat's CPU in Redis.  Redis runs one call at a time: a slow
call stalls every node of the crawl.  Each measurement runs in a process
of its own, with the code of the tree it measures (``--base``: a git
revision too, in the same rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def child(url: str, hosts: int, blocked: int, want: int, calls: int) -> dict[str, float]:
    """Runs in the tree measured (its mpcrawler first on the path)."""
    import redis

    from mpcrawler.frontier import FOREVER
    from mpcrawler.frontier.redis.frontier import RedisFrontier

    crawl = f"lease-{os.getpid()}"
    node = RedisFrontier(url, crawl, "n1", lease_timeout=600)
    items = [(f"http://h{h}.test/{k}", 0, 0, "page", None) for k in range(3) for h in range(hosts)]
    for start in range(0, len(items), 1000):
        node.admit_many(items[start : start + 1000])
    taken = [node.lease(want=512) for _ in range(hosts)]  # claims every host
    for item in taken:
        if item is not None:
            node.release(item)
    node.sync()
    for h in range(blocked):
        node.block(f"http://h{h}.test", FOREVER)
    client = redis.Redis.from_url(url)

    def script_stats() -> tuple[int, int]:
        stats = client.info("commandstats")
        calls = usec = 0
        for name, figures in stats.items():
            if name in ("cmdstat_evalsha", "cmdstat_eval"):
                calls += int(figures["calls"])
                usec += int(figures["usec"])
        return calls, usec

    node._call(want=0)  # the blocks are told (if the tree tells them once)
    times = []
    calls0, usec0 = script_stats()
    for _ in range(calls):
        started = time.perf_counter()
        step = node._call(want=want)
        times.append(time.perf_counter() - started)
        for item in step.leased:
            node.release(item)
    calls1, usec1 = script_stats()
    beats = []
    for _ in range(20):
        c0, u0 = script_stats()
        node._call(beat=True)
        c1, u1 = script_stats()
        beats.append((u1 - u0) / max(1, c1 - c0))
    node.close()
    for key in client.scan_iter(match=f"mpc:{{{crawl}}}:*", count=1000):
        client.delete(key)
    return {
        "call_us": 1e6 * statistics.median(times),
        "redis_us": (usec1 - usec0) / max(1, calls1 - calls0),
        "beat_redis_us": statistics.median(beats),
    }


def measure(tree: Path, url: str, args: argparse.Namespace, blocked: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [
            *(sys.executable, str(HERE), "--child", url, "--hosts", str(args.hosts)),
            *("--blocked", str(blocked), "--want", str(args.want), "--calls", str(args.calls)),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
    )
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--blocked", default="0,256,1024,4096")
    parser.add_argument("--want", type=int, default=8)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--base", help="also measure this git revision, alternated")
    parser.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.child:
        figures = child(args.child, args.hosts, int(args.blocked), args.want, args.calls)
        print(json.dumps(figures))
        return
    sys.path.insert(0, str(HERE.parent.parent))
    from benchmarks import common

    counts = [int(b) for b in args.blocked.split(",")]
    with ExitStack() as stack:
        server, url, _ = common.start_redis()
        stack.callback(server.terminate)
        trees = {"this": common.ROOT}
        if args.base:
            trees["base"] = stack.enter_context(common.worktree(args.base))
        runs = common.alternated(
            trees, counts, args.repeat, lambda tree, blocked: measure(tree, url, args, blocked)
        )
    print(f"machine: {common.machine()}")
    print(
        f"one node owning {args.hosts:,} hosts, {args.want} leases a call, its best B hosts "
        f"blocked; medians of {args.repeat} alternated runs of {args.calls} calls"
        + (f"; base {args.base}" if args.base else "")
        + "\n"
    )
    print("| tree | blocked hosts B | µs a call (node) | Redis µs a call | Redis µs a heartbeat |")
    print("|---|---|---|---|---|")
    result: dict[str, Any] = {"args": vars(args), "machine": common.machine(), "runs": {}}
    for blocked in counts:
        for tree in trees:
            got = runs[tree, blocked]
            m = common.medians(got)
            result["runs"][f"{tree} {blocked}"] = {"median": m, "runs": got}
            print(
                f"| {tree} | {blocked:,} | {m['call_us']:,.0f} | {m['redis_us']:,.0f} "
                f"| {m['beat_redis_us']:,.0f} |"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
