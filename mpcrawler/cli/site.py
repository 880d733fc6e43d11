"""``serve-site`` and ``demo``: the built-in test site, served, and crawled."""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import UsageError
from ..settings import (
    Settings,
)
from .crawl import run_crawl
from .parser import EXIT_OK


@contextmanager
def site_process(
    pages: int, latency: float = 0.0, size: int = 30_000, fanout: int = 12, texts: str = "pairs"
) -> Iterator[str]:
    """Run ``serve-site`` in a child process on a free port; yields its URL."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mpcrawler",
            "serve-site",
            "--port",
            "0",
            "--pages",
            str(pages),
            "--latency",
            str(latency),
            "--size",
            str(size),
            "--fanout",
            str(fanout),
            "--texts",
            texts,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("serving"):
            raise RuntimeError(f"test site did not start: {line!r}")
        yield line.rsplit(" ", 1)[1]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_demo(args: argparse.Namespace) -> int:
    job = Path(args.job_dir)
    if job.exists():
        if not (job / "frontier").exists() and any(job.iterdir()):
            raise UsageError(f"{job} exists and is not a demo job dir; pick another --job-dir")
        shutil.rmtree(job)
    with site_process(args.pages) as url:
        print(
            f"demo: crawling the built-in site at {url} ({args.pages} pages of 30 KB)", flush=True
        )
        settings = Settings(seeds=[url], workers=args.workers, job_dir=str(job), quiet=args.quiet)
        return run_crawl(settings)


def run_site(args: argparse.Namespace) -> int:
    from ..testing.site import SiteServer, TestSite

    site = TestSite(
        pages=args.pages,
        size=args.size,
        fanout=args.fanout,
        embeds=args.embeds,
        images=args.images,
        texts=args.texts,
    )
    try:
        server = SiteServer(site, args.host, args.port, args.latency)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        # Inside the try: a stop signal sent as soon as this line is read
        # may interrupt the print itself, still a clean stop (exit 0).
        print(f"serving {args.pages} pages at {server.url}", flush=True)
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_OK
