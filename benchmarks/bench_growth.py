"""Does a page cost more as the crawl grows?  Master and worker CPU a page,
pages/s and the master's peak RSS, on one host of 1,000, 10,000 and 100,000
pages of one template, and of 100,000 distinct pages.

    python benchmarks/bench_growth.py [--alike 1000,10000,100000] [--distinct 100000] \\
        [--first 1000,10000] [--size 10000] [--workers 2] [--threads 4] [--repeat 1] \\
        [--base REV] [-- OPTION...]

Each size is one crawl, with the defaults a user gets (content dedup on)
and a host concurrency of all the slots, of the built-in site served by its
own server (``serve-site``) with as many pages as the crawl takes:
``--texts alike`` (every page 19/20 one template's text, as a forum's or a
shop's pages; most pages fall in one piece of the content index) or
``--texts distinct`` (no two pages near alike).  The figures come from the
crawl's own stats.json (``getrusage`` of each process).  Options after
``--`` go to every crawl (``-- --no-dedup``: the same without the content
check).  With ``--base REV``, that revision crawls too, alternated with
this tree, round by round.  The last column is each size's master CPU a
page over the smallest alike crawl's: the issue of flat cost asks for
at most 1.2 at 100,000.

A small site and a large one differ in more than the crawl's length: each
page links to pages chosen at random among the site's, so on a site of
1,000 pages most links were met before (the worker resolves them from its
memo and does not send them again, the master admits few), while on a
site of 100,000 nearly every link is new.  The ``--first`` rows crawl only
the first N pages of the largest alike site: the same links a page as its
100,000-page crawl, so what differs from that crawl is its length alone.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common

Case = tuple[str, int, int]  # (texts, pages crawled, pages of the site)


def measure(root: Path, case: Case, args: argparse.Namespace) -> dict[str, float]:
    texts, pages, site_pages = case
    from mpcrawler.cli import site_process

    with site_process(site_pages, size=args.size, texts=texts) as url:
        stats, _ = common.crawl(
            url,
            args.workers,
            args.threads,
            extra=("--max-pages", str(pages), *args.extra),
            root=root,
        )
    procs = stats["processes"]
    done = stats["pages"]
    return {
        "pages": done,
        "pages_per_s": done / stats["elapsed_s"],
        "master_ms": 1000 * procs["master"]["cpu_s"] / done,
        "workers_ms": 1000 * sum(w["cpu_s"] for w in procs["workers"]) / done,
        "master_rss_mb": procs["master"]["max_rss_mb"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--alike", default="1000,10000,100000", help="sizes of the template site")
    parser.add_argument("--distinct", default="100000", help="sizes of the distinct site")
    parser.add_argument(
        "--first",
        default="1000,10000",
        help="crawls of the first N pages of the largest alike site (its links a page)",
    )
    parser.add_argument("--size", type=int, default=10_000, help="bytes a page")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--base", metavar="REV", help="a revision to crawl with too")
    parser.add_argument("extra", nargs="*", help="options of every crawl (after --)")
    args = parser.parse_args()
    alike = [int(n) for n in args.alike.split(",") if n]
    cases: list[Case] = [("alike", n, n) for n in alike]
    cases += [("distinct", int(n), int(n)) for n in args.distinct.split(",") if n]
    if alike:
        cases += [("alike", int(n), max(alike)) for n in args.first.split(",") if n]
    print(common.machine())
    print(f"{args.workers} workers x {args.threads} threads, pages of {args.size:,} bytes")
    with contextlib.ExitStack() as stack:
        trees = common.trees(stack, args.base)
        runs = common.alternated(
            trees, cases, args.repeat, lambda root, case: measure(root, case, args)
        )
    print("| tree | site | pages of the site | pages | pages/s | master ms a page |", end="")
    print(" workers ms a page | master RSS MB | master / first |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tree in trees:
        first = None
        for case in cases:
            m = common.medians(runs[(tree, case)])
            first = first or m["master_ms"]
            print(
                f"| {tree} | {case[0]} | {case[2]:,} | {m['pages']:,.0f} | {m['pages_per_s']:.0f} "
                f"| {m['master_ms']:.3f} | {m['workers_ms']:.3f} | {m['master_rss_mb']:.0f} "
                f"| {m['master_ms'] / first:.2f} |"
            )
        prefixes = [c for c in cases if c[2] != c[1]]
        if prefixes:  # the largest crawl against its own site's first pages: length alone
            whole = common.medians(runs[(tree, ("alike", max(alike), max(alike)))])
            part = common.medians(runs[(tree, min(prefixes))])
            ratios = ", ".join(
                f"{name} {whole[key] / part[key]:.2f}"
                for name, key in (
                    ("master", "master_ms"),
                    ("workers", "workers_ms"),
                    ("pages/s", "pages_per_s"),
                    ("RSS", "master_rss_mb"),
                )
            )
            print(f"\n{tree}: {max(alike):,} pages over the first {min(prefixes)[1]:,}: {ratios}")


if __name__ == "__main__":
    main()
