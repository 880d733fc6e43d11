"""What each content trap costs a crawl, with duplicates found by text and without.

    python benchmarks/bench_traps.py [--pages 50] [--max-pages 3000] [--base REV]

Serves the built-in site with its traps (``TestSite(traps=True)``): exact
copies of pages (``/copy/i``), near copies (``/near/i``), a soft-404 part
whose every path answers 200 with one page whose relative links grow the
path (``/soft/``), and an endless calendar (``/cal/YYYY/MM``); and the same
two made of pages of a few words (``/empty/``, ``/events/YYYY/MM``).  Crawls it
with ``--max-pages`` as the budget, by default (dedup on) and with
``--no-dedup`` (``--max-path-segments 1000`` in both, so that the path rule,
which ends the soft-404 part on its own at 20 segments, does not hide what
dedup does).  Prints the server's requests by part of the site, and how many
of the site's real pages were reached.  With ``--base REV``, that revision
crawls the same site too (before and after).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import crawl_env, machine, trees
from mpcrawler.testing.site import TestSite, serve_site

PARTS = ("real", "copy", "near", "soft", "cal", "empty", "events")


def by_part(hits: dict[str, int]) -> dict[str, int]:
    parts = dict.fromkeys(PARTS, 0)
    for path, count in hits.items():
        part = path.split("/")[1] if path.count("/") > 1 else "real"
        parts[part if part in parts else "real"] += count
    return parts


def run(root: Path, pages: int, budget: int, *extra: str) -> tuple[dict[str, int], int]:
    site = TestSite(pages=pages, size=2_000, traps=True)
    with serve_site(site) as server, tempfile.TemporaryDirectory() as job:
        subprocess.run(
            [sys.executable, "-m", "mpcrawler", "crawl", server.url, "--job-dir", job,
             "--quiet", "--no-robots", "--workers", "2", "--threads", "4",
             "--max-pages", str(budget), "--max-path-segments", "1000", *extra],
            check=True,
            env=crawl_env(root),
            cwd=root,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        hits = dict(server.hits)
        real = {"/", *(f"/page/{i}" for i in range(1, pages))}
        with open(Path(job, "pages.jsonl"), encoding="utf-8") as f:
            reached = {"/" + json.loads(line)["url"].split("/", 3)[3] for line in f} & real
    return by_part(hits), len(reached)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=50, help="the site's real pages")
    parser.add_argument("--max-pages", type=int, default=3000, help="the crawl's budget")
    parser.add_argument("--base", metavar="REV", help="a revision to crawl with too")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"site: {args.pages} real pages and its traps; --max-pages {args.max_pages}\n")
    print(f"{'tree':<10}{'variant':<12}" + "".join(f"{p:>8}" for p in PARTS) + f"{'real':>14}")
    with contextlib.ExitStack() as stack:
        for tree, root in trees(stack, args.base).items():
            for name, extra in (("dedup", ()), ("--no-dedup", ("--no-dedup",))):
                fetched, reached = run(root, args.pages, args.max_pages, *extra)
                print(
                    f"{tree:<10}{name:<12}" + "".join(f"{fetched[p]:>8}" for p in PARTS)
                    + f"{reached:>8} of {args.pages}"
                )  # fmt: skip


if __name__ == "__main__":
    main()
