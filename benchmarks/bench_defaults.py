"""What each feature that is on by default costs a crawl: CPU a page with it
on and off, and their ratio, in one run, runs alternated.

    python benchmarks/bench_defaults.py [--repeat 5] [--sites pg,lab] [--analyzer bs4] \\
        [--downloader http] [--base REV]

Sites: ``pg``, Debian's PostgreSQL 15 docs served by nginx (1,170 pages;
``apt-get install nginx postgresql-doc-15``), and ``lab``, the built-in
site of 2,000 pages of 30 KB from one template (``serve-site --texts
alike``, its own server), each crawled whole with 2 workers x 4 threads
and a host concurrency of 8.  Every crawl has the defaults a user gets,
but for ``--no-robots`` (as every benchmark's crawl: robots.txt costs a
request a host, not a page); each feature's row turns that one feature
off:

- ``dedup``: pages known by their text (the worker's digest, the master's
  content index): ``--no-dedup``;
- ``nofollow``: what pages ask of robots (meta robots, rel=nofollow)
  obeyed: ``--ignore-nofollow``;
- ``session ids``: stripped from URLs: ``--keep-session-ids``.

An opt-in feature's row (``--features near``) turns it on instead, and its
ratio is still on over off:

- ``near``: near duplicates (the worker's simhash, the master's pieces):
  ``--near-duplicates``.

CPU is the master's and the workers' (their own ``getrusage`` in
stats.json) in milliseconds a page, medians of ``--repeat``; the ratio is
on over off: the issue of flat cost asks each to be at most 1.10.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common

# feature -> the options of a crawl with it off
FEATURES: dict[str, tuple[str, ...]] = {
    "dedup": ("--no-dedup",),
    "nofollow": ("--ignore-nofollow",),
    "session ids": ("--keep-session-ids",),
}
# opt-in feature -> the options of a crawl with it on
OPT_IN: dict[str, tuple[str, ...]] = {"near": ("--near-duplicates",)}


def site(name: str, stack: contextlib.ExitStack) -> str:
    if name == "pg":
        return stack.enter_context(common.nginx_dir(common.DOCS))
    from mpcrawler.cli import site_process

    return stack.enter_context(site_process(2000, texts="alike"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sites", default="pg,lab")
    parser.add_argument("--analyzer", default="bs4", help="bs4 (the default) or lxml")
    parser.add_argument("--downloader", default="http")
    parser.add_argument("--features", default=",".join(FEATURES))
    parser.add_argument("--base", metavar="REV", help="a revision to measure too")
    args = parser.parse_args()
    features = args.features.split(",")
    variants = ["defaults", *features]
    print(common.machine())
    print(f"--analyzer {args.analyzer} --downloader {args.downloader}, 2 workers x 4 threads")
    with contextlib.ExitStack() as stack:
        trees = common.trees(stack, args.base)
        for name in args.sites.split(","):
            url = site(name, stack)
            runs = common.alternated(
                trees, variants, args.repeat, functools.partial(measure, url, args)
            )
            print(f"\n{name}: CPU a page (ms), medians of {args.repeat}")
            print("| tree | feature | on: master | on: all | off: master | off: all | ratio |")
            print("|---|---|---|---|---|---|---|")
            for tree in trees:
                defaults = common.medians(runs[(tree, "defaults")])
                for feature in features:
                    on = off = defaults
                    if feature in OPT_IN:
                        on = common.medians(runs[(tree, feature)])
                    else:
                        off = common.medians(runs[(tree, feature)])
                    print(
                        f"| {tree} | {feature} | {on['master_ms']:.3f} | {on['all_ms']:.3f} "
                        f"| {off['master_ms']:.3f} | {off['all_ms']:.3f} "
                        f"| {on['all_ms'] / off['all_ms']:.3f} |"
                    )
                print(f"| {tree} | (defaults: {defaults['pages_per_s']:.0f} pages/s) | | | | | |")


def measure(url: str, args: argparse.Namespace, root: Path, variant: str) -> dict[str, float]:
    """CPU a page of one crawl of ``url`` by the tree ``root``, with the
    defaults (``variant`` "defaults"), with one feature off, or with an opt-in
    one on."""
    extra = (
        *common.downloader_option(args.downloader),
        *FEATURES.get(variant, ()),
        *OPT_IN.get(variant, ()),
    )
    figures = common.crawl_figures(url, 2, 4, args.analyzer, extra, root)
    figures["all_ms"] = figures["master_ms"] + figures["workers_ms"]
    return figures


if __name__ == "__main__":
    main()
