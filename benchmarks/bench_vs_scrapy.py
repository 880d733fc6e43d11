"""mpcrawler against Scrapy on the same site, runs alternated.

    python benchmarks/bench_vs_scrapy.py --server nginx --concurrency 16 --pages 2000 \\
        --latency 0 --analyzers bs4,lxml --repeat 3 [--docs DIR] [--base REV] \\
        [--downloaders http,curl] [--base-downloaders http]

Serves the built-in test site (``--server builtin``: its own Python server,
in a child process) or a static copy of it (``--server nginx``: Debian's
nginx, ``common.nginx_site``), then crawls it R times with each variant,
alternating: mpcrawler with each ``--analyzers`` (``--workers`` processes
sharing ``--concurrency`` download slots) and an equivalent Scrapy spider
(``scrapy_spider.py``) with CONCURRENT_REQUESTS at ``--concurrency``.  Both:
same scope, robots.txt off, no delays.  Rates are each crawler's own: pages
over the time from its start to its end.  For each variant: the median
pages/s, the ratio to Scrapy, CPU milliseconds a page (mpcrawler: master and
workers apart; Scrapy: its one process), the median download time and, with
latency, the efficiency against the ideal (concurrency / latency).  With
``--docs DIR``, nginx serves that directory of real pages instead (the
PostgreSQL docs: ``apt-get install postgresql-doc-15``).  With ``--base
REV``, that revision crawls too (each analyzer, from a git worktree), in the
same rounds: before and after, against the same Scrapy runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common
from benchmarks.common import ROOT, crawl_figures, machine, serve


def run_scrapy(url: str, concurrency: int) -> dict[str, float]:
    out = tempfile.mktemp(prefix="bench-scrapy-", suffix=".jsonl")
    try:
        proc = subprocess.run(
            [
                *(sys.executable, str(ROOT / "benchmarks" / "scrapy_spider.py"), url),
                *("--concurrency", str(concurrency), "--out", out),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        stats = json.loads(proc.stdout.strip().splitlines()[-1])
        with open(out, encoding="utf-8") as f:
            times = [json.loads(line)["download_ms"] for line in f]
        return {
            "pages": stats["pages"],
            "pages_per_s": stats["pages"] / stats["elapsed_s"],
            "master_ms": 1000 * stats["cpu_s"] / stats["pages"],
            "workers_ms": 0.0,
            "download_ms": statistics.median(times) if times else 0.0,
        }
    finally:
        Path(out).unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--server", choices=("builtin", "nginx"), default="builtin")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--analyzers", default="bs4", help="mpcrawler variants, e.g. bs4,lxml")
    parser.add_argument(
        "--docs",
        type=Path,
        help="serve this directory of HTML (its index.html is the seed) with nginx instead "
        "of the built-in site, e.g. /usr/share/doc/postgresql-doc-15/html "
        "(apt-get install postgresql-doc-15)",
    )
    parser.add_argument(
        "--base", help="also crawl with this git revision (each analyzer), alternated with the rest"
    )
    parser.add_argument(
        "--downloaders",
        default="http",
        help="mpcrawler's downloaders, e.g. http,curl (each with each analyzer, the base too)",
    )
    parser.add_argument(
        "--base-downloaders",
        help="the base's downloaders, if not --downloaders' (a tree from before one existed)",
    )
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.docs is not None and not (args.docs / "index.html").is_file():
        parser.error(f"--docs {args.docs}: no index.html there")
    analyzers = args.analyzers.split(",")
    trees_named = ["mpcrawler", *(["base"] if args.base else [])]
    downloaders = {
        "mpcrawler": args.downloaders.split(","),
        "base": (args.base_downloaders or args.downloaders).split(","),
    }
    names = [
        f"{tree} {a}" + ("" if d == "http" else f"/{d}")
        for tree in trees_named
        for d in downloaders[tree]
        for a in analyzers
    ]
    names.append("scrapy")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    server = "docs" if args.docs is not None else args.server
    with ExitStack() as stack:
        trees = {"mpcrawler": common.ROOT}
        if args.base:
            trees["base"] = stack.enter_context(common.worktree(args.base))
        url = stack.enter_context(
            serve(server, args.pages, args.latency, args.size, args.docs or common.DOCS)
        )
        for _ in range(args.repeat):
            for name in names:
                if name == "scrapy":
                    runs[name].append(run_scrapy(url, args.concurrency))
                    continue
                tree, variant = name.split(" ", 1)
                analyzer, _, downloader = variant.partition("/")
                runs[name].append(
                    crawl_figures(
                        url,
                        args.workers,
                        max(1, args.concurrency // args.workers),
                        analyzer,
                        ("--downloader", downloader) if downloader else (),
                        root=trees[tree],
                    )
                )
    ideal = args.concurrency / args.latency if args.latency > 0 else None
    print(f"machine: {machine()}")
    what = (
        f"nginx, {args.docs}"
        if args.docs
        else f"{args.server}, {args.pages} pages of {args.size} bytes"
    )
    print(
        f"site: {what}, latency "
        f"{args.latency} s; concurrency {args.concurrency} (mpcrawler: {args.workers} "
        f"workers); medians of {args.repeat} alternated runs\n"
    )
    head = f"{'crawler':<21}{'pages':>7}{'pages/s':>9}{'x scrapy':>9}"
    head += f"{'master ms/p':>12}{'workers ms/p':>13}{'download ms':>12}"
    print(head + (f"{'efficiency':>11}" if ideal else ""))
    result: dict[str, Any] = {"args": vars(args), "machine": machine(), "ideal": ideal}
    medians = {
        name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()
    }
    scrapy_rate = medians["scrapy"]["pages_per_s"]
    for name in names:
        m = medians[name]
        line = (
            f"{name:<21}{int(m['pages']):>7}{m['pages_per_s']:>9.1f}"
            f"{m['pages_per_s'] / scrapy_rate:>9.2f}{m['master_ms']:>12.3f}"
            f"{m['workers_ms']:>13.3f}{m['download_ms']:>12.2f}"
        )
        if ideal:
            line += f"{m['pages_per_s'] / ideal:>11.2f}"
        print(line)
        result[name] = {"median": m, "runs": runs[name]}
    print("\n(Scrapy is one process: its CPU is under master.)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
