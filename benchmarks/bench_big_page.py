"""How much memory and CPU does a worker take for one big page?  Its peak
RSS, CPU and the record's size, on one HTML page of 10 KB up to 30 MB of
short paragraphs with a link each (the densest markup: a tree of it costs
the most), crawled alone with --extract.

    python benchmarks/bench_big_page.py [--sizes 0.01,4,10,30] [--analyzers bs4,lxml] \\
        [--repeat 1] [--base REV] [-- OPTION...]

Each crawl is of one page (``--max-depth 0``), by one worker of one slot,
with ``--extract --max-bytes 64M``, served by a server of this script's own
on loopback.  The figures are the crawl's own stats.json (the worker's
``VmHWM``, its CPU) and the record's bytes in pages.jsonl.  With ``--base
REV``, that revision crawls too, alternated with this tree (issue 61: the
30 MB page took 1 GB before the stream reading of big pages).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common

MB = 1 << 20


def big_page(size: int) -> bytes:
    """An HTML page of ``size`` bytes or a little more: a title, then short
    paragraphs, each in a div, each with one link."""
    parts = [b"<html><head><title>A big page</title></head><body>"]
    total, n = 0, 0
    while total < size:
        part = (
            b"<div class='c'><p>Paragraph %d of a very long page, with words enough to read "
            b"and <a href='/p%d'>a link %d</a> inside it.</p></div>\n" % (n, n % 5000, n)
        )
        parts.append(part)
        total += len(part)
        n += 1
    parts.append(b"</body></html>")
    return b"".join(parts)


@contextlib.contextmanager
def serving(body: bytes) -> Iterator[str]:
    """``body`` as text/html at / of a loopback server: its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def measure(root: Path, case: tuple[float, str], extra: list[str]) -> dict[str, float]:
    size_mb, analyzer = case
    body = big_page(int(size_mb * MB))
    job = tempfile.mkdtemp(prefix="bench-big-page-")
    try:
        with serving(body) as url:
            options = ("--extract", "--max-bytes", "64M", "--max-depth", "0")
            cmd = [
                sys.executable,
                "-m",
                "mpcrawler",
                *common.crawl_command(url, job, 1, 1, (*options, "--analyzer", analyzer)),
                *extra,
            ]
            subprocess.run(
                cmd, check=True, stdout=subprocess.DEVNULL, env=common.crawl_env(root), cwd=root
            )
        stats = json.loads(Path(job, "stats.json").read_text())
        line = Path(job, "pages.jsonl").read_bytes()
        record = json.loads(line)
        worker = stats["processes"]["workers"][0]
        return {
            "body_mb": len(body) / MB,
            "worker_peak_mb": worker["max_rss_mb"],
            "worker_cpu_s": worker["cpu_s"],
            "record_mb": len(line) / MB,
            "links": record.get("links") or 0,
        }
    finally:
        shutil.rmtree(job, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="0.01,4,10,30", help="page sizes, MB")
    parser.add_argument("--analyzers", default="bs4,lxml")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--base", metavar="REV", help="a revision to crawl with too")
    parser.add_argument("extra", nargs="*", help="options of every crawl (after --)")
    args = parser.parse_args()
    cases = [(float(s), a) for a in args.analyzers.split(",") for s in args.sizes.split(",")]
    print(common.machine())
    with contextlib.ExitStack() as stack:
        trees = common.trees(stack, args.base)
        runs = common.alternated(
            trees, cases, args.repeat, lambda root, case: measure(root, case, args.extra)
        )
    print("| tree | analyzer | body MB | worker peak RSS MB | peak / body | worker CPU s |", end="")
    print(" record MB | links |")
    print("|---|---|---|---|---|---|---|---|")
    for tree in trees:
        for case in cases:
            m = common.medians(runs[(tree, case)])
            print(
                f"| {tree} | {case[1]} | {m['body_mb']:.2f} | {m['worker_peak_mb']:.0f} "
                f"| {m['worker_peak_mb'] / m['body_mb']:.1f} | {m['worker_cpu_s']:.2f} "
                f"| {m['record_mb']:.2f} | {m['links']:,.0f} |"
            )


if __name__ == "__main__":
    main()
