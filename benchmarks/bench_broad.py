"""A broad crawl over many hosts: what each host more costs the master.

    python benchmarks/bench_broad.py --hosts 10,1000,10000,100000 --pages 40000 --repeat 1 \
        [--base REV] [crawl options...]

One server process, bound to 0.0.0.0, answers for every 127.X.Y.Z (the
whole of 127/8 is loopback), so a host costs no setup
(:mod:`mpcrawler.testing.broad`).  Page i (``/p/i``) lives on host
``i % hosts``, links to its children ``i*10+1 .. i*10+10`` (each on its own
host) and answers with about 2 KB; each host has its own robots.txt.  The crawl: ``--scope any``,
``--allow-private-networks``, robots.txt on, 2 workers x 8 threads,
``--max-pages``.  Reported per host count: pages/s, the master's peak RSS
and CPU a page, the workers' CPU a page, and the TCP connections the
server accepted a request (1.0: none reused).

Issue 28's "before" table; the same command measures its "after".
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common
from mpcrawler.testing.broad import BroadServer, host_of


def _vm_hwm_mb(pid: int) -> float:
    """The peak RSS of process ``pid`` (its VmHWM), 0 once it is gone.  Not
    stats.json's: an older tree reports ``ru_maxrss``, which keeps the peak
    of this benchmark's own process across the crawl's exec."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def one_crawl(hosts: int, pages: int, root: Path, extra: list[str]) -> dict[str, float]:
    server = BroadServer(hosts, pages, count_hits=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    job = tempfile.mkdtemp(prefix="bench-broad-")
    try:
        port = server.port
        with socket.create_connection((host_of(0), port), timeout=5):
            pass  # it answers on 127.x
        server.reset_counts()
        cmd = [
            *(sys.executable, "-m", "mpcrawler", "crawl", server.url(0)),
            *("--job-dir", job, "--workers", "2", "--threads", "8", "--quiet"),
            *("--scope", "any", "--allow-private-networks", "--max-pages", str(pages)),
            *extra,
        ]
        started = time.monotonic()
        crawl = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, env=common.crawl_env(root), cwd=root
        )
        peak_mb = 0.0
        while crawl.poll() is None:  # the master's own high-water mark, as it goes
            peak_mb = max(peak_mb, _vm_hwm_mb(crawl.pid))
            time.sleep(0.2)
        if crawl.returncode:
            raise SystemExit(f"the crawl failed (exit {crawl.returncode}): {cmd}")
        wall = time.monotonic() - started
        stats = json.loads(Path(job, "stats.json").read_text())
        job_json = Path(job, "job.json").stat().st_size
        done, procs = stats["pages"], stats["processes"]
        return {
            "pages": done,
            "pages_per_s": done / stats["elapsed_s"],
            "wall_s": wall,
            "master_rss_mb": peak_mb,
            "master_ms": 1000 * procs["master"]["cpu_s"] / done,
            "workers_ms": 1000 * sum(w["cpu_s"] for w in procs["workers"]) / done,
            "connections_a_request": server.connections / max(1, server.requests),
            "hosts_in_memory": stats.get("hosts", {}).get("in_memory", float("nan")),
            "job_json_kb": job_json / 1024,
        }
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(job, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", default="10,1000,10000,100000")
    parser.add_argument("--pages", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--base", help="also crawl with this git revision, alternated")
    parser.add_argument("--json", help="also write the results here")
    args, extra = parser.parse_known_args()  # the rest goes to every crawl
    counts = [int(h) for h in args.hosts.split(",")]
    with ExitStack() as stack:
        trees = {"this": common.ROOT}
        if args.base:
            trees["base"] = stack.enter_context(common.worktree(args.base))
        runs = common.alternated(
            trees,
            counts,
            args.repeat,
            lambda tree, hosts: one_crawl(hosts, args.pages, tree, extra),
        )
    print(f"machine: {common.machine()}")
    print(
        f"{args.pages} pages of about 2 KB, --scope any, robots.txt on, 2 workers x 8 threads"
        + (f" {' '.join(extra)}" if extra else "")
        + f"; medians of {args.repeat} alternated runs"
        + (f"; base {args.base}" if args.base else "")
        + "\n"
    )
    print(
        "| tree | hosts | pages | pages/s | master peak RSS MB | master ms/page | workers ms/page "
        "| connections a request | hosts in memory | job.json KB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    result: dict[str, Any] = {"args": vars(args), "machine": common.machine(), "runs": {}}
    for hosts in counts:
        for tree in trees:
            got = runs[tree, hosts]
            m = common.medians(got)
            result["runs"][f"{tree} {hosts}"] = {"median": m, "runs": got}
            print(
                f"| {tree} | {hosts:,} | {m['pages']:.0f} | {m['pages_per_s']:.1f} "
                f"| {m['master_rss_mb']:.1f} | {m['master_ms']:.3f} | {m['workers_ms']:.3f} "
                f"| {m['connections_a_request']:.2f} | {m['hosts_in_memory']:.0f} "
                f"| {m['job_json_kb']:.0f} |"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
