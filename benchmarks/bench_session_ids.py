"""What stripping session ids saves on a site that puts one in every link.

    python benchmarks/bench_session_ids.py --pages 500 --budget 5000

The built-in site with ``session_ids=True`` answers every page with links
that carry a new ``;jsessionid=`` (as a Java servlet does for a client
without cookies), so every link of every page is a URL never seen before.
mpcrawler crawls it twice: by default (session ids stripped), and with
``--keep-session-ids`` under a ``--max-pages`` budget (without one that
crawl would never end).  From the server's log: requests, distinct pages
reached, and the requests spent a page; and each crawl's wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common
from mpcrawler.testing.site import SiteServer, TestSite, serving


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--budget", type=int, default=5000, help="--max-pages when ids are kept")
    args = parser.parse_args()
    print(common.machine())
    print(f"site: {args.pages} pages, a new jsessionid in every link of every answer\n")
    print("| crawl | requests | distinct pages | requests a page | wall s |")
    print("|---|---|---|---|---|")
    with serving(SiteServer(TestSite(pages=args.pages), session_ids=True)) as server:
        for name, extra in (
            ("default (ids stripped)", []),
            (
                f"--keep-session-ids --max-pages {args.budget}",
                ["--keep-session-ids", "--max-pages", str(args.budget)],
            ),
        ):
            before = len(server.log)
            started = time.monotonic()
            common.crawl(server.url, 2, 4, extra=tuple(extra))
            wall = time.monotonic() - started
            hits = server.log[before:]
            distinct = len({h.path.split(";")[0] for h in hits if h.status == 200})
            print(
                f"| {name} | {len(hits)} | {distinct} | {len(hits) / distinct:.2f} | {wall:.1f} |"
            )


if __name__ == "__main__":
    main()
