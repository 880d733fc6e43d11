"""What rendering pages in a browser costs (--render), and whether ``auto`` leaves real sites alone.

    python benchmarks/bench_render.py [--pages 300] [--repeat 3] [--renders 5000]
                                      [--parts speed,memory,auto]

speed: pages/s of one worker (4 slots), and the CPU a page, rendered against
    plain, medians of --repeat alternated runs.  Rendered: the built-in
    site's single-page application (``TestSite(app=N)``: every page an empty
    shell whose script fetches its data, then builds its text and links),
    ``--render auto``.  Plain: as many static pages of the built-in site, of
    about the same size, ``--render never``.  The CPU is the worker
    process's and, rendered, the browser's (Chromium's processes and
    Playwright's driver, from the worker's Renderer summary).
memory: one crawl of --renders application pages by one worker, sampling the
    memory (PSS) of its browser's processes after 100 renders and after
    each 1,000: with the default --render-restart (100) and with restarts
    off (the browser's own growth).
auto: --render auto over Debian's Python 3.11 and PostgreSQL 15 docs served
    by nginx (apt-get install nginx python3.11-doc postgresql-doc-15): the
    pages it rendered, and the crawl's pages/s against --render never.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import crawl, crawl_env, machine, nginx_dir
from mpcrawler.render.browser import descendants
from mpcrawler.testing.site import TestSite, serve_site

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")
POSTGRES_DOCS = Path("/usr/share/doc/postgresql-doc-15/html")
APP = ("--accept-regex", "/app/")  # the application's pages, not the static ones it links


def speed_run(rendered: bool, pages: int) -> dict[str, float]:
    """One crawl of ``pages`` application pages (``rendered``) or static pages."""
    site = TestSite(pages=pages if not rendered else 50, size=1_200, app=pages)
    with serve_site(site) as server:
        if rendered:
            url, extra = server.url + "app/", ("--render", "auto", *APP)
        else:
            url, extra = server.url, ("--render", "never")
        stats, _ = crawl(url, 1, 4, extra=extra)
    count, procs = stats["pages"], stats["processes"]
    renderer = [m for m in stats["modules"] if m["type"] == "Rendering"]
    browser_cpu = sum(m["browser_cpu_s"] for m in renderer)
    worker_cpu = sum(w["cpu_s"] for w in procs["workers"])
    return {
        "pages": count,
        "pages_per_s": count / stats["elapsed_s"],
        "worker_ms": 1000 * worker_cpu / count,
        "browser_ms": 1000 * browser_cpu / count,
        "total_ms": 1000 * (worker_cpu + browser_cpu + procs["master"]["cpu_s"]) / count,
        "rendered": sum(m["rendered"] for m in renderer),
    }


def speed(pages: int, repeat: int) -> None:
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for round_ in range(repeat):
        for rendered in (True, False) if round_ % 2 == 0 else (False, True):
            figures = speed_run(rendered, pages)
            runs[rendered].append(figures)
            print(f"round {round_ + 1} rendered={rendered}: {figures}", file=sys.stderr)
    print(f"\n## speed: 1 worker x 4 slots, {pages} pages, medians of {repeat} alternated runs\n")
    print("| pages | pages/s | worker CPU ms a page | browser CPU ms a page | all CPU ms a page |")
    print("|---|---|---|---|---|")
    for rendered, name in ((False, "plain (--render never)"), (True, "rendered (auto)")):
        m = {k: statistics.median(r[k] for r in runs[rendered]) for k in runs[rendered][0]}
        print(
            f"| {name} | {m['pages_per_s']:.1f} | {m['worker_ms']:.2f} | {m['browser_ms']:.2f} "
            f"| {m['total_ms']:.2f} |"
        )


def browser_memory(crawl_pid: int) -> int:
    """The PSS of the browser processes below the crawl (Chromium, Playwright's driver)."""
    total = 0
    for pid in descendants(crawl_pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"chromium" not in cmdline and b"playwright" not in cmdline:
                continue
            for line in Path(f"/proc/{pid}/smaps_rollup").read_bytes().splitlines():
                if line.startswith(b"Pss:"):
                    total += int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            continue
    return total


def memory_run(renders: int, restart: int | None) -> dict[int, float]:
    """Browser memory (MB) by renders done, sampled as the records come."""
    marks = [100, *range(1000, renders + 1, 1000)]
    site = TestSite(pages=50, size=1_200, app=renders)
    seen: dict[int, float] = {}
    with serve_site(site) as server, tempfile.TemporaryDirectory() as job:
        extra = ["--render-restart", str(restart)] if restart else []
        cmd = [
            sys.executable, "-m", "mpcrawler", "crawl", server.url + "app/", "--job-dir", job,
            "--workers", "1", "--threads", "4", "--host-concurrency", "4", "--no-robots",
            "--quiet", "--render", "auto", *APP, *extra,
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, env=crawl_env(), stdout=subprocess.DEVNULL)
        records = Path(job, "pages.jsonl")
        while proc.poll() is None and marks:
            time.sleep(0.2)
            done = records.read_bytes().count(b"\n") if records.exists() else 0
            while marks and done >= marks[0]:
                seen[marks.pop(0)] = browser_memory(proc.pid) / 2**20
                print(f"restart={restart} {done} renders: {seen}", file=sys.stderr)
        proc.wait()
    return seen


def memory(renders: int) -> None:
    print(f"\n## memory: the browser's PSS (MB) by renders, one worker, {renders} pages\n")
    for restart, name in ((None, "default (a new browser every 100)"), (10**6, "never restarted")):
        seen = memory_run(renders, restart)
        print(f"- {name}: " + ", ".join(f"{n}: {mb:.0f}" for n, mb in seen.items()))


def auto() -> None:
    print("\n## auto on real sites: nginx, 2 workers x 4 slots, lxml\n")
    print("| site | pages | rendered by auto | pages/s auto | pages/s never |")
    print("|---|---|---|---|---|")
    for name, docs in (("Python 3.11 docs", PYTHON_DOCS), ("PostgreSQL 15 docs", POSTGRES_DOCS)):
        if not docs.exists():
            print(f"| {name} | missing: apt-get install the docs | | | |")
            continue
        figures: dict[str, Any] = {}
        with nginx_dir(docs) as url:
            for mode in ("auto", "never"):
                stats, _ = crawl(url, 2, 4, extra=("--render", mode, "--analyzer", "lxml"))
                rendered = sum(m.get("rendered", 0) for m in stats["modules"])
                figures[mode] = (stats["pages"], rendered, stats["pages"] / stats["elapsed_s"])
        (pages, rendered, auto_rate), (_, _, never_rate) = figures["auto"], figures["never"]
        print(f"| {name} | {pages} | {rendered} | {auto_rate:.1f} | {never_rate:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--renders", type=int, default=5000)
    parser.add_argument("--parts", default="speed,memory,auto")
    args = parser.parse_args()
    print(f"# bench_render: {machine()}")
    parts = args.parts.split(",")
    if "speed" in parts:
        speed(args.pages, args.repeat)
    if "memory" in parts:
        memory(args.renders)
    if "auto" in parts:
        auto()


if __name__ == "__main__":
    main()
