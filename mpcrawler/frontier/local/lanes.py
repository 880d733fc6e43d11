"""Lanes: the local queue's hosts and lanes in memory, and the ready heap over them.

Owned by :class:`~mpcrawler.frontier.local.queue.UrlQueueManager` (the order
and tiers are described there).  Each host with URLs in memory or in blocks
is a :class:`HostQueue`: one :class:`Lane` per priority, oldest first
(``front``, read back from blocks or given back; ``blocks`` on disk;
``back``).  A heap of the hosts that may be leased from now, keyed by each
one's best URL, gives the next lease in O(log hosts).  This part keeps:

- the hosts and lanes, and how many URLs are in memory (``mem``);
- the hosts' blocks (``blocked``, the scheduler's), and which frozen hosts
  were unblocked since the last lease (thawed together at the next);
- the tombstones: URLs acked (or dropped) while still on disk, skipped when read.

It reads blocks (:mod:`.blocks`) and freezes and thaws hosts (:mod:`.cold`);
moving URLs out of memory is the spiller's (:mod:`.spill`).
"""

from __future__ import annotations

import functools
import heapq
import sqlite3
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ...web.urls import host_key
from ..base import UrlInfo
from ..hostblocks import HostBlocks
from .blocks import BlockStore, urls_in
from .cold import ColdHosts

__all__ = ["SMALL_RUN", "Guard", "HostQueue", "Lane", "Lanes", "Run", "grown", "moves"]

SMALL_RUN = 16  # a lane's back holds this many URLs in a list, more in a deque

Run = list[UrlInfo] | deque[UrlInfo]  # URLs in order: a list while short


def grown(run: Run) -> Run:
    """``run``, as a deque once it is longer than SMALL_RUN.  A deque costs
    760 bytes however short (a block of 64 slots): with a URL or two in
    memory for each of 10,000 hosts, as a broad crawl has, that was 7.6 MB."""
    return deque(run) if type(run) is list and len(run) > SMALL_RUN else run


class Guard:
    """The queue's record of a write that failed while URLs moved between
    memory and files (a full disk during a spill or a refill): they may be
    in neither, so no checkpoint is written after it (``failed``)."""

    def __init__(self) -> None:
        self.failed: BaseException | None = None


def moves(method: Callable[..., Any]) -> Callable[..., Any]:
    """A step that moves URLs between memory and files: a write failing in
    it is kept in the part's ``guard``; the last checkpoint and the
    journal, replayed when the queue is reopened, hold every URL."""

    @functools.wraps(method)
    def step(self: Any, *args: Any) -> Any:
        try:
            return method(self, *args)
        except (OSError, sqlite3.Error) as exc:
            self.guard.failed = exc
            raise

    return step


class Lane:
    """One host's URLs of one priority, oldest first: ``front`` (read back
    from blocks, or given back), then ``blocks`` on disk, then ``back``.
    ``front`` is empty whenever there are no blocks."""

    __slots__ = ("back", "blocks", "front")

    def __init__(self) -> None:
        self.front: deque[UrlInfo] | None = None
        self.blocks: array[int] | None = None
        self.back: Run | None = None  # None when empty: a host in blocks costs less

    def head_seq(self) -> int:
        if self.front:
            return self.front[0].seq
        if self.blocks:
            return self.blocks[4]
        assert self.back
        return self.back[0].seq

    def empty(self) -> bool:
        return not self.front and not self.blocks and not self.back


class HostQueue:
    """One host's URLs in the queue: a lane per priority, and its entry in the ready heap."""

    __slots__ = ("cold", "entry", "key", "lanes", "mem", "size")

    def __init__(self, key: str, cold: bool = False) -> None:
        self.key = key
        self.cold = cold  # it may have frozen lanes (thawed before it is leased from)
        self.lanes: dict[int, Lane] = {}
        self.entry: tuple[int, int, HostQueue] | None = None  # its live entry in the ready heap
        self.mem = 0  # URLs in memory
        self.size = 0  # URLs in memory and in blocks

    def __lt__(self, other: HostQueue) -> bool:
        return False  # a stale heap entry may tie with a live one (a URL given back)


class Lanes:
    """The hosts and lanes of one queue; ``read_batch`` URLs at most are
    read from a block at a time."""

    def __init__(self, store: BlockStore, cold: ColdHosts, guard: Guard, read_batch: int) -> None:
        self.store, self.cold, self.guard = store, cold, guard
        self.read_batch = read_batch
        self.hosts: dict[str, HostQueue] = {}  # hosts with URLs in memory or blocks
        self.mem_hosts: dict[str, HostQueue] = {}  # hosts with URLs in memory
        self.mem = 0
        self.tombstones: set[int] = set()
        # readiness (not persisted)
        self.heap: list[tuple[int, int, HostQueue]] = []
        self.blocked = HostBlocks()
        self.thawing: dict[str, None] = {}  # frozen hosts unblocked since the last lease

    # --------------------------------------------------------------- lease
    def ready(self, now: float | None) -> None:
        """Before a lease at ``now`` (None: the monotonic clock): hosts whose
        block ran out, and frozen hosts unblocked since the last lease, are ready."""
        if self.blocked.timed:
            self.wake(time.monotonic() if now is None else now)
        if self.thawing:
            self._thaw_unblocked()

    def pop_best(self) -> UrlInfo | None:
        """Take the best URL of a ready host in memory or blocks (None: no
        ready host has one)."""
        heap = self.heap
        while heap:
            entry = heap[0]
            host = entry[2]
            if host.entry is not entry:
                heapq.heappop(heap)
                continue
            lane = host.lanes[-entry[0]]
            back = lane.back
            if back is not None and len(back) > 1 and not lane.front and not lane.blocks:
                # The common case, inline: the lane stays its host's best.
                item = back.popleft() if type(back) is deque else back.pop(0)
                host.mem -= 1
                host.size -= 1
                self.mem -= 1
                host.entry = entry = (entry[0], back[0].seq, host)
                heapq.heapreplace(heap, entry)
                return item
            item = self._take(host, -entry[0])
            self._retouch_head(host)
            if item is not None:
                return item
            # the lane's blocks held only acked URLs: the next best
        return None

    # -------------------------------------------------------------- blocks
    def block(self, host: str, until: float) -> None:
        """``host`` may not be leased from before ``until`` (FOREVER: until
        blocked again; 0: ready now)."""
        queued = self.hosts.get(host)
        if until <= 0:
            if self.blocked.set(host, 0):
                self._touch_key(host)
            return
        if queued is not None:
            host = queued.key  # one string per host, not one per caller
        if self.blocked.set(host, until) and queued is not None:
            queued.entry = None

    def wake(self, now: float) -> None:
        for key in self.blocked.wake(now):
            self._touch_key(key)

    def _touch_key(self, key: str) -> None:
        """``touch`` the host ``key`` that was just unblocked; a frozen one
        is thawed at the next lease, with the others unblocked by then."""
        host = self.hosts.get(key)
        if host is not None:
            self.touch(host)
        elif self.cold.maybe(key):
            self.thawing[key] = None

    # ------------------------------------------------------ hosts and lanes
    def lane_of(
        self, item: UrlInfo, thaw: bool = False, key: str | None = None
    ) -> tuple[HostQueue, Lane]:
        """The host and lane ``item`` belongs in (created if need be), with
        ``item`` counted in memory there; ``thaw``: with the host's frozen
        lanes back (``item`` may sort before them); ``key``: its host key,
        if the caller has it already."""
        if key is None:
            key = host_key(item.url)
        host = self.hosts.get(key)
        if host is None:
            host = self.hosts[key] = HostQueue(key, self.cold.maybe(key))
        if thaw and host.cold:
            self._thaw(host)
        lane = host.lanes.get(item.priority)
        if lane is None:
            lane = host.lanes[item.priority] = Lane()
        if not host.mem:
            self.mem_hosts[key] = host
        host.mem += 1
        host.size += 1
        self.mem += 1
        return host, lane

    def to_memory(self, item: UrlInfo, key: str | None = None) -> None:
        """Append ``item`` to its lane's back (it is the newest there)."""
        host, lane = self.lane_of(item, key=key)
        if lane.back is None:
            lane.back = [item]
        else:
            lane.back.append(item)
            if len(lane.back) == SMALL_RUN + 1:
                lane.back = grown(lane.back)
        entry = host.entry
        if entry is None or item.priority > -entry[0]:
            self.touch(host)

    def touch(self, host: HostQueue) -> None:
        """Put ``host`` in the ready heap under its best URL, unless it is
        blocked or empty (then it leaves the heap)."""
        if host.cold and host.key not in self.blocked:
            self._thaw(host)
        if not host.size:
            host.entry = None
            self.hosts.pop(host.key, None)
            return
        if host.key in self.blocked:
            host.entry = None
            return
        priority = max(host.lanes)
        entry = (-priority, host.lanes[priority].head_seq(), host)
        old = host.entry
        if old is not None and old[0] == entry[0] and old[1] == entry[1]:
            return
        host.entry = entry
        heap = self.heap
        heapq.heappush(heap, entry)
        if len(heap) > 2 * len(self.hosts) + 1024:  # mostly stale entries: drop them
            self.heap = [h.entry for h in self.hosts.values() if h.entry is not None]
            heapq.heapify(self.heap)

    def touch_all(self) -> None:
        """Every host into the ready heap afresh (after a reopening)."""
        for host in list(self.hosts.values()):
            host.entry = None
            self.touch(host)

    def _retouch_head(self, host: HostQueue) -> None:
        """After taking the head of ``host`` (at the top of the heap)."""
        if not host.size:
            host.entry = None
            self.hosts.pop(host.key, None)
            heapq.heappop(self.heap)
            return
        priority = max(host.lanes)
        entry = (-priority, host.lanes[priority].head_seq(), host)
        host.entry = entry
        heapq.heapreplace(self.heap, entry)

    def _take(self, host: HostQueue, priority: int) -> UrlInfo | None:
        """Remove the head of one lane of ``host`` (None: the head of its
        first block was acked or excluded; the lane's head is a later URL,
        which may not be the best of all any more: try again)."""
        lane = host.lanes[priority]
        if not lane.front and lane.blocks:
            head = lane.blocks[4]  # the host was chosen under this seq
            self.load_block(host, lane)
            if lane.empty():
                del host.lanes[priority]
                return None
            if lane.head_seq() != head:  # tombstones read past (acked, or excluded)
                return None
        if lane.front:
            item: UrlInfo | None = lane.front.popleft()
            if not lane.front and not lane.blocks:
                lane.front = None
        elif lane.back:
            item = lane.back.popleft() if type(lane.back) is deque else lane.back.pop(0)
        else:
            item = None
        if item is not None:
            host.mem -= 1
            host.size -= 1
            self.mem -= 1
            if not host.mem:
                del self.mem_hosts[host.key]
        if lane.empty():
            del host.lanes[priority]
        return item

    def give_back(self, item: UrlInfo) -> None:
        """Put a leased ``item`` back where it sorts in its lane.  A lane is
        one sorted run (front, blocks, back), and blocks may hold items given
        back earlier: those that sort before ``item`` are read back first."""
        host, lane = self.lane_of(item, thaw=True)
        while lane.blocks and lane.blocks[4] < item.seq:
            self.load_block(host, lane)
        if lane.blocks:
            if lane.front is None:
                lane.front = deque()
            target: Run = lane.front
        else:
            if lane.back is None:
                lane.back = []
            target = lane.back
        at = 0
        while at < len(target) and target[at].seq < item.seq:
            at += 1
        target.insert(at, item)
        if target is lane.back:
            lane.back = grown(target)
        host.entry = None
        self.touch(host)

    def drop(self, match: Callable[[str], bool], gone: Callable[[int], None]) -> int:
        """Every URL in memory that ``match`` says True of leaves its lane
        (``gone`` is told its seq); how many."""
        dropped = 0
        for host in list(self.mem_hosts.values()):
            count = 0
            for priority, lane in list(host.lanes.items()):
                for side in ("front", "back"):
                    items: Run | None = getattr(lane, side)
                    if not items:
                        continue
                    kept: list[UrlInfo] = []
                    for item in items:
                        if match(item.url):
                            gone(item.seq)
                            count += 1
                        else:
                            kept.append(item)
                    run = deque(kept) if side == "front" else grown(kept)
                    setattr(lane, side, run or None)
                if lane.empty():
                    del host.lanes[priority]
            if count:
                host.mem -= count
                host.size -= count
                self.mem -= count
                dropped += count
                if not host.mem:
                    del self.mem_hosts[host.key]
                host.entry = None
                self.touch(host)
        return dropped

    def in_memory(self) -> Iterator[UrlInfo]:
        for host in self.mem_hosts.values():
            for lane in host.lanes.values():
                yield from lane.front or ()
                yield from lane.back or ()

    def block_lists(self) -> Iterator[array[int]]:
        """Every lane's blocks, of the hosts here (not the frozen ones)."""
        for host in self.hosts.values():
            for lane in host.lanes.values():
                if lane.blocks:
                    yield lane.blocks

    # ---------------------------------------------------- reading blocks
    def load_block(self, host: HostQueue, lane: Lane) -> None:
        """Read the head of ``lane``'s first block into its front (into its
        back, with the front, once the last block is read)."""
        assert lane.blocks is not None
        want = min(lane.blocks[3], self.read_batch)
        items, lost = self.store.read_head(lane.blocks, want)
        kept = self.drop_tombstones(items)
        host.size -= lost + len(items) - len(kept)
        if kept:
            if not host.mem:
                self.mem_hosts[host.key] = host
            host.mem += len(kept)
            self.mem += len(kept)
        if lane.blocks:
            if kept:
                if lane.front is None:
                    lane.front = deque(kept)
                else:
                    lane.front.extend(kept)
            return
        lane.blocks = None
        front, lane.front = lane.front, None
        run = [*front, *kept] if front else kept
        if not run:
            return
        back = lane.back
        if back is None:
            lane.back = grown(run)
        elif type(back) is deque:
            back.extendleft(reversed(run))
        else:
            lane.back = grown([*run, *back])

    def drop_tombstones(self, items: list[UrlInfo]) -> list[UrlInfo]:
        """``items`` read from disk, less the tombstones (each is met once)."""
        if not self.tombstones:
            return items
        kept = []
        for item in items:
            if item.seq in self.tombstones:
                self.tombstones.discard(item.seq)
            else:
                kept.append(item)
        return kept

    # ------------------------------------------------- freezing and thawing
    @moves
    def _thaw_unblocked(self) -> None:
        """Thaw, together, the frozen hosts unblocked since the last lease
        (those blocked again since stay frozen)."""
        keys = [key for key in self.thawing if key not in self.blocked]
        self.thawing = {}
        for key, lanes in self.cold.thaw_many(keys).items():
            host = self.hosts.get(key)
            if host is None:
                host = self.hosts[key] = HostQueue(key)
            self._give_frozen(host, lanes)
            host.entry = None
            self.touch(host)

    @moves
    def _thaw(self, host: HostQueue) -> None:
        """Give ``host`` its frozen lanes back: their blocks go before what
        it holds (URLs read for it since, all newer)."""
        self._give_frozen(host, self.cold.thaw(host.key))

    def _give_frozen(self, host: HostQueue, lanes: list[tuple[int, array[int]]]) -> None:
        """``host``'s thawed ``lanes`` back in it; it has no frozen ones left."""
        host.cold = False
        for priority, blocks in lanes:
            self.add_blocks(host, priority, blocks)

    def add_blocks(self, host: HostQueue, priority: int, blocks: array[int]) -> None:
        """``blocks`` (a frozen lane's, or a checkpoint's) in ``host``'s lane
        of ``priority``, before what it holds already (all newer)."""
        lane = host.lanes.get(priority)
        if lane is None:
            lane = host.lanes[priority] = Lane()
        if lane.blocks:
            blocks.extend(lane.blocks)
        lane.blocks = blocks
        host.size += urls_in(blocks)

    def host(self, key: str) -> HostQueue:
        """The host ``key``, made if it has nothing here yet."""
        host = self.hosts.get(key)
        if host is None:
            host = self.hosts[key] = HostQueue(key)
        return host

    def freeze(self, hosts: list[HostQueue]) -> None:
        """``hosts`` are blocked with nothing in memory: their lanes go to SQLite."""
        frozen = []
        for host in hosts:
            lanes = []
            for priority, lane in host.lanes.items():
                assert lane.blocks and not lane.front and not lane.back
                lanes.append((priority, lane.blocks))
            frozen.append((host.key, lanes))
            del self.hosts[host.key]
            host.entry = None
        self.cold.freeze(frozen)
