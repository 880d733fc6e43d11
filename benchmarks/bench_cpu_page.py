"""CPU a page on two real sites, mpcrawler beside GNU wget, runs alternated.

    python benchmarks/bench_cpu_page.py [--repeat 5] [--base REV] \
        [--downloaders http,curl] [--base-downloaders http] [--analyzer lxml]

nginx (``common.nginx_dir``) serves Debian's PostgreSQL 15 docs
(``apt-get install postgresql-doc-15``, 1,170 pages) and Python 3.11 docs
(``apt-get install python3.11-doc``).  Each is crawled whole, ``--repeat``
times, alternating:

- ``wget -r -l inf -e robots=off -nv -P DIR URL``: one process, one
  connection, every page stored to disk; its files are its pages;
- mpcrawler with each ``--downloaders`` (``--analyzer``, 2 workers x 8
  slots, no robots.txt), and the tree of ``--base REV`` too (the same
  downloaders), in the same rounds: before and after.

CPU is user and system time, in milliseconds a page, medians: wget's one
process (``RUSAGE_CHILDREN`` once it has ended), mpcrawler's master and
workers (their own figures in stats.json; the forkserver's imports before
the workers fork are not in it), and the workers' alone.  The server's CPU
is in neither.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common

SITES = {
    "PostgreSQL 15 docs": Path("/usr/share/doc/postgresql-doc-15/html"),
    "Python 3.11 docs": Path("/usr/share/doc/python3.11/html"),
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_wget(url: str) -> dict[str, float]:
    out = Path(tempfile.mkdtemp(prefix="bench-wget-"))
    try:
        before, start = children_cpu(), time.monotonic()
        subprocess.run(
            ["wget", "-r", "-l", "inf", "-e", "robots=off", "-nv", "-P", str(out), url],
            check=False,  # (8: some link answered an error; the rest is fetched)
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        cpu, wall = children_cpu() - before, time.monotonic() - start
        pages = sum(1 for p in out.rglob("*") if p.is_file())
        return {"pages": pages, "all_ms": 1000 * cpu / pages, "pages_per_s": pages / wall}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def run_mpcrawler(url: str, root: Path, analyzer: str, downloader: str) -> dict[str, float]:
    job = tempfile.mkdtemp(prefix="bench-mpcrawler-")
    extra = ("--analyzer", analyzer, *common.downloader_option(downloader))
    cmd = [sys.executable, "-m", "mpcrawler", *common.crawl_command(url, job, 2, 8, extra)]
    try:
        subprocess.run(
            cmd, check=True, stdout=subprocess.DEVNULL, env=common.crawl_env(root), cwd=root
        )
        stats = json.loads(Path(job, "stats.json").read_text())
        pages = stats["pages"]
        workers = sum(w["cpu_s"] for w in stats["processes"]["workers"])
        return {
            "pages": pages,
            "all_ms": 1000 * (stats["processes"]["master"]["cpu_s"] + workers) / pages,
            "workers_ms": 1000 * workers / pages,
            "pages_per_s": pages / stats["elapsed_s"],
        }
    finally:
        shutil.rmtree(job, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--analyzer", default="lxml")
    parser.add_argument("--downloaders", default="http,curl")
    parser.add_argument("--base", help="also crawl with this git revision, alternated")
    parser.add_argument(
        "--base-downloaders",
        help="the base's downloaders, if not --downloaders' (a tree from before one existed)",
    )
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    for site, path in SITES.items():
        if not (path / "index.html").is_file():
            parser.error(f"{site}: no {path}/index.html (see the docstring)")
    if shutil.which("wget") is None:
        parser.error("wget is not installed (apt-get install wget)")
    downloaders = args.downloaders.split(",")
    results: dict[str, dict[str, list[dict[str, float]]]] = {}
    with contextlib.ExitStack() as stack:
        trees = {"mpcrawler": common.ROOT}
        if args.base:
            trees["base"] = stack.enter_context(common.worktree(args.base))
        base_downloaders = (args.base_downloaders or args.downloaders).split(",")
        of_tree = {"mpcrawler": downloaders, "base": base_downloaders}
        variants = ["wget", *(f"{t} {d}" for t in trees for d in of_tree[t])]
        for site, path in SITES.items():
            url = stack.enter_context(common.nginx_dir(path))
            runs = results.setdefault(site, {v: [] for v in variants})
            for round_ in range(args.repeat):
                for variant in variants if round_ % 2 == 0 else variants[::-1]:
                    if variant == "wget":
                        figures = run_wget(url)
                    else:
                        tree, downloader = variant.split(" ")
                        figures = run_mpcrawler(url, trees[tree], args.analyzer, downloader)
                    runs[variant].append(figures)
                    print(f"{site}, round {round_ + 1}, {variant}: {figures}", file=sys.stderr)
    print(f"machine: {common.machine()}")
    print(
        f"mpcrawler: --analyzer {args.analyzer}, 2 workers x 8 slots, --no-robots; "
        f"medians of {args.repeat} alternated runs; CPU of every process of each\n"
    )
    print("| site | crawler | pages | pages/s | CPU ms a page | workers ms a page | x wget |")
    print("|---|---|---|---|---|---|---|")
    table: dict[str, dict[str, dict[str, float]]] = {}
    for site, runs in results.items():
        medians = {v: common.medians(r) for v, r in runs.items()}
        table[site] = medians
        wget = medians["wget"]["all_ms"]
        for variant, m in medians.items():
            name = variant if variant == "wget" else f"{variant} ({args.analyzer})"
            workers = f"{m['workers_ms']:.3f}" if "workers_ms" in m else ""
            print(
                f"| {site} | {name} | {m['pages']:.0f} | {m['pages_per_s']:.1f} | "
                f"{m['all_ms']:.3f} | {workers} | {m['all_ms'] / wget:.2f} |"
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": table}, indent=1))


if __name__ == "__main__":
    main()
