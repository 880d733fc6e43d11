"""Layouts swept at one latency, on three servers: which layout's downloads
take longer than the server's latency?

    python benchmarks/bench_layout_sweep.py --servers aiohttp,aiohttp-cold,builtin,nginx \\
        --workers 1,2,3,4,8 --threads 1,2,4,8,16 --latency 0.05 --repeat 3

Crawls each layout (workers x threads, the host concurrency their product)
on each server, with ``--no-robots``, for ``--per-slot`` pages a slot
(within ``--min-pages`` and ``--max-pages``), and reports the median of the
records' ``elapsed_ms`` (the download time the crawler saw), its 90th
percentile, pages/s and the ideal, concurrency / latency.  A layout whose
median is more than 15% above the latency is marked: a finding.

The servers:

- ``aiohttp``: ``latency_site.py``, the reproduction of the 4 x 4 slowdown,
  with every page requested once before the sweep (it builds each page at
  its first request, in its one event loop, and keeps it);
- ``aiohttp-cold``: the same server started afresh for each crawl, as the
  reproduction ran it: each crawl pays the server's page building;
- ``builtin``: the built-in test site's own Python server;
- ``nginx``: Debian's nginx, the latency from the echo module's
  ``echo_sleep`` (``apt-get install nginx libnginx-mod-http-echo``).

``--probe`` first measures the aiohttp site without the crawler: threads of
urllib, fresh server and warmed one, the download time the client saw and
the time the server's handler took.

Rounds alternate the layouts' order, so drift on a shared machine falls on
every layout alike.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common
from benchmarks.common import crawl, downloader_option, machine, serve
from mpcrawler.testing.redis import free_port

FINDING = 1.15  # a median download this far above the latency is a finding
SITE_PAGES = 1000  # the aiohttp site's pages, as in the reproduction


@contextlib.contextmanager
def aiohttp_site(latency: float, warm: bool) -> Iterator[str]:
    """``latency_site.py`` on a free port, as its URL; with ``warm``, every
    page requested once first, so it has built them all."""
    port = free_port()
    script = Path(__file__).resolve().parent / "latency_site.py"
    proc = subprocess.Popen(
        [
            *(sys.executable, str(script), "--pages", str(SITE_PAGES)),
            *("--latency", str(latency), "--port", str(port)),
        ]
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"{url}/_stats", timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("latency_site.py did not start: pip install aiohttp") from None
                time.sleep(0.05)
        if warm:
            with ThreadPoolExecutor(32) as pool:
                for _ in pool.map(
                    lambda i: urllib.request.urlopen(f"{url}/p/{i}", timeout=30).read(),
                    range(SITE_PAGES),
                ):
                    pass
        yield f"{url}/p/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def probe(latency: float, concurrency: int, warm: bool, pages: int = 300) -> tuple[float, float]:
    """Without the crawler: ``concurrency`` threads of urllib fetch ``pages``
    distinct pages of a fresh (or warmed) aiohttp site; the median download
    time they saw, and the median time the server's handler took (its log)."""
    with aiohttp_site(latency, warm=warm) as url:
        base = url.rsplit("/p/", 1)[0]
        before = len(json.load(urllib.request.urlopen(f"{base}/_stats"))["log"])

        def get(i: int) -> float:
            start = time.monotonic()
            urllib.request.urlopen(f"{base}/p/{i}", timeout=30).read()
            return 1000 * (time.monotonic() - start)

        with ThreadPoolExecutor(concurrency) as pool:
            client = list(pool.map(get, range(pages)))
        log = json.load(urllib.request.urlopen(f"{base}/_stats"))["log"][before:]
        server = [1000 * (end - start) for _, _, start, end in log]
    return statistics.median(client), statistics.median(server)


def one_crawl(
    url: str,
    workers: int,
    threads: int,
    pages: int,
    analyzer: str,
    root: Path,
    downloader: str = "http",
) -> dict[str, Any]:
    stats, _ = crawl(
        url,
        workers,
        threads,
        extra=("--analyzer", analyzer, "--max-pages", str(pages), *downloader_option(downloader)),
        root=root,
    )
    times = sorted(stats["download_times_ms"])
    return {
        "pages": stats["pages"],
        "pages_per_s": stats["pages"] / stats["elapsed_s"],
        "median_ms": statistics.median(times),
        "p90_ms": times[int(0.9 * (len(times) - 1))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--servers", default="aiohttp,aiohttp-cold,builtin,nginx")
    parser.add_argument("--workers", default="1,2,3,4,8")
    parser.add_argument("--threads", default="1,2,4,8,16")
    parser.add_argument(
        "--layouts", help="these layouts (e.g. 4x4,3x4) instead of --workers x --threads"
    )
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--per-slot", type=int, default=20, help="pages a download slot")
    parser.add_argument("--min-pages", type=int, default=200)
    parser.add_argument("--max-pages", type=int, default=1000)
    parser.add_argument("--size", type=int, default=30_000, help="of the builtin and nginx pages")
    parser.add_argument("--analyzer", default="bs4")
    parser.add_argument("--downloader", default="http", help="http, or curl (its event loop)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--base", help="also crawl with this git revision, alternated")
    parser.add_argument(
        "--base-downloader",
        help="the base's downloader, if not --downloader's (a tree from before it existed)",
    )
    parser.add_argument(
        "--probe",
        action="store_true",
        help="first, the aiohttp site cold and warm under a plain urllib client, no crawler",
    )
    parser.add_argument(
        "--capped",
        action="store_true",
        help="also crawl each layout without latency (builtin, nginx), and rate each against "
        "the lesser of the ideal and that rate: the CPU bounds what latency cannot",
    )
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.probe:
        print("| aiohttp site | urllib threads | client median ms | server handler median ms |")
        print("|---|---|---|---|")
        for warm in (False, True):
            for concurrency in (1, 4, 8, 16):
                client, server = probe(args.latency, concurrency, warm)
                state = "warm" if warm else "cold"
                print(f"| {state} | {concurrency} | {client:.1f} | {server:.1f} |", flush=True)
        print()
    servers = args.servers.split(",")
    grid = (
        [(int(w), int(t)) for w, t in (x.split("x") for x in args.layouts.split(","))]
        if args.layouts
        else [(int(w), int(t)) for w in args.workers.split(",") for t in args.threads.split(",")]
    )
    runs: dict[tuple[str, str, int, int], list[dict[str, Any]]] = {}
    downloader_of = {"this": args.downloader, "base": args.base_downloader or args.downloader}
    with ExitStack() as stack:
        trees = {"this": common.ROOT}
        if args.base:
            trees["base"] = stack.enter_context(common.worktree(args.base))
        urls: dict[str, str] = {}
        for server in servers:
            if server == "aiohttp":
                urls[server] = stack.enter_context(aiohttp_site(args.latency, warm=True))
            elif server in ("builtin", "nginx"):
                urls[server] = stack.enter_context(
                    serve(server, args.max_pages + 1, args.latency, args.size)
                )
                if args.capped:
                    urls[server + "@0"] = stack.enter_context(
                        serve(server, args.max_pages + 1, 0.0, args.size)
                    )
        for round_ in range(args.repeat):
            order = [(tree, w, t) for tree in trees for w, t in grid]
            for server in servers + [u for u in urls if u.endswith("@0")]:
                for tree, w, t in order if round_ % 2 == 0 else order[::-1]:
                    pages = min(args.max_pages, max(args.min_pages, args.per_slot * w * t))
                    with (
                        aiohttp_site(args.latency, warm=False)
                        if server == "aiohttp-cold"
                        else contextlib.nullcontext(urls[server])
                    ) as url:
                        result = one_crawl(
                            url, w, t, pages, args.analyzer, trees[tree], downloader_of[tree]
                        )
                    runs.setdefault((tree, server, w, t), []).append(result)
                    print(
                        f"round {round_ + 1}: {tree} {server} {w}x{t}: "
                        f"{result['pages']} pages, {result['pages_per_s']:.0f} pages/s, "
                        f"median {result['median_ms']:.1f} ms",
                        file=sys.stderr,
                        flush=True,
                    )
    latency_ms = 1000 * args.latency
    print(f"machine: {machine()}")
    print(
        f"latency {latency_ms:.0f} ms, --analyzer {args.analyzer}, --downloader "
        f"{args.downloader}"
        + (f" (the base: {args.base_downloader})" if args.base and args.base_downloader else "")
        + ", --no-robots, host concurrency "
        f"= workers x threads; medians of {args.repeat} alternated runs; * = median more than "
        f"{100 * (FINDING - 1):.0f}% above the latency\n"
    )
    head = "| server | layout | pages | median ms | p90 ms | pages/s | ideal | efficiency |"
    if args.capped:
        head += " pages/s at 0 ms | capped efficiency |"
    print(("| tree " if args.base else "") + head)
    print("|---" * (8 + 2 * args.capped + bool(args.base)) + "|")
    rows = []
    measured = [k for k in runs if not k[1].endswith("@0")]
    for tree, server, w, t in sorted(
        measured, key=lambda k: (servers.index(k[1]), k[2], k[3], k[0])
    ):
        rs = runs[tree, server, w, t]
        m = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        ideal = w * t / args.latency
        flag = " *" if m["median_ms"] > FINDING * latency_ms else ""
        row = {"tree": tree, "server": server, "workers": w, "threads": t, **m, "ideal": ideal}
        line = (
            (f"| {tree} " if args.base else "")
            + f"| {server} | {w} x {t} | {m['pages']:.0f} | {m['median_ms']:.1f}{flag} "
            f"| {m['p90_ms']:.1f} | {m['pages_per_s']:.1f} | {ideal:.0f} "
            f"| {m['pages_per_s'] / ideal:.2f} |"
        )
        if (tree, server + "@0", w, t) in runs:
            rate0 = statistics.median(r["pages_per_s"] for r in runs[tree, server + "@0", w, t])
            capped = m["pages_per_s"] / min(ideal, rate0)
            row.update(rate_at_0=rate0, capped_efficiency=capped)
            line += f" {rate0:.1f} | {capped:.2f} |"
        rows.append(row)
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
