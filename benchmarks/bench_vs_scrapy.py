"""mpcrawler against Scrapy on the same site, runs alternated.

    python benchmarks/bench_vs_scrapy.py --concurrency 16 --pages 2000 --latency 0 --repeat 3

Starts the built-in test site in its own process, then crawls it R times
with each crawler, alternating: mpcrawler with ``--workers`` processes
(default: the CPU count) sharing ``--concurrency`` download slots, and an
equivalent Scrapy spider (``scrapy_spider.py``) with CONCURRENT_REQUESTS at
``--concurrency``.  Both: same scope, robots.txt off, no delays.  Rates are
each crawler's own: pages over the time from its start to its end.  Prints
both medians, their ratio and, with latency, each one's efficiency against
the ideal (concurrency / latency).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, crawl, machine
from mpcrawler.cli import site_process


def run_mpcrawler(url: str, concurrency: int, workers: int) -> tuple[int, float]:
    stats, _ = crawl(url, workers, max(1, concurrency // workers))
    return stats["pages"], stats["pages"] / stats["elapsed_s"]


def run_scrapy(url: str, concurrency: int) -> tuple[int, float]:
    out = tempfile.mktemp(prefix="bench-scrapy-", suffix=".jsonl")
    try:
        proc = subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "scrapy_spider.py"),
                url,
                "--concurrency",
                str(concurrency),
                "--out",
                out,
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        stats = json.loads(proc.stdout.strip().splitlines()[-1])
        return stats["pages"], stats["pages"] / stats["elapsed_s"]
    finally:
        Path(out).unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"mpcrawler": [], "scrapy": []}
    pages: dict[str, list[int]] = {"mpcrawler": [], "scrapy": []}
    with site_process(args.pages, args.latency, args.size) as url:
        for _ in range(args.repeat):
            n, rate = run_mpcrawler(url, args.concurrency, args.workers)
            pages["mpcrawler"].append(n)
            rates["mpcrawler"].append(rate)
            n, rate = run_scrapy(url, args.concurrency)
            pages["scrapy"].append(n)
            rates["scrapy"].append(rate)
    ideal = args.concurrency / args.latency if args.latency > 0 else None
    print(f"machine: {machine()}")
    print(
        f"site: {args.pages} pages of {args.size} bytes, latency {args.latency} s; "
        f"concurrency {args.concurrency}; medians of {args.repeat} alternated runs\n"
    )
    print(
        f"{'crawler':<12}{'pages':>8}{'pages/s':>10}{'runs (pages/s)':>34}"
        + (f"{'efficiency':>12}" if ideal else "")
    )
    result = {"args": vars(args), "machine": machine(), "ideal": ideal}
    for name in ("mpcrawler", "scrapy"):
        median = statistics.median(rates[name])
        runs = " ".join(f"{r:.0f}" for r in rates[name])
        line = f"{name:<12}{max(pages[name]):>8}{median:>10.1f}{runs:>34}"
        if ideal:
            line += f"{median / ideal:>12.2f}"
        print(line)
        result[name] = {"median": median, "runs": rates[name], "pages": pages[name]}
    ratio = statistics.median(rates["mpcrawler"]) / statistics.median(rates["scrapy"])
    print(f"\nmpcrawler / scrapy = {ratio:.2f}x")
    result["ratio"] = ratio
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
