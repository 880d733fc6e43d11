"""What a worker's download thread hands its sender when a page is
downloaded (``worker.outbox.to_parser``): real queues, a real parser thread."""

from __future__ import annotations

import queue
import threading

from mpcrawler.worker.outbox import Outgoing, to_parser


def test_a_page_with_room_to_wait_frees_its_host_and_its_slot_in_one_item() -> None:
    outbox: queue.SimpleQueue[Outgoing] = queue.SimpleQueue()
    to_parse: queue.Queue[str] = queue.Queue(maxsize=2)
    to_parser(outbox, to_parse, "page", (7, 1.5))
    assert outbox.get_nowait() == Outgoing(None, (7, 1.5), 1)
    assert outbox.empty() and to_parse.get_nowait() == "page"


def test_a_page_without_room_frees_its_host_at_once_and_its_slot_once_it_waits() -> None:
    """The parser's queue is full: the host is free at once; the slot only
    once the parser took a page and this one is in the queue."""
    outbox: queue.SimpleQueue[Outgoing] = queue.SimpleQueue()
    to_parse: queue.Queue[str] = queue.Queue(maxsize=1)
    to_parse.put("earlier")
    thread = threading.Thread(target=to_parser, args=(outbox, to_parse, "page", (8, 2.0)))
    thread.start()
    assert outbox.get(timeout=10) == Outgoing(None, (8, 2.0), 0)  # the host: at once
    assert outbox.empty() and thread.is_alive()  # the slot: not while the page waits
    assert to_parse.get(timeout=10) == "earlier"  # the parser takes one
    thread.join(timeout=10)
    assert outbox.get(timeout=10) == Outgoing(freed=1)
    assert to_parse.get_nowait() == "page"
