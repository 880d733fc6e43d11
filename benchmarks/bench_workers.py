"""Pages per second against the number of worker processes.

    python benchmarks/bench_workers.py --workers 1,2,4,8,16 --threads 4 --pages 2000 \\
        --latency 0 --size 30000 --repeat 3 --out results/

Starts the built-in test site in its own process, then crawls it R times per
worker count, the counts interleaved so that drift hits all of them alike.
Each crawl is a real ``python -m mpcrawler crawl`` process, watched with
psutil.  For each worker count it reports the median pages/s, the speedup
over the first count, the efficiency against the ideal (workers x threads /
latency, when latency > 0), the CPU used by the master and by the workers
(in cores: CPU seconds over wall seconds), the peak RSS of the master and of
the largest worker, and how much the workers' RSS grew over the crawl.
Writes results.json, results.csv and workers.png into DIR and prints the
table.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import crawl, machine
from mpcrawler.cli import site_process


def crawl_once(url: str, workers: int, threads: int) -> dict[str, Any]:
    stats, watched = crawl(url, workers, threads, watch=True)
    assert watched is not None
    procs = stats["processes"]
    # RSS growth of each worker from a fifth of the way through to its end
    growth = []
    for samples in watched.worker_rss_mb.values():
        if len(samples) >= 5:
            growth.append(samples[-1][1] - samples[len(samples) // 5][1])
    return {
        "pages": stats["pages"],
        "pages_per_s": stats["pages"] / stats["elapsed_s"],
        "cpu_master": procs["master"]["cpu_s"] / stats["elapsed_s"],
        "cpu_workers": sum(w["cpu_s"] for w in procs["workers"]) / stats["elapsed_s"],
        "rss_master_mb": procs["master"]["max_rss_mb"],
        "rss_worker_mb": max(w["max_rss_mb"] for w in procs["workers"]),
        "worker_rss_growth_mb": max(growth) if growth else 0.0,
    }


def plot(rows: list[dict[str, Any]], args: argparse.Namespace, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workers = [r["workers"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(workers, [r["pages_per_s"] for r in rows], "o-", label="mpcrawler (median)")
    if args.latency > 0:
        ax.plot(
            workers,
            [w * args.threads / args.latency for w in workers],
            "--",
            label="ideal: workers x threads / latency",
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(workers, [str(w) for w in workers])
    ax.set_xlabel(f"worker processes ({args.threads} download slots each)")
    ax.set_ylabel("pages / s")
    ax.set_title(
        f"{args.pages} pages of {args.size // 1000} KB, latency {args.latency * 1000:g} "
        f"ms, {os.cpu_count()} CPUs"
    )
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", default="1,2,4,8,16")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default="bench-results")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs: dict[int, list[dict[str, Any]]] = {w: [] for w in counts}
    with site_process(args.pages, args.latency, args.size) as url:
        for _ in range(args.repeat):
            for w in counts:
                runs[w].append(crawl_once(url, w, args.threads))
    rows = []
    for w in counts:
        row: dict[str, Any] = {"workers": w, "threads": args.threads}
        for key in runs[w][0]:
            row[key] = statistics.median(r[key] for r in runs[w])
        row["runs_pages_per_s"] = [round(r["pages_per_s"], 1) for r in runs[w]]
        row["speedup"] = row["pages_per_s"] / 1.0
        rows.append(row)
    base = rows[0]["pages_per_s"]
    for row in rows:
        row["speedup"] = row["pages_per_s"] / base
        ideal = row["workers"] * args.threads / args.latency if args.latency > 0 else None
        row["ideal"] = ideal
        row["efficiency"] = row["pages_per_s"] / ideal if ideal else None
    header = (
        f"{'workers':>7}{'pages/s':>9}{'speedup':>9}{'effic.':>8}{'CPU master':>11}"
        f"{'CPU workers':>12}{'RSS master':>11}{'RSS worker':>11}{'worker growth':>14}"
    )
    lines = [
        f"machine: {machine()}",
        f"site: {args.pages} pages of {args.size} bytes, latency {args.latency} s; "
        f"{args.threads} slots per worker; medians of {args.repeat} interleaved runs",
        "",
        header,
    ]
    for r in rows:
        eff = f"{r['efficiency']:.2f}" if r["efficiency"] is not None else "-"
        lines.append(
            f"{r['workers']:>7}{r['pages_per_s']:>9.1f}{r['speedup']:>9.2f}{eff:>8}"
            f"{r['cpu_master']:>11.2f}{r['cpu_workers']:>12.2f}"
            f"{r['rss_master_mb']:>9.0f}MB{r['rss_worker_mb']:>9.0f}MB"
            f"{r['worker_rss_growth_mb']:>12.1f}MB"
        )
    table = "\n".join(lines)
    print(table)
    (out / "table.txt").write_text(table + "\n")
    (out / "results.json").write_text(
        json.dumps({"args": vars(args), "machine": machine(), "rows": rows}, indent=2)
    )
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(
            f, fieldnames=[k for k in rows[0] if k != "runs_pages_per_s"], extrasaction="ignore"
        )
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, args, out / "workers.png")


if __name__ == "__main__":
    main()
