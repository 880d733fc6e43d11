"""A worker's event loop: every download slot driven from one thread, each
page parsed in that thread as its download ends.

:class:`mpcrawler.worker.process.Worker` runs this instead of a thread a
slot when its downloader drives many downloads from one thread
(``Downloader.transfers``: the libcurl downloader's ``CurlTransfers``) and
no browser renders.  The receiver thread still reads the pipe at all times,
so a send from the master never blocks; everything else is this thread's::

    receiver thread --Fetch--> inbox --a byte on the wake pipe--> the loop
    the loop:  inbox -> a free slot -> Transfers.start
               Transfers.wait (the slots' sockets and the wake pipe)
                 -> Worker.downloaded -> Worker.analyze -> one Results message

No page passes from thread to thread and no two threads take turns with the
GIL: on the PostgreSQL docs a worker with 8 slots spent 0.96 ms of CPU a
page so, against 1.5 ms with a thread a slot and a parser thread
(``benchmarks/README.md``).  A slot is free again once its page is parsed
(and reported): parsing holds it, as it holds the only thread.

The protocol with the master is the threads' (``process.py``): each ended
download is in ``downloaded`` and ``freed`` of the message that carries its
result.  On ``Stop`` (or the master gone) the requests already received
run to their end, then the loop returns.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import time
from collections import deque
from typing import TYPE_CHECKING

from ..messages import Fetch, Hello, PageResult

if TYPE_CHECKING:
    from .downloader import Response, Transfers
    from .process import Worker

__all__ = ["run_loop"]

_TICK = 1.0  # s: the longest wait, so stalled downloads' timeouts are seen


def run_loop(worker: Worker, transfers: Transfers) -> None:
    """Serve the master from this thread until it says stop (see the module)."""
    import threading

    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)

    def wake() -> None:
        with contextlib.suppress(BlockingIOError):  # full: a wake is waiting already
            os.write(wake_write, b"\0")

    worker.wake = worker.arrived = wake
    free = list(range(len(worker.downloaders)))[::-1]
    busy: dict[int, tuple[Fetch, PageResult, float, float]] = {}  # slot -> (fetch, result, ...)
    to_parse: deque[tuple[PageResult, Response, int]] = deque()  # at most ``slots``
    held: deque[tuple[PageResult, Response, int]] = deque()  # pages whose slots stay taken
    try:
        threading.Thread(target=worker.receive, name="receiver", daemon=True).start()
        worker.conn.send(Hello(worker.index, os.getpid(), worker.slots))
        last_summary = 0.0
        stopping = False
        batch: list[PageResult] = []  # to send, with what ended since the last message
        downloaded: list[tuple[int, float]] = []
        freed = 0
        while not stopping or busy or to_parse:
            while not stopping:  # start what came in
                try:
                    fetch = worker.inbox.get_nowait()
                except queue.Empty:
                    break
                if fetch is None:
                    stopping = True
                    break
                # The master sends no more requests than there are free slots.
                slot = free.pop()
                result, call = worker.request(fetch, worker.downloaders[slot].id)
                started = time.monotonic()  # the host's politeness counts from here
                if call is None:
                    free.append(slot)
                    batch.append(result)
                    downloaded.append((fetch.id, started))
                    freed += 1
                    continue
                busy[slot] = (fetch, result, started, time.perf_counter())
                transfers.start(slot, fetch.url, **call)
            if busy:
                ended = transfers.wait(0.0 if to_parse or batch else _TICK, wake_read)
            else:
                if not (to_parse or batch or stopping):
                    select.select([wake_read], [], [], _TICK)
                ended = []
            _drain(wake_read)
            for slot, outcome in ended:
                fetch, result, started, clock = busy.pop(slot)
                free.append(slot)
                result, response = worker.downloaded(result, fetch, outcome, clock)
                downloaded.append((fetch.id, started))
                if response is None:
                    batch.append(result)
                    freed += 1
                elif len(to_parse) < worker.slots:  # room to wait: its slot is free
                    to_parse.append((result, response, fetch.depth + 1))
                    freed += 1
                else:
                    held.append((result, response, fetch.depth + 1))
            # What ended goes before the next parse, so the master can fill
            # the slots meanwhile; the page parsed last goes with it.
            last_summary = worker.send_results(batch, downloaded, freed, last_summary)
            batch, downloaded, freed = [], [], 0
            if to_parse:  # one page a turn, between turns of the downloads
                result, response, depth = to_parse.popleft()
                worker.analyze(result, response, depth)
                batch.append(result)
                if held:  # a page that waited for room: its slot is free now
                    to_parse.append(held.popleft())
                    freed += 1
        worker.send_results(batch, downloaded, freed, last_summary)
    finally:
        # The wake pipe stays open: the receiver may still write to it after
        # its last message (a closed descriptor could be another file's by then).
        transfers.close()


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 4096):
            pass
