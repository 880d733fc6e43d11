"""A worker's event loop: every download slot driven from one thread, each
page parsed in that thread as its download ends.

:class:`mpcrawler.worker.process.Worker` runs this instead of a thread a
slot when its downloader drives many downloads from one thread
(``Downloader.transfers``: the libcurl downloader's ``CurlTransfers``) and
no browser renders.  One thread reads the pipe, downloads, parses and
sends; no page passes from thread to thread, and no two threads take turns
with the GIL::

    a turn:  the pipe's messages -> Worker.take -> inbox -> a free slot -> Transfers.start
             Transfers.wait (the slots' sockets and the pipe)
               -> Worker.downloaded -> a page to parse (at most ``slots`` wait)
             Results (what ended, the page parsed last turn) -> the pipe
             one page parsed -> Worker.analyze

On the PostgreSQL docs a worker with 8 slots spends about a quarter less
CPU a page so than with a thread a slot and a parser thread (1.15 against
1.56 ms, with no voluntary context switch: ``benchmarks/bench_worker.py``).

The protocol with the master is the threads' (``process.py``): a slot is
free (``freed``) once its download has ended and its page has room to wait
for parsing.  When pages wait to be parsed, what ended is sent before the
next one is parsed, so the master can fill the slots meanwhile; a page
alone is parsed first and goes out with the end of its download, in one
message, not two.  The master sends a worker only requests for its free
slots and answers to its own messages, so the pipe's buffer holds what
comes while a page is parsed (no receiver thread: the loop reads the pipe
at every turn, what it holds in one read: ``mpcrawler.framing``).  A PDF
(--extract) goes to the worker's documents thread instead of being parsed
(``Worker.hand_off``); what it has read comes back in
``Worker.documents_read``, looked at every ``_DOCUMENT_TICK`` at most while
one is being read.  On ``Stop`` the requests already received run to their
end, and their pages are parsed (and their PDFs read); if the master is
gone, the worker exits at once (``Worker.master_gone``).
"""

from __future__ import annotations

import os
import queue
import time
from collections import deque
from typing import TYPE_CHECKING

from .. import framing
from ..framing import FrameReader
from ..messages import Fetch, Hello, PageResult
from .fetches import fetch_call

if TYPE_CHECKING:
    from .downloader import Response, Transfers
    from .sides import LoopSide

__all__ = ["run_loop"]

_TICK = 1.0  # s: the longest wait, so stalled downloads' timeouts are seen
_DOCUMENT_TICK = 0.05  # s: the longest wait while a PDF is read, for its page


def run_loop(worker: LoopSide, transfers: Transfers) -> None:
    """Serve the master from this thread until it says stop (see the module)."""
    worker.looping = True
    conn = worker.conn
    reader = FrameReader(conn)
    free = list(range(len(worker.downloaders)))[::-1]
    busy: dict[int, tuple[Fetch, PageResult, float, float]] = {}  # slot -> (fetch, result, ...)
    to_parse: deque[tuple[PageResult, Response, int]] = deque()  # at most ``slots``
    held: deque[tuple[PageResult, Response, int]] = deque()  # pages whose slots stay taken
    batch: list[PageResult] = []  # to send, with what ended since the last message
    downloaded: list[tuple[int, float]] = []
    freed = 0
    last_summary = 0.0
    stopping = False
    documents, read = worker.documents, worker.documents_read
    try:
        framing.send(conn, Hello(worker.index, os.getpid(), worker.slots))
        while not stopping or busy or to_parse or (documents is not None and documents.pending):
            try:
                for message in reader.receive() if not stopping else ():
                    stopping = stopping or not worker.take(message)
            except (EOFError, OSError):
                worker.master_gone()
                stopping = True
            freed += _start(worker, transfers, free, busy, batch, downloaded)
            while read:
                batch.append(read.popleft())
            tick = _DOCUMENT_TICK if documents is not None and documents.pending else _TICK
            if busy:
                ended = transfers.wait(0.0 if to_parse or batch else tick, conn.fileno())
            else:
                if not (to_parse or batch):
                    if not stopping:
                        reader.poll(tick)
                    elif documents is not None and documents.pending:
                        time.sleep(tick)  # only documents are left (_DOCUMENT_TICK)
                ended = []
            freed += _ended(worker, ended, busy, free, downloaded, batch, to_parse, held)
            # What ended goes before the next parse, so the master can fill
            # the slots meanwhile, when pages wait to be parsed; one page
            # alone is parsed first, and goes in the same message.
            if len(to_parse) != 1 or held:
                last_summary = worker.send_results(batch, downloaded, freed, last_summary)
                batch, downloaded, freed = [], [], 0
            if to_parse:  # one page a turn, between turns of the downloads
                result, response, depth = to_parse.popleft()
                if not worker.hand_off(result, response, depth):
                    with worker.parse_lock:  # (the documents thread analyzes too)
                        worker.analyze(result, response, depth)
                    batch.append(result)
                if held:  # a page that waited for room: its slot is free now
                    to_parse.append(held.popleft())
                    freed += 1
        batch += read
        worker.send_results(batch, downloaded, freed, last_summary)
    finally:
        if documents is not None:
            documents.end()
        transfers.close()


def _ended(
    worker: LoopSide,
    ended: list[tuple[int, Response | Exception]],
    busy: dict[int, tuple[Fetch, PageResult, float, float]],
    free: list[int],
    downloaded: list[tuple[int, float]],
    batch: list[PageResult],
    to_parse: deque[tuple[PageResult, Response, int]],
    held: deque[tuple[PageResult, Response, int]],
) -> int:
    """The downloads that ``ended``: their slots free for the next
    downloads, their hosts free of them (``downloaded``), each page to
    send (``batch``: no body), to parse, or ``held`` until there is room to
    wait; how many slots are free again for the master."""
    freed = 0
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
    return freed


def _start(
    worker: LoopSide,
    transfers: Transfers,
    free: list[int],
    busy: dict[int, tuple[Fetch, PageResult, float, float]],
    batch: list[PageResult],
    downloaded: list[tuple[int, float]],
) -> int:
    """Start in a free slot each request that came in (one not to start
    ends at once, in ``batch``); the slots freed so."""
    freed = 0
    while True:
        try:
            fetch = worker.inbox.get_nowait()
        except queue.Empty:
            return freed
        if fetch is None:  # (a thread's stop; not the loop's)
            continue
        # The master sends no more requests than there are free slots.
        slot = free.pop()
        result, call = fetch_call(fetch, worker.settings, worker.downloaders[slot].id)
        started = time.monotonic()  # the host's politeness counts from here
        if call is None:
            free.append(slot)
            batch.append(result)
            downloaded.append((fetch.id, started))
            freed += 1
            continue
        busy[slot] = (fetch, result, started, time.perf_counter())
        transfers.start(slot, fetch.url, **call)
