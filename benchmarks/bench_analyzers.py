"""The two built-in analyzers, on two servers, in one run.

    python benchmarks/bench_analyzers.py --pages 2000 --workers 2 --threads 4 --repeat 3

Serves the built-in test site twice: by its own Python server and by Debian's
nginx from a static copy (``common.nginx_site``), so one server's quirks
cannot hide a slowdown.  Crawls each with ``--analyzer bs4`` and ``--analyzer
lxml``, the four variants interleaved ``--repeat`` times, and prints medians:
pages/s, CPU milliseconds a page for the master and for the workers, and the
median download time of a page (the records' ``elapsed_ms``).
"""

from __future__ import annotations

import statistics
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import crawl_figures, machine, serve, site_parser


def main() -> None:
    parser = site_parser(__doc__)
    args = parser.parse_args()
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    with ExitStack() as stack:
        servers = {
            name: stack.enter_context(serve(name, args.pages, 0.0, args.size))
            for name in ("builtin", "nginx")
        }
        for _ in range(args.repeat):
            for server, url in servers.items():
                for analyzer in ("bs4", "lxml"):
                    result = crawl_figures(url, args.workers, args.threads, analyzer)
                    runs.setdefault((server, analyzer), []).append(result)
    print(f"machine: {machine()}")
    print(
        f"site: {args.pages} pages of {args.size} bytes, no latency; {args.workers} workers x "
        f"{args.threads} slots; medians of {args.repeat} interleaved runs\n"
    )
    print(
        f"{'server':<8}{'analyzer':<9}{'pages/s':>9}{'master ms/p':>12}{'workers ms/p':>13}"
        f"{'download ms':>12}"
    )
    for (server, analyzer), results in runs.items():
        med: dict[str, Any] = {k: statistics.median(r[k] for r in results) for k in results[0]}
        print(
            f"{server:<8}{analyzer:<9}{med['pages_per_s']:>9.1f}{med['master_ms']:>12.3f}"
            f"{med['workers_ms']:>13.3f}{med['download_ms']:>12.2f}"
        )


if __name__ == "__main__":
    main()
