"""The forkserver the workers fork from: what it preloads, and its start.

``python -m mpcrawler crawl`` starts it first thing (``start_forkserver``),
so its imports (bs4, lxml, and requests or pycurl) run beside the master's
own start-up instead of after it, while the crawl waits for its first
worker.  This module imports nothing of the pool's (:mod:`.pool`: 35-50 ms
of imports), so the forkserver starts that much sooner.
"""

from __future__ import annotations

from .. import stopsignals
from ..modules import BUILTIN_DOWNLOADERS

__all__ = ["PRELOAD", "named_downloader", "preload", "start_forkserver"]

# What the forkserver imports once, for every worker forked from it (the
# pool's module holds the workers' entry point).
PRELOAD = ["mpcrawler.worker.process", "mpcrawler.master.pool"]


def preload(downloader: str | None) -> list[str]:
    """PRELOAD and the module of ``downloader`` (a --downloader value, None
    for the default) if it is one of ours: a crawl with libcurl imports
    neither requests nor urllib3, one with requests not pycurl.  A plug-in's
    module is the worker's to import (its import may start threads, which a
    fork would not carry)."""
    path = BUILTIN_DOWNLOADERS.get(downloader or "http", downloader or "")
    module = path.partition(":")[0]
    return [*PRELOAD, module] if module.startswith("mpcrawler.") else list(PRELOAD)


def named_downloader(args: list[str]) -> str | None:
    """The --downloader value of a command line's arguments (the last one),
    read before the command line is parsed: only a hint (a config file may
    name another downloader, whose module a worker then imports itself)."""
    named = None
    for at, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--downloader" and at + 1 < len(args):
            named = args[at + 1]
        elif arg.startswith("--downloader="):
            named = arg.partition("=")[2]
    return named


def start_forkserver(downloader: str | None = None) -> None:
    """Start the forkserver the workers fork from, if it is not running yet,
    with the modules of workers that download with ``downloader`` (a
    --downloader value) preloaded (0.18 s of CPU with the default's).  The
    command calls this first thing; the pool's ``start`` would otherwise
    start it with the first worker.  Like the workers, it ignores the stop
    signals."""
    import multiprocessing.forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload(preload(downloader))
    with stopsignals.ignored_in_children():
        multiprocessing.forkserver.ensure_running()
