"""Worker layouts at 50 ms latency, on two servers: is each download the
server's latency, and does the crawl reach its ideal?

    python benchmarks/bench_layouts.py --servers builtin,nginx --concurrency 16,64 \\
        --pages 2000 --latency 0.05 --repeat 3

For each server (the built-in site's own Python server, and Debian's nginx
serving a static copy with the echo module's ``echo_sleep``) and each
concurrency C, crawls with the layouts 4 x C/4, 2 x C/2 and 8 x C/8
(workers x slots), and each layout once more without latency, which gives
its CPU-bound rate.  The ideal is min(C / latency, the CPU-bound rate).
Reports, per configuration, the median pages/s, the efficiency against
that ideal, the median download time (the records' ``elapsed_ms``) and CPU
milliseconds a page of the master and of the workers.  Runs are
interleaved, ``--repeat`` times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import crawl_figures, machine, serve


def layouts(concurrency: int) -> list[tuple[int, int]]:
    return [(w, concurrency // w) for w in (4, 2, 8) if concurrency % w == 0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--servers", default="builtin,nginx")
    parser.add_argument("--concurrency", default="16,64")
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--analyzer", default="bs4")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    servers = args.servers.split(",")
    configs = [
        (server, c, w, t, lat)
        for server in servers
        for c in (int(x) for x in args.concurrency.split(","))
        for w, t in layouts(c)
        for lat in (args.latency, 0.0)
    ]
    runs: dict[tuple[Any, ...], list[dict[str, float]]] = {cfg: [] for cfg in configs}
    with ExitStack() as stack:
        urls = {
            (server, lat): stack.enter_context(serve(server, args.pages, lat, args.size))
            for server in servers
            for lat in (args.latency, 0.0)
        }
        for r in range(args.repeat):
            for cfg in configs:
                server, c, w, t, lat = cfg
                result = crawl_figures(urls[server, lat], w, t, args.analyzer)
                runs[cfg].append(result)
                print(
                    f"run {r + 1}: {server} {w}x{t} latency {lat}: "
                    f"{result['pages_per_s']:.0f} pages/s, download {result['download_ms']:.1f} ms",
                    file=sys.stderr,
                    flush=True,
                )
    print(f"machine: {machine()}")
    print(
        f"{args.pages} pages of {args.size} bytes at {args.latency * 1000:.0f} ms; "
        f"--analyzer {args.analyzer}; medians of {args.repeat} interleaved runs\n"
    )
    print(
        "| server | C | layout | pages/s | ideal | efficiency | download ms "
        "| master ms/page | workers ms/page |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for cfg in configs:
        server, c, w, t, lat = cfg
        if not lat:
            continue
        m = {k: statistics.median(r[k] for r in runs[cfg]) for k in runs[cfg][0]}
        cpu_bound = statistics.median(r["pages_per_s"] for r in runs[server, c, w, t, 0.0])
        ideal = min(c / lat, cpu_bound)
        bound = "latency" if c / lat <= cpu_bound else "CPU"
        rows.append({"server": server, "C": c, "layout": f"{w}x{t}", **m, "ideal": ideal})
        print(
            f"| {server} | {c} | {w} x {t} | {m['pages_per_s']:.1f} | {ideal:.0f} ({bound}) "
            f"| {m['pages_per_s'] / ideal:.2f} | {m['download_ms']:.1f} "
            f"| {m['master_ms']:.3f} | {m['workers_ms']:.3f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
