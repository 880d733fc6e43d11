"""Outgoing: what a worker's threads hand its sender, one item at a time.

The download threads, the parser, the documents thread and the render
threads put items in the worker's ``outbox`` (a ``SimpleQueue``); the
sender (:meth:`mpcrawler.worker.process.Worker.run`) takes every item
waiting, and sends them in one :class:`mpcrawler.messages.Results`, with
the links held back and the browser's permits that wait then.
"""

from __future__ import annotations

import queue
from typing import Any, NamedTuple

from ..messages import PageResult

__all__ = ["ENDED", "WAKE", "Outgoing", "to_parser"]


class Outgoing(NamedTuple):
    """A finished page, a download that ended (its host is free of it), the
    slots free again; ``ended``: a thread ends (the sender counts them)."""

    result: PageResult | None = None
    downloaded: tuple[int, float] | None = None  # (request id, monotonic start)
    freed: int = 0
    ended: bool = False


WAKE = Outgoing()  # nothing of its own: something else waits to be sent
ENDED = Outgoing(ended=True)


def to_parser(
    outbox: queue.SimpleQueue[Outgoing],
    to_parse: queue.Queue[Any],
    page: Any,
    downloaded: tuple[int, float],
) -> None:
    """A downloaded ``page`` into the parser's queue: its host is free of
    it now, its slot once the page has room to wait (pages waiting for a
    browser can fill the queue: then no more requests come, rather than
    wait here, counted against their hosts).  Nearly always there is room:
    then both go in one item, and the master gets one message, not two."""
    try:
        to_parse.put_nowait(page)
    except queue.Full:
        outbox.put(Outgoing(None, downloaded, 0))
        to_parse.put(page)
        outbox.put(Outgoing(freed=1))
    else:
        outbox.put(Outgoing(None, downloaded, 1))
