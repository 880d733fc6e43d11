"""UrlQueueManager against a reference heap, under every interleaving hypothesis finds."""

from __future__ import annotations

import heapq
import shutil
import tempfile

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from mpcrawler.frontier import UrlQueueManager


class FrontierModel(RuleBasedStateMachine):
    """The reference: a heap keyed by (-weight, put number); un-acked items
    go back to their original place when the queue is closed and reopened.
    A crash (the process killed) goes back to the state of the last sync or
    flush, with that moment's un-acked items back in their places."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="frontier-model-")
        self.heap: list[tuple[int, int, str, int]] = []
        self.outstanding: dict[str, tuple[int, int, str, int]] = {}
        self.gotten: dict[str, object] = {}
        self.counter = 0
        self.synced: tuple[list[tuple[int, int, str, int]], int] = ([], 0)

    @initialize(cache_size=st.integers(min_value=1, max_value=6))
    def open_queue(self, cache_size: int) -> None:
        self.cache_size = cache_size
        self.q = UrlQueueManager(self.dir, cache_size=cache_size, fsync=False)

    @rule(weight=st.integers(min_value=-2, max_value=2), depth=st.integers(0, 3))
    def put(self, weight: int, depth: int) -> None:
        url = f"http://h/{self.counter}"
        key = (-weight, self.counter, url, depth)
        self.counter += 1
        self.q.put(url, depth=depth, weight=weight)
        heapq.heappush(self.heap, key)

    @rule()
    def get(self) -> None:
        item = self.q.get()
        if not self.heap:
            assert item is None
            return
        neg_weight, _, url, depth = expected = heapq.heappop(self.heap)
        assert item is not None
        assert (item.url, item.weight, item.depth) == (url, -neg_weight, depth)
        self.outstanding[url] = expected
        self.gotten[url] = item

    @precondition(lambda self: self.outstanding)
    @rule(data=st.data())
    def ack(self, data: st.DataObject) -> None:
        url = data.draw(st.sampled_from(sorted(self.outstanding)))
        assert self.q.ack(self.gotten.pop(url))
        del self.outstanding[url]

    @rule(cache_size=st.one_of(st.none(), st.integers(min_value=1, max_value=6)))
    def reopen(self, cache_size: int | None) -> None:
        if cache_size is not None:
            self.cache_size = cache_size
        self.q.close()
        self.q = UrlQueueManager(self.dir, cache_size=self.cache_size, fsync=False)
        for key in self.outstanding.values():
            heapq.heappush(self.heap, key)
        self.outstanding.clear()
        self.gotten.clear()
        self.remember()

    def remember(self) -> None:
        state = self.heap + list(self.outstanding.values())
        heapq.heapify(state)
        self.synced = (state, self.counter)

    @rule()
    def flush(self) -> None:
        self.q.flush()
        self.remember()

    @rule()
    def sync(self) -> None:
        self.q.sync()
        self.remember()

    @rule()
    def crash(self) -> None:
        self.q.abandon()
        self.q = UrlQueueManager(self.dir, cache_size=self.cache_size, fsync=False)
        heap, self.counter = self.synced
        self.heap = list(heap)
        self.outstanding.clear()
        self.gotten.clear()

    @invariant()
    def length_matches(self) -> None:
        if hasattr(self, "q"):
            assert len(self.q) == len(self.heap)
            assert self.q.taken == len(self.outstanding)

    def teardown(self) -> None:
        if hasattr(self, "q"):
            self.q.close()
        shutil.rmtree(self.dir, ignore_errors=True)


FrontierModel.TestCase.settings = settings(max_examples=300, stateful_step_count=60, deadline=None)
TestFrontierMatchesHeap = FrontierModel.TestCase
