"""The worker's event loop (:mod:`mpcrawler.worker.loop`) ends as soon as
it is told to stop and holds nothing: no wait of its own after ``Stop``
unless a document is still being read.  (It slept its whole 1 s tick
there: every curl crawl ended 1 s late, half the 1.95 s that a crawl of
the 1,170 PostgreSQL doc pages took.)"""

from __future__ import annotations

import queue
import threading
from collections import deque
from multiprocessing import Pipe
from typing import Any

import pytest

from mpcrawler import framing
from mpcrawler.messages import Hello, Stop
from mpcrawler.worker import loop
from mpcrawler.worker.downloader import Transfers


class NoTransfers(Transfers):
    """No download is ever started (the loop is only told to stop)."""

    def wait(self, timeout: float, wake: int) -> list[Any]:
        raise AssertionError("nothing was started")


class Documents:
    """A documents thread that reads its one document while ``pending`` is asked."""

    def __init__(self, side: Side, asks: int) -> None:
        self.side, self.asks = side, asks

    @property
    def pending(self) -> bool:
        self.asks -= 1
        if self.asks == 0:  # read: its page comes back to the loop
            self.side.documents_read.append("the PDF's page")
        return self.asks > 0

    def end(self) -> None:
        pass


class Side:
    """The worker as the loop sees it (``LoopSide``), with no downloader."""

    def __init__(self, conn: Any) -> None:
        self.index, self.conn, self.slots = 0, conn, 2
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.looping = False
        self.downloaders: list[Any] = []
        self.documents: Documents | None = None
        self.documents_read: deque[Any] = deque()
        self.parse_lock = threading.Lock()
        self.sent: list[list[Any]] = []

    def master_gone(self) -> None:
        raise AssertionError("the master is here")

    def take(self, message: Any) -> bool:
        return not isinstance(message, Stop)

    def send_results(
        self, batch: list[Any], downloaded: list[Any], freed: int, last: float
    ) -> float:
        self.sent.append(batch)
        return last


@pytest.mark.parametrize("documents", [False, True])
def test_the_loop_ends_at_stop_and_waits_only_for_a_document(
    monkeypatch: pytest.MonkeyPatch, documents: bool
) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(loop.time, "sleep", sleeps.append)  # counted, not slept
    master, conn = Pipe()
    side = Side(conn)
    if documents:
        side.documents = Documents(side, asks=4)
    framing.send(master, Stop())
    loop.run_loop(side, NoTransfers())  # type: ignore[arg-type]
    assert isinstance(framing.FrameReader(master).receive()[0], Hello)
    if documents:  # a short wait a turn until it was read, and its page sent
        assert sleeps and set(sleeps) == {loop._DOCUMENT_TICK}, sleeps
        assert any("the PDF's page" in batch for batch in side.sent), side.sent
    else:
        assert sleeps == []
