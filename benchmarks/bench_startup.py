"""A crawl's start and end, beside its pages: when the first worker is
ready, how long after its last page the crawl ends, the crawl's own
elapsed time and the command's, runs alternated.

    python benchmarks/bench_startup.py [--repeat 7] [--base REV] \\
        [--downloader curl] [--analyzer lxml] [--docs DIR]

nginx serves ``--docs`` (Debian's PostgreSQL 15 docs by default: ``apt-get
install postgresql-doc-15``); each tree crawls it whole (``--workers 2
--threads 8``, no robots.txt), ``--repeat`` times, alternating with the
tree of ``--base REV``.  From each crawl's log file: the first worker's
Hello after the command started and after the crawl started ("crawl
started": the master's set-up done), and "crawl finished" after the last
page's fetch (its record's ``fetched_at``); from its stats.json, its
elapsed time (what pages/s divides by); from this process, the command's
whole time, start to exit.  A short crawl's rate is made at its edges
too: until a worker is ready nothing is fetched, and the crawl has not
ended until its workers have (a curl worker slept a second there).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common

FIGURES = ("hello_after_command", "hello_after_start", "end_after_last", "elapsed", "command")


def _when(line: str) -> float:
    """The time of a log line (the log's local time, to the millisecond)."""
    return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def crawl(url: str, root: Path, extra: tuple[str, ...]) -> dict[str, float]:
    """One crawl with the tree ``root``: the figures, in milliseconds."""
    job = tempfile.mkdtemp(prefix="bench-startup-")
    log = Path(job) / "crawl.log"
    command = common.crawl_command(url, str(Path(job) / "job"), 2, 8, extra)
    try:
        began = time.time()
        subprocess.run(
            [sys.executable, "-m", "mpcrawler", *command, "--log-file", str(log)],
            check=True,
            stdout=subprocess.DEVNULL,
            env=common.crawl_env(root),
            cwd=root,
        )
        ended = time.time()
        lines = log.read_text(encoding="utf-8").splitlines()
        start = next(_when(line) for line in lines if "crawl started" in line)
        hello = min(_when(line) for line in lines if "started (pid" in line)
        finished = next(_when(line) for line in lines if "crawl finished" in line)
        with open(Path(job) / "job" / "pages.jsonl", encoding="utf-8") as f:
            last = max(json.loads(line)["fetched_at"] for line in f)
        stats = json.loads((Path(job) / "job" / "stats.json").read_text())
        return {
            "hello_after_command": 1000 * (hello - began),
            "hello_after_start": 1000 * (hello - start),
            "end_after_last": 1000 * (finished - last),
            "elapsed": 1000 * stats["elapsed_s"],
            "command": 1000 * (ended - began),
        }
    finally:
        shutil.rmtree(job, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--base", help="also crawl with this git revision, alternated")
    parser.add_argument("--downloader", default="curl")
    parser.add_argument("--analyzer", default="lxml")
    parser.add_argument("--docs", type=Path, default=Path("/usr/share/doc/postgresql-doc-15/html"))
    args = parser.parse_args()
    extra = ("--downloader", args.downloader, "--analyzer", args.analyzer)
    extra += ("--allow-private-networks",)
    with ExitStack() as stack:
        url = stack.enter_context(common.nginx_dir(args.docs))
        trees = {"this": common.ROOT}
        if args.base:
            trees["base"] = stack.enter_context(common.worktree(args.base))
        runs = common.alternated(trees, [0], args.repeat, lambda tree, _: crawl(url, tree, extra))
    print(common.machine())
    print(
        f"{args.docs}, --downloader {args.downloader} --analyzer {args.analyzer}, 2 workers x 8 "
        f"slots, --no-robots; medians of {args.repeat} alternated runs; ms"
    )
    print()
    print(
        "| tree | first worker's Hello after the command's start | after the crawl's start "
        "| crawl finished after its last page | elapsed (stats.json) "
        "| the command, start to exit |"
    )
    print("|---|---|---|---|---|---|")
    for name in trees:
        figures = common.medians(runs[(name, 0)])
        print(f"| {name} | " + " | ".join(f"{figures[k]:.0f}" for k in FIGURES) + " |")


if __name__ == "__main__":
    main()
