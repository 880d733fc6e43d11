"""This tree against another revision, on two servers, runs alternated.

    python benchmarks/bench_compare.py --base REV --pages 2000 --repeat 5 [--latency 0.05] \\
        [--servers builtin,nginx,docs]

Checks ``--base`` out into a temporary git worktree (removed after), serves
the built-in test site by its own server and by Debian's nginx (and, with
``docs`` among ``--servers``, a directory of real pages by nginx), and crawls
each with both code trees in turn, ``--repeat`` rounds, so that drift on a
shared machine hits both alike.  Prints the medians: pages/s, CPU
milliseconds a page of the master and of the workers, and the median
download time; and the ratio of this tree to the base.  For a change meant
to keep behaviour and speed (a refactoring), every ratio should be 1 within
the noise that the runs' spread shows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common

FIELDS = ("pages_per_s", "master_ms", "workers_ms", "download_ms")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the git revision to compare with")
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds a page")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--analyzer", default="bs4")
    parser.add_argument(
        "--servers", default="builtin,nginx", help="of builtin, nginx and docs (--docs by nginx)"
    )
    parser.add_argument(
        "--docs",
        type=Path,
        default=common.DOCS,
        help="the directory the docs server serves (apt-get install postgresql-doc-15)",
    )
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    with ExitStack() as stack:
        trees = {"base": stack.enter_context(common.worktree(args.base)), "this": common.ROOT}
        servers = {
            name: stack.enter_context(
                common.serve(name, args.pages, args.latency, args.size, args.docs)
            )
            for name in args.servers.split(",")
        }
        for round_ in range(args.repeat):
            order = list(trees.items())
            if round_ % 2:
                order.reverse()
            for server, url in servers.items():
                for tree, root in order:
                    figures = common.crawl_figures(
                        url, args.workers, args.threads, args.analyzer, root=root
                    )
                    runs.setdefault((server, tree), []).append(figures)
                    print(server, tree, {k: round(v, 3) for k, v in figures.items()})
    print()
    print(f"machine: {common.machine()}")
    print(
        f"site: {args.pages} pages of {args.size} bytes (docs: {args.docs}), "
        f"latency {args.latency} s; "
        f"{args.workers} workers x "
        f"{args.threads} slots, --analyzer {args.analyzer}; medians of {args.repeat} "
        f"alternated runs; base {args.base}"
    )
    print()
    print(
        f"{'server':8}{'tree':6}{'pages/s':>9}{'master ms/p':>13}{'workers ms/p':>14}"
        f"{'download ms':>13}   pages/s range"
    )
    for server in servers:
        medians = {}
        for tree in trees:
            figures = runs[(server, tree)]
            medians[tree] = {f: statistics.median(r[f] for r in figures) for f in FIELDS}
            rates = [r["pages_per_s"] for r in figures]
            m = medians[tree]
            print(
                f"{server:8}{tree:6}{m['pages_per_s']:9.1f}{m['master_ms']:13.3f}"
                f"{m['workers_ms']:14.3f}{m['download_ms']:13.2f}   "
                f"{min(rates):.0f}-{max(rates):.0f}"
            )
        ratio = {f: medians["this"][f] / medians["base"][f] for f in FIELDS}
        print(
            f"{server:8}{'ratio':6}{ratio['pages_per_s']:9.2f}{ratio['master_ms']:13.2f}"
            f"{ratio['workers_ms']:14.2f}{ratio['download_ms']:13.2f}"
        )


if __name__ == "__main__":
    main()
