"""What --metrics-port costs: crawls with and without it, runs alternated,
on the built-in site and on nginx.

    python benchmarks/bench_metrics.py --pages 2000 --repeat 5

With the endpoint on, a thread of this script scrapes /metrics every
``--scrape`` seconds (Prometheus's default is 15 s; 1 s is harsher), as a
monitoring server would.  Prints the medians of pages/s and the CPU
milliseconds a page of the master and of the workers, and the ratios.
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import sys
import threading
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common

FIELDS = ("pages_per_s", "master_ms", "workers_ms")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scraper(port: int, every: float, stop: threading.Event) -> None:
    while not stop.wait(every):
        with contextlib.suppress(OSError):  # not up yet, or over
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()


def run(url: str, layout: tuple[int, int], metrics: bool, every: float) -> dict[str, float]:
    if not metrics:
        return common.crawl_figures(url, *layout, "bs4")
    port, stop = free_port(), threading.Event()
    thread = threading.Thread(target=scraper, args=(port, every, stop), daemon=True)
    thread.start()
    try:
        return common.crawl_figures(url, *layout, "bs4", ("--metrics-port", str(port)))
    finally:
        stop.set()
        thread.join()


def main() -> None:
    parser = common.site_parser(__doc__)
    parser.add_argument("--scrape", type=float, default=1.0, help="seconds between scrapes")
    args = parser.parse_args()
    layout = (args.workers, args.threads)
    print(common.machine())
    print(
        f"{args.pages} pages of {args.size} bytes, {args.workers} workers x {args.threads} "
        f"slots, scraped every {args.scrape:g} s; medians of {args.repeat} alternated runs\n"
    )
    print("| server | metrics | pages/s | master ms a page | workers ms a page |")
    print("|---|---|---|---|---|")
    for server in ("builtin", "nginx"):
        with common.serve(server, args.pages, 0.0, args.size) as url:
            runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
            for n in range(args.repeat):
                for metrics in (n % 2 == 0, n % 2 == 1):
                    runs[metrics].append(run(url, layout, metrics, args.scrape))
            medians = {
                m: {f: statistics.median(r[f] for r in runs[m]) for f in FIELDS} for m in runs
            }
            for metrics in (False, True):
                row = medians[metrics]
                print(
                    f"| {server} | {'on' if metrics else 'off'} | {row['pages_per_s']:.1f} | "
                    f"{row['master_ms']:.3f} | {row['workers_ms']:.3f} |"
                )
            ratio = {f: medians[True][f] / medians[False][f] for f in FIELDS}
            print(
                f"| {server} | ratio | {ratio['pages_per_s']:.2f} | {ratio['master_ms']:.2f} | "
                f"{ratio['workers_ms']:.2f} |"
            )


if __name__ == "__main__":
    main()
