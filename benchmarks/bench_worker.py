"""One worker process alone on the PostgreSQL docs: its CPU a page, its
context switches, and where its time goes, with threads or its event loop.

    python benchmarks/bench_worker.py [--slots 8] [--repeat 3] [--analyzer lxml]
        [--variants 'http,curl loop']

nginx serves Debian's PostgreSQL 15 docs (``apt-get install
postgresql-doc-15``).  A real worker process (``Worker.run``, forked) gets
every page's URL over its pipe from this process, which plays the master:
a request for each free slot, the results read, ``Stop`` at the end.  No
master logic runs, so the figures are the worker's own.  Variants,
alternated:

- ``http``: the default downloader, a thread a slot, a parser thread;
- ``curl threads``: the libcurl downloader made to run as ``http`` does
  (a thread a slot: ``ThreadedCurlDownloader`` offers no ``transfers``);
- ``curl loop``: the libcurl downloader in the worker's event loop.

For each: the worker's CPU a page (user + system, from the kernel), its
system time and voluntary context switches a page, and the split of its
time by part, each measured by the thread that ran it (``thread_time``
around the downloader's ``download`` or the loop's transfers, the
analyzer, the text's fingerprint, link resolution); "the rest" is the
worker's CPU less those parts: threads handing pages over, taking turns
with the GIL, messages.  The timers themselves cost a little of each part.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil

from benchmarks import common
from mpcrawler.messages import Bye, Fetch, FetchBatch, Results, Stop
from mpcrawler.modules import BUILTIN_ANALYZERS, BUILTIN_DOWNLOADERS
from mpcrawler.settings import Settings
from mpcrawler.web.urls import Scope
from mpcrawler.worker.curl import CurlDownloader
from mpcrawler.worker.downloader import Downloader, Transfers

DOCS = Path("/usr/share/doc/postgresql-doc-15/html")
PARTS = ("client", "analyzer", "fingerprint", "links")


class ThreadedCurlDownloader(CurlDownloader):
    """The libcurl downloader with no event loop: a thread a slot."""

    @classmethod
    def transfers(cls, downloaders: list[Downloader]) -> Transfers | None:  # type: ignore[override]
        return None


VARIANTS = {
    "http": BUILTIN_DOWNLOADERS["http"],
    "curl threads": f"{__name__}:ThreadedCurlDownloader",
    "curl loop": BUILTIN_DOWNLOADERS["curl"],
}


def _timed(times: dict[str, float], part: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            times[part] += time.thread_time() - started

    return timed


def _worker(conn: Any, settings: dict[str, Any], url: str) -> None:
    """The worker process: Worker.run with each part timed; the parts'
    seconds go back with Bye's summaries."""
    import mpcrawler.worker.process as process

    times = dict.fromkeys(PARTS, 0.0)
    process.fingerprint = _timed(times, "fingerprint", process.fingerprint)
    worker = process.Worker(
        0, conn, Settings.from_dict(settings), Scope.from_seeds([url], [], "hosts", [])
    )
    for downloader in worker.downloaders:
        downloader.download = _timed(times, "client", downloader.download)  # type: ignore[method-assign]
    worker.analyzer.analyze = _timed(times, "analyzer", worker.analyzer.analyze)  # type: ignore[method-assign]
    worker.resolver.resolve_all = _timed(times, "links", worker.resolver.resolve_all)  # type: ignore[method-assign]
    original = type(worker.downloaders[0]).transfers

    def transfers(downloaders: list[Downloader]) -> Transfers | None:
        found = original(downloaders)
        if found is not None:
            found.start = _timed(times, "client", found.start)  # type: ignore[method-assign]
            found.wait = _timed(times, "client", found.wait)  # type: ignore[method-assign]
        return found

    type(worker.downloaders[0]).transfers = staticmethod(transfers)  # type: ignore[method-assign]
    summaries = worker.summaries
    worker.summaries = lambda: [*summaries(), {"id": "parts", **times}]  # type: ignore[method-assign]
    worker.run()


def one_run(
    url: str, urls: list[str], downloader: str, slots: int, analyzer: str
) -> dict[str, float]:
    settings = Settings(
        seeds=[url],
        threads=slots,
        downloader=downloader,
        analyzer=BUILTIN_ANALYZERS[analyzer],
        allow_private_networks=True,
    )
    master, child = multiprocessing.Pipe()
    proc = multiprocessing.get_context("fork").Process(
        target=_worker, args=(child, settings.to_dict(), url)
    )
    proc.start()
    worker = psutil.Process(proc.pid)
    free = master.recv().slots  # Hello
    sent = done = 0
    while done < len(urls):
        if free and sent < len(urls):
            batch = urls[sent : sent + free]
            master.send(
                FetchBatch([Fetch(sent + k, u, "page", 0, 0.0) for k, u in enumerate(batch)])
            )
            sent, free = sent + len(batch), 0
        message = master.recv()
        if isinstance(message, Results):
            done += len(message.results)
            free += message.freed
    switches = worker.num_ctx_switches().voluntary
    cpu = worker.cpu_times()
    master.send(Stop())
    while not isinstance(bye := master.recv(), Bye):
        pass
    proc.join(30)
    parts = next(s for s in bye.summaries if s["id"] == "parts")
    total = cpu.user + cpu.system
    pages = len(urls)
    figures = {
        "cpu_ms": 1000 * total / pages,
        "system_ms": 1000 * cpu.system / pages,
        "switches": switches / pages,
    }
    for part in PARTS:
        figures[part] = 1000 * parts[part] / pages
    figures["rest"] = figures["cpu_ms"] - sum(figures[p] for p in PARTS)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--analyzer", choices=sorted(BUILTIN_ANALYZERS), default="lxml")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="of: " + ", ".join(VARIANTS))
    args = parser.parse_args()
    variants = [v.strip() for v in args.variants.split(",")]
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"unknown variants: {', '.join(unknown)}")
    if not (DOCS / "index.html").is_file():
        parser.error(f"no {DOCS}/index.html (apt-get install postgresql-doc-15)")
    names = sorted(p.name for p in DOCS.glob("*.html"))
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    with common.nginx_dir(DOCS) as url:
        urls = [url + name for name in names]
        order = variants
        for round_ in range(args.repeat):
            for variant in order if round_ % 2 == 0 else order[::-1]:
                figures = one_run(url, urls, VARIANTS[variant], args.slots, args.analyzer)
                runs[variant].append(figures)
                print(f"round {round_ + 1}, {variant}: {figures}", file=sys.stderr, flush=True)
    print(f"machine: {common.machine()}")
    print(
        f"one worker, {args.slots} slots, {args.analyzer}, {len(names)} PostgreSQL doc pages"
        f" from nginx; medians of {args.repeat} alternated runs; ms a page\n"
    )
    head = "| worker | CPU | system | switches a page | " + " | ".join(PARTS) + " | the rest |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for variant, figures in runs.items():
        m = common.medians(figures)
        cells = [f"{m['cpu_ms']:.3f}", f"{m['system_ms']:.3f}", f"{m['switches']:.1f}"]
        cells += [f"{m[p]:.3f}" for p in (*PARTS, "rest")]
        print(f"| {variant} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
