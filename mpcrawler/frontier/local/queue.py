"""UrlQueueManager: per-host, priority-ordered URL queues; bounded memory, crash-safe.

Owned by the master process only, through
:class:`mpcrawler.frontier.local.LocalFrontier`.  ``lease()`` answers "the
best URL of a host that may be fetched now" (the order is written down in
:mod:`mpcrawler.frontier.base`); ``block()`` is how the scheduler says a host
must wait.  Three tiers, after the classic
three-tier design, now holding per-host order:

* **cache** -- at most ``cache_size`` URLs in memory, in one *lane* per host
  and priority.  A heap of the hosts that may be fetched now, keyed by each
  host's best URL, makes ``lease()`` O(log hosts).
* **finding** files -- one global log per priority, for new URLs that sort
  after what the cache holds.  Hosts whose URLs are only here cost nothing:
  ``lease()`` reads the log's head into the cache when no ready host has a
  URL in memory (or the cache runs low).
* **waiting** files -- what spills out of memory keeps its place.  Either the
  cache's newest URLs go to the front of the log (a URL that spills keeps its
  turn, for every host), or -- when the cache is full of hosts that must wait
  and the log has to be read past them -- a host's URLs go to *blocks* of
  its own lanes: a block is a byte range of a waiting file, described in
  memory by five integers.  So a blocked host's backlog never stands in front
  of another host.  A blocked host left with nothing in memory is then
  *frozen*: its block lists go to SQLite (``cold.py``) and the queue keeps a
  few bits of a filter for it, until it may be leased from again.  A URL the
  log holds for a host that is blocked and has nothing queued goes to a block
  and is frozen straight away; hosts unblocked between two leases are thawed
  together at the next one.

One invariant keeps the order exact: every URL in the log sorts after every
URL in the cache, in blocks, or taken.  A put that sorts after the log's head
is appended to the log; anything else stays in the cache.

Durability is a checkpoint plus a journal.  A *checkpoint* writes the cache
and the taken (leased, not acked) URLs to a snapshot file, fsyncs every file
written since the last one, and atomically replaces ``state.json`` (each log
segment's read offset and valid length, each host's blocks, a new empty
*journal*).  Between checkpoints every put, lease, ack and release is
appended to the journal, framed in batches: ``sync()`` hands it to the OS
(survives the process being killed), ``flush()`` also fsyncs it and
checkpoints once the journal is long.  Reopening loads the checkpoint,
deletes files it does not reference, queues the journal's puts again, drops
what it acked (acked URLs still on disk become *tombstones*, skipped when
read) and puts taken URLs back in their places.  Politeness (``block``) is
not persisted: after reopening every host is ready.  A write that fails
while URLs move between memory and files (a full disk during a spill or a
refill) may leave them in neither: no checkpoint is written after it
(``failed``), so the last one and the journal still hold every URL.

The pieces, each with its own state: ``files.py`` (names, dirty files,
garbage), ``segments.py`` (the log), ``blocks.py`` (hosts' spilled blocks),
``cold.py`` (frozen hosts' block lists, committed with each checkpoint),
``journal.py`` (the journal and the state format), ``storage.py`` (framed
records); this module keeps the hosts, lanes and ready heap, and the order
of a checkpoint and of a reopening.
"""

from __future__ import annotations

import functools
import heapq
import json
import os
import sqlite3
import struct
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ...errors import FrontierError
from ...web.urls import host_key
from ..base import UrlInfo
from ..hostblocks import HostBlocks
from .blocks import BlockStore, urls_in
from .cold import ColdHosts
from .files import QueueFiles, waiting_name
from .journal import (
    ACK,
    BLOCK,
    FORMAT_VERSION,
    LEASE,
    PUT,
    READ_VERSIONS,
    RELEASE,
    STATE_FILE,
    JournalWriter,
    inspect,
    parse_journal,
)
from .segments import SegmentLog
from .storage import (
    MAX_URL_BYTES,
    atomic_write,
    decode_items,
    encode_item,
    kind_code,
    log,
    read_frames,
    read_items,
)

__all__ = ["FORMAT_VERSION", "UrlQueueManager", "inspect"]

_JOURNAL_LIMIT = 500_000  # operations; flush() checkpoints past this


def _moves(method: Callable[..., None]) -> Callable[..., None]:
    """A step that moves URLs between memory and files (a spill, a refill):
    a write failing in it (a full disk) may leave them in neither, so the
    queue writes no checkpoint after it; its last one and the journal,
    replayed when the queue is reopened, hold every URL."""

    @functools.wraps(method)
    def step(self: UrlQueueManager, *args: Any) -> None:
        try:
            method(self, *args)
        except (OSError, sqlite3.Error) as exc:
            self.failed = exc
            raise

    return step


SMALL_RUN = 16  # a lane's back holds this many URLs in a list, more in a deque

Run = list[UrlInfo] | deque[UrlInfo]  # URLs in order: a list while short


def _grown(run: Run) -> Run:
    """``run``, as a deque once it is longer than SMALL_RUN.  A deque costs
    760 bytes however short (a block of 64 slots): with a URL or two in
    memory for each of 10,000 hosts, as a broad crawl has, that was 7.6 MB."""
    return deque(run) if type(run) is list and len(run) > SMALL_RUN else run


def _pop_head(run: Run) -> UrlInfo:
    return run.popleft() if type(run) is deque else run.pop(0)


class _Lane:
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


class HostQueue:
    """One host's URLs in the queue: a lane per priority, and its entry in the ready heap."""

    __slots__ = ("cold", "entry", "key", "lanes", "mem", "size")

    def __init__(self, key: str, cold: bool = False) -> None:
        self.key = key
        self.cold = cold  # it may have frozen lanes (thawed before it is leased from)
        self.lanes: dict[int, _Lane] = {}
        self.entry: tuple[int, int, HostQueue] | None = None  # its live entry in the ready heap
        self.mem = 0  # URLs in memory
        self.size = 0  # URLs in memory and in blocks

    def __lt__(self, other: HostQueue) -> bool:
        return False  # a stale heap entry may tie with a live one (a URL given back)


class UrlQueueManager:
    """Per-host priority queues of URLs: bounded memory, disk overflow, crash-safe.

    Not thread-safe: the master process is its only user.  Raises
    :class:`FrontierError` when ``directory`` holds a frontier of another
    format version or an unreadable ``state.json``; ``OSError`` (such as
    ENOSPC) from writes propagates, and the last checkpoint stays intact.
    """

    def __init__(
        self, directory: str | os.PathLike[str], cache_size: int = 10_000, *, fsync: bool = True
    ) -> None:
        if cache_size < 1:
            raise ValueError("cache_size must be at least 1")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.cache_size = cache_size
        self.files = QueueFiles(self.directory, fsync)
        self._spill_batch = max(1, cache_size // 4)
        self._refill_below = max(1, cache_size // 2)
        # memory and blocks
        self._hosts: dict[str, HostQueue] = {}  # hosts with URLs in memory or blocks
        self._mem_hosts: dict[str, HostQueue] = {}  # hosts with URLs in memory
        self._mem = 0
        self._blocks_on_disk = BlockStore(self.files)
        self._cold = ColdHosts(self.directory, fsync)
        self._tombstones: set[int] = set()
        # readiness (not persisted)
        self._heap: list[tuple[int, int, HostQueue]] = []
        self._blocks = HostBlocks()
        self._thawing: dict[str, None] = {}  # frozen hosts unblocked since the last lease
        self._log = SegmentLog(self.files)
        # taken, snapshot, journal
        self._unacked: dict[int, UrlInfo] = {}
        self._next_seq = 0
        self._snapshot: str | None = None
        self._journal = JournalWriter()
        self.recovered: list[UrlInfo] = []  # puts queued again from the journal
        self.spilled_total = 0
        self._closed = False
        self.failed: BaseException | None = None  # a write that failed while URLs moved
        self._load()

    # ------------------------------------------------------------------ API
    def put(
        self,
        url: str,
        depth: int = 0,
        priority: int = 0,
        kind: str = "page",
        lastmod: str | None = None,
    ) -> UrlInfo:
        """Queue ``url``; returns the stored :class:`UrlInfo`."""
        if not isinstance(priority, int) or not isinstance(depth, int):
            raise TypeError("priority and depth must be ints")
        data = url.encode("utf-8")
        if len(data) > MAX_URL_BYTES:
            raise ValueError(f"a URL of {len(data)} bytes is too long to queue")
        if lastmod is None and kind == "page":
            extra, code = b"", 0
        else:
            extra, code = (lastmod or "").encode("utf-8")[:255], kind_code(kind)
            lastmod = extra.decode("utf-8", "ignore") or None
        seq = self._next_seq
        self._next_seq = seq + 1
        self._journal.put(seq, priority, depth, data, code, extra)
        item = UrlInfo(url, depth, priority, seq, kind, lastmod)
        self._insert(item)
        return item

    def lease(self, now: float | None = None) -> UrlInfo | None:
        """The best URL of a host not blocked at ``now`` (default: the
        monotonic clock), or None.  Ack it (or release it) when done."""
        if self._blocks.timed:
            self._wake(time.monotonic() if now is None else now)
        if self._thawing:
            self._thaw_unblocked()
        if self._mem < self._refill_below and self._log.count:
            self._refill()
        while True:
            heap = self._heap  # _refill() below may compact it into a new list
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
                    self._mem -= 1
                    host.entry = entry = (entry[0], back[0].seq, host)
                    heapq.heapreplace(heap, entry)
                else:
                    item = self._take(host, -entry[0])
                    self._retouch_head(host)
                    if item is None:
                        continue  # the lane's blocks held only acked URLs
                self._unacked[item.seq] = item
                self._journal.op(LEASE, item.seq)
                return item
            if not self._log.count:
                return None
            if self._mem >= self.cache_size - self._spill_batch:
                # Every URL in memory belongs to a host that must wait: move
                # them to their lanes' blocks and read the log past them.
                self._spill_hosts(list(self._mem_hosts.values()))
            self._refill()

    def ack(self, item: UrlInfo) -> bool:
        """Mark a leased item done; False if it was not outstanding."""
        if self._unacked.pop(item.seq, None) is None:
            return False
        self._journal.op(ACK, item.seq)
        return True

    def release(self, item: UrlInfo) -> bool:
        """Give a leased item back, to its place; False if it was not outstanding."""
        if self._unacked.pop(item.seq, None) is None:
            return False
        self._journal.op(RELEASE, item.seq)
        self._give_back(item)
        if self._mem > self.cache_size:
            self._overflow()
        return True

    def drop(self, match: Callable[[str], bool]) -> int:
        """Every queued URL (not taken) that ``match`` says True of leaves the
        queue; how many.  Those in memory leave their lanes; those on disk
        (the log and blocks, read through once) become tombstones, skipped
        when read.  Each is journaled as acked, so a kill keeps it dropped."""
        self._check_open()
        dropped = 0
        for host in list(self._mem_hosts.values()):
            gone = 0
            for priority, lane in list(host.lanes.items()):
                for side in ("front", "back"):
                    items: Run | None = getattr(lane, side)
                    if not items:
                        continue
                    kept: list[UrlInfo] = []
                    for item in items:
                        if match(item.url):
                            self._journal.op(ACK, item.seq)
                            gone += 1
                        else:
                            kept.append(item)
                    run = deque(kept) if side == "front" else _grown(kept)
                    setattr(lane, side, run or None)
                if not lane.front and not lane.back and not lane.blocks:
                    del host.lanes[priority]
            if gone:
                host.mem -= gone
                host.size -= gone
                self._mem -= gone
                dropped += gone
                if not host.mem:
                    del self._mem_hosts[host.key]
                host.entry = None
                self._touch(host)
        for item in self._on_disk():
            if item.seq not in self._tombstones and match(item.url):
                self._tombstones.add(item.seq)
                self._journal.op(ACK, item.seq)
                dropped += 1
        return dropped

    def count(self, predicate: Callable[[UrlInfo], bool]) -> int:
        """How many queued URLs (not taken) ``predicate`` says True of: a
        walk of memory and of the files on disk (the log and blocks), as
        ``drop`` does, that changes nothing."""
        self._check_open()
        found = 0
        for host in self._mem_hosts.values():
            for lane in host.lanes.values():
                for items in (lane.front, lane.back):
                    found += sum(1 for item in items or () if predicate(item))
        for item in self._on_disk():
            if item.seq not in self._tombstones and predicate(item):
                found += 1
        return found

    def _on_disk(self) -> Iterator[UrlInfo]:
        """The URLs of the log and of every block, as they are on disk
        (tombstones included), read without moving them."""
        self._log.sync_writers()
        for segments in self._log.runs.values():
            for seg in segments:
                path = self.files.path(seg.name)
                yield from read_items(path, seg.name, seg.offset, seg.end, seg.count)[0]
        lanes = [lane.blocks for host in self._hosts.values() for lane in host.lanes.values()]
        for blocks in [*lanes, *self._cold.blocks()]:
            for at in range(0, len(blocks) if blocks else 0, BLOCK):
                number, offset, end, count, _ = blocks[at : at + BLOCK]  # type: ignore[index]
                name = waiting_name(number)
                yield from read_items(self.files.path(name), name, offset, end, count)[0]

    def block(self, host: str, until: float) -> None:
        """``host`` may not be leased from before ``until`` (monotonic; FOREVER:
        until blocked again with a time; 0: ready now)."""
        queued = self._hosts.get(host)
        if until <= 0:
            if self._blocks.set(host, 0):
                self._touch_key(host)
            return
        if queued is not None:
            host = queued.key  # one string per host, not one per caller
        if self._blocks.set(host, until) and queued is not None:
            queued.entry = None

    def next_ready(self, now: float) -> float | None:
        """The earliest time after ``now`` a host blocked until then becomes
        ready (None: none is); it may have nothing queued.  Hosts whose block
        ran out by ``now`` go back to the ready heap first (a wake that only
        dropped their blocks would leave them out of it, queued for good)."""
        self._wake(now)
        return self._blocks.next_time(now)

    def blocked(self, host: str) -> float:
        """Until when ``host`` is blocked (0: not blocked)."""
        return self._blocks.get(host)

    def __len__(self) -> int:
        return self._mem + self._blocks_on_disk.count + self._log.count - len(self._tombstones)

    @property
    def next_seq(self) -> int:
        """The seq the next put gets (every seq below it was put)."""
        return self._next_seq

    @property
    def taken(self) -> int:
        """Items leased and not yet acked (queued again on reopening)."""
        return len(self._unacked)

    def stats(self) -> dict[str, int]:
        return {
            "queued": len(self),
            "in_cache": self._mem,
            "waiting": self._blocks_on_disk.count + self._log.waiting,
            "finding": self._log.count - self._log.waiting,
            "taken": len(self._unacked),
            "spilled": self.spilled_total,
            "hosts_queued": len(self._hosts),
            "frozen": self._cold.urls,
            "hosts_blocked": len(self._blocks),
        }

    def sync(self) -> None:
        """Hand the journal to the OS: everything so far survives this process
        being killed (not a power cut; that takes ``flush()``)."""
        self._check_open()
        self._journal.sync()

    def flush(self) -> None:
        """Everything so far is durable once this returns."""
        self._check_open()
        if self._journal.ops >= _JOURNAL_LIMIT and self.failed is None:
            self.checkpoint()
            return
        self._journal.sync(fsync=self.files.fsync)

    def checkpoint(self) -> None:
        """Write the whole state afresh and start an empty journal.  Refused
        (FrontierError) once a write failed while URLs moved (``failed``):
        the journal is synced instead, and the last checkpoint kept."""
        self._check_open()
        if self.failed is not None:
            self._journal.sync(fsync=self.files.fsync)
            raise FrontierError(
                f"a frontier write failed while URLs moved ({self.failed}): its "
                "last checkpoint and journal are kept, and hold every URL when reopened"
            )
        back: list[UrlInfo] = []
        front: list[UrlInfo] = []
        runs: dict[str, list[list[Any]]] = {}
        for host in self._hosts.values():
            for priority, lane in host.lanes.items():
                if lane.front:
                    front.extend(lane.front)
                if lane.back:
                    back.extend(lane.back)
                if lane.blocks:
                    runs.setdefault(host.key, []).append([priority, lane.blocks.tolist()])
        unacked = sorted(self._unacked.values(), key=lambda i: i.seq)
        files = self.files
        old_snapshot, old_journal = self._snapshot, self._journal.name
        self._snapshot = None
        if back or front or unacked:
            name = files.new_name("snapshot", "seg")
            files.write(name, b"".join(map(encode_item, back + front + unacked)))
            self._snapshot = name
        self._log.sync_writers()
        files.sync_dirty()
        journal_name = files.new_name("journal", "log")
        state = {
            "format": FORMAT_VERSION,
            "next_seq": self._next_seq,
            "next_segment": files.number,
            "spilled": self.spilled_total,
            "snapshot": self._snapshot,
            "snapshot_counts": [len(back), len(front), len(unacked)],
            "journal": journal_name,
            "segments": self._log.to_json(),
            "runs": runs,
            "blocks_max": self._blocks_on_disk.max,
            "tombstones": sorted(self._tombstones),
        }
        state["cold"] = {"gen": self._cold.commit(), "urls": self._cold.urls}
        (files.directory / journal_name).touch()  # before the state that names it
        atomic_write(files.directory / STATE_FILE, json.dumps(state).encode(), files.fsync)
        self._cold.committed()
        self._journal.start(files.path(journal_name))
        files.garbage += [n for n in (old_snapshot, old_journal) if n]
        files.sweep()

    def close(self) -> None:
        """Checkpoint and release files.  Un-acked items are delivered again on reopen."""
        if self._closed:
            return
        if self.failed is not None:  # no checkpoint: the journal keeps what came after
            log.info("frontier: closed without a checkpoint, a write failed (%s)", self.failed)
            try:
                self._journal.sync(fsync=self.files.fsync)
            finally:
                self._release_files(discard=False)
            return
        self.checkpoint()
        self._release_files(discard=False)

    def abandon(self) -> None:
        """Drop everything not yet synced and release files, as if killed (for tests)."""
        self._release_files(discard=True)

    def __enter__(self) -> UrlQueueManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[UrlInfo]:
        """Lease (without acking) until empty."""
        while (item := self.lease()) is not None:
            yield item

    # ---------------------------------------------------------- the files
    def _release_files(self, *, discard: bool) -> None:
        self._blocks_on_disk.close()
        self._cold.close()
        self._log.close(discard=discard)
        self._journal.close(discard=discard)
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise FrontierError("the queue is closed")

    # ------------------------------------------------------ hosts and lanes
    def _insert(self, item: UrlInfo) -> None:
        """Queue ``item``: to the log if it sorts after the log's head, else memory."""
        if self._log.count and item.priority <= self._log.top:
            self._log.append(item)
            return
        self._to_memory(item)
        if self._mem > self.cache_size:
            self._overflow()

    def _lane_of(
        self, item: UrlInfo, thaw: bool = False, key: str | None = None
    ) -> tuple[HostQueue, _Lane]:
        """The host and lane ``item`` belongs in (created if need be), with
        ``item`` counted in memory there; ``thaw``: with the host's frozen
        lanes back (``item`` may sort before them); ``key``: its host key,
        if the caller has it already."""
        if key is None:
            key = host_key(item.url)
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = HostQueue(key, self._cold.maybe(key))
        if thaw and host.cold:
            self._thaw(host)
        lane = host.lanes.get(item.priority)
        if lane is None:
            lane = host.lanes[item.priority] = _Lane()
        if not host.mem:
            self._mem_hosts[key] = host
        host.mem += 1
        host.size += 1
        self._mem += 1
        return host, lane

    def _to_memory(self, item: UrlInfo, key: str | None = None) -> None:
        """Append ``item`` to its lane's back (it is the newest there)."""
        host, lane = self._lane_of(item, key=key)
        if lane.back is None:
            lane.back = [item]
        else:
            lane.back.append(item)
            if len(lane.back) == SMALL_RUN + 1:
                lane.back = _grown(lane.back)
        entry = host.entry
        if entry is None or item.priority > -entry[0]:
            self._touch(host)

    def _touch(self, host: HostQueue) -> None:
        """Put ``host`` in the ready heap under its best URL, unless it is
        blocked or empty (then it leaves the heap)."""
        if host.cold and host.key not in self._blocks:
            self._thaw(host)
        if not host.size:
            host.entry = None
            self._hosts.pop(host.key, None)
            return
        if host.key in self._blocks:
            host.entry = None
            return
        priority = max(host.lanes)
        entry = (-priority, host.lanes[priority].head_seq(), host)
        old = host.entry
        if old is not None and old[0] == entry[0] and old[1] == entry[1]:
            return
        host.entry = entry
        heap = self._heap
        heapq.heappush(heap, entry)
        if len(heap) > 2 * len(self._hosts) + 1024:  # mostly stale entries: drop them
            self._heap = [h.entry for h in self._hosts.values() if h.entry is not None]
            heapq.heapify(self._heap)

    def _retouch_head(self, host: HostQueue) -> None:
        """After taking the head of ``host`` (at the top of the heap)."""
        if not host.size:
            host.entry = None
            self._hosts.pop(host.key, None)
            heapq.heappop(self._heap)
            return
        priority = max(host.lanes)
        entry = (-priority, host.lanes[priority].head_seq(), host)
        host.entry = entry
        heapq.heapreplace(self._heap, entry)

    def _wake(self, now: float) -> None:
        for key in self._blocks.wake(now):
            self._touch_key(key)

    def _touch_key(self, key: str) -> None:
        """``_touch`` the host ``key`` that was just unblocked; a frozen one
        is thawed at the next lease, with the others unblocked by then."""
        host = self._hosts.get(key)
        if host is not None:
            self._touch(host)
        elif self._cold.maybe(key):
            self._thawing[key] = None

    @_moves
    def _thaw_unblocked(self) -> None:
        """Thaw, together, the frozen hosts unblocked since the last lease
        (those blocked again since stay frozen)."""
        keys = [key for key in self._thawing if key not in self._blocks]
        self._thawing = {}
        for key, lanes in self._cold.thaw_many(keys).items():
            host = self._hosts.get(key)
            if host is None:
                host = self._hosts[key] = HostQueue(key)
            self._give_frozen(host, lanes)
            host.entry = None
            self._touch(host)

    @_moves
    def _thaw(self, host: HostQueue) -> None:
        """Give ``host`` its frozen lanes back: their blocks go before what
        it holds (URLs read for it since, all newer)."""
        self._give_frozen(host, self._cold.thaw(host.key))

    def _give_frozen(self, host: HostQueue, lanes: list[tuple[int, array[int]]]) -> None:
        """``host``'s thawed ``lanes`` back in it; it has no frozen ones left."""
        host.cold = False
        for priority, blocks in lanes:
            self._add_frozen(host, priority, blocks)

    @staticmethod
    def _add_frozen(host: HostQueue, priority: int, blocks: array[int]) -> None:
        """A frozen lane's ``blocks`` back in ``host``, before what its lane
        holds already (URLs read for it since, all newer)."""
        lane = host.lanes.get(priority)
        if lane is None:
            lane = host.lanes[priority] = _Lane()
        if lane.blocks:
            blocks.extend(lane.blocks)
        lane.blocks = blocks
        host.size += urls_in(blocks)

    def _freeze(self, hosts: list[HostQueue]) -> None:
        """``hosts`` are blocked with nothing in memory: their lanes go to SQLite."""
        frozen = []
        for host in hosts:
            lanes = []
            for priority, lane in host.lanes.items():
                assert lane.blocks and not lane.front and not lane.back
                lanes.append((priority, lane.blocks))
            frozen.append((host.key, lanes))
            del self._hosts[host.key]
            host.entry = None
        self._cold.freeze(frozen)

    def _take(self, host: HostQueue, priority: int) -> UrlInfo | None:
        """Remove the head of one lane of ``host`` (None: the head of its
        first block was acked or excluded; the lane's head is a later URL,
        which may not be the best of all any more: try again)."""
        lane = host.lanes[priority]
        if not lane.front and lane.blocks:
            head = lane.blocks[4]  # the host was chosen under this seq
            self._load_block(host, lane)
            if not (lane.front or lane.blocks or lane.back):
                del host.lanes[priority]
                return None
            if lane.head_seq() != head:  # tombstones read past (acked, or excluded)
                return None
        if lane.front:
            item = lane.front.popleft()
            if not lane.front and not lane.blocks:
                lane.front = None
        elif lane.back:
            item = _pop_head(lane.back)
        else:
            item = None
        if item is not None:
            host.mem -= 1
            host.size -= 1
            self._mem -= 1
            if not host.mem:
                del self._mem_hosts[host.key]
        if not lane.back and not lane.front and not lane.blocks:
            del host.lanes[priority]
        return item

    def _give_back(self, item: UrlInfo) -> None:
        """Put a leased ``item`` back where it sorts in its lane.  A lane is
        one sorted run (front, blocks, back), and blocks may hold items given
        back earlier: those that sort before ``item`` are read back first."""
        host, lane = self._lane_of(item, thaw=True)
        while lane.blocks and lane.blocks[4] < item.seq:
            self._load_block(host, lane)
        if lane.blocks:
            if lane.front is None:
                lane.front = deque()
            target = lane.front
        else:
            if lane.back is None:
                lane.back = []
            target = lane.back
        at = 0
        while at < len(target) and target[at].seq < item.seq:
            at += 1
        target.insert(at, item)
        if target is lane.back:
            lane.back = _grown(target)
        host.entry = None
        self._touch(host)

    # ------------------------------------------------------------ spilling
    def _limit(self) -> tuple[int, int] | None:
        """What a URL moved to the log's front must sort after: every URL in
        blocks and every URL taken (which may come back)."""
        limit = self._blocks_on_disk.max
        if self._unacked:
            taken = max((-i.priority, i.seq) for i in self._unacked.values())
            limit = taken if limit is None else max(limit, taken)
        return limit

    @_moves
    def _overflow(self) -> None:
        """Bring memory back to 3/4 of the cache: the newest URLs of the lowest
        priority go to the front of the log while the order allows; the rest
        of the excess goes to hosts' blocks, blocked hosts and big lanes first."""
        to_spill = self._mem - (self.cache_size - self._spill_batch)
        limit = self._limit()
        while to_spill > 0:
            lanes: dict[int, list[_Lane]] = {}
            for host in self._mem_hosts.values():
                for priority, lane in host.lanes.items():
                    if lane.back:
                        lanes.setdefault(priority, []).append(lane)
            if not lanes:
                break
            priority = min(lanes)
            seqs = sorted(
                (i.seq for lane in lanes[priority] for i in lane.back or ()), reverse=True
            )
            eligible = seqs
            if limit is not None:
                eligible = [s for s in seqs if (-priority, s) > limit]
            take = min(to_spill, len(eligible))
            if not take:
                break
            threshold = eligible[take - 1]
            spilled = self._cut_backs(lanes[priority], threshold)
            self._log.push_front(priority, spilled)
            self.spilled_total += len(spilled)
            to_spill -= take
            if take < len(seqs):
                break  # the rest of this priority sorts before what is left
        if to_spill > 0:
            hosts = sorted(
                self._mem_hosts.values(), key=lambda h: (h.key not in self._blocks, -h.mem)
            )
            chosen = []
            for host in hosts:
                if to_spill <= 0:
                    break
                chosen.append(host)
                to_spill -= host.mem
            self._spill_hosts(chosen)

    def _cut_backs(self, lanes: list[_Lane], threshold: int) -> list[UrlInfo]:
        """Remove every URL of seq >= ``threshold`` from the backs of ``lanes``."""
        cut: list[UrlInfo] = []
        for lane in lanes:
            back = lane.back
            assert back is not None
            while back and back[-1].seq >= threshold:
                cut.append(back.pop())
        cut.sort(key=lambda i: i.seq)
        touched = set()
        for item in cut:
            key = host_key(item.url)
            host = self._hosts[key]
            host.mem -= 1
            host.size -= 1
            touched.add(key)
        self._mem -= len(cut)
        for key in touched:
            host = self._hosts[key]
            for priority in [
                p for p, lane in host.lanes.items() if not lane.back and not lane.blocks
            ]:
                del host.lanes[priority]
            if not host.mem:
                del self._mem_hosts[key]
            host.entry = None
            self._touch(host)
        return cut

    @_moves
    def _spill_hosts(self, hosts: list[HostQueue]) -> None:
        """Move every URL in memory of ``hosts`` to blocks of their lanes, in
        one waiting file: a lane's front becomes its first block, its back its last."""
        if not hosts:
            return
        parts: list[tuple[_Lane, bool, Run]] = []
        for host in hosts:
            for lane in host.lanes.values():
                parts += [(lane, True, lane.front)] if lane.front else []
                parts += [(lane, False, lane.back)] if lane.back else []
                lane.front = lane.back = None
            self._mem -= host.mem
            self.spilled_total += host.mem
            host.mem = 0
            del self._mem_hosts[host.key]
        blocks = self._blocks_on_disk.write([part for _, _, part in parts])
        for (lane, first, _), block in zip(parts, blocks, strict=True):
            if lane.blocks is None:
                lane.blocks = block
            elif first:
                lane.blocks = block + lane.blocks
            else:
                lane.blocks.extend(block)
        self._freeze([host for host in hosts if host.key in self._blocks])

    def _load_block(self, host: HostQueue, lane: _Lane) -> None:
        """Read the head of ``lane``'s first block into its front (into its
        back, with the front, once the last block is read)."""
        assert lane.blocks is not None
        want = min(lane.blocks[3], self._spill_batch)
        items, lost = self._blocks_on_disk.read_head(lane.blocks, want)
        kept = self._drop_tombstones(items)
        host.size -= lost + len(items) - len(kept)
        if kept:
            if not host.mem:
                self._mem_hosts[host.key] = host
            host.mem += len(kept)
            self._mem += len(kept)
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
            lane.back = _grown(run)
        elif type(back) is deque:
            back.extendleft(reversed(run))
        else:
            lane.back = _grown([*run, *back])

    def _drop_tombstones(self, items: list[UrlInfo]) -> list[UrlInfo]:
        if not self._tombstones:
            return items
        kept = []
        for item in items:
            if item.seq in self._tombstones:
                self._tombstones.discard(item.seq)
            else:
                kept.append(item)
        return kept

    @_moves
    def _refill(self) -> None:
        """Move the log's head into memory, up to 3/4 of the cache.  A URL
        of a host that is blocked and has nothing in memory or blocks (none
        at all, or frozen) goes straight to a block of its own and is frozen
        there: it would only be spilled and frozen again."""
        want = max(1, self.cache_size - self._spill_batch - self._mem)
        hosts, blocked = self._hosts, self._blocks
        waiting: dict[tuple[str, int], list[UrlInfo]] = {}
        held = 0  # URLs in ``waiting``: frozen a spill batch at a time
        while want > 0 and self._log:
            items = self._log.read_head(want)
            for item in self._drop_tombstones(items):
                key = host_key(item.url)
                if key in blocked and key not in hosts:
                    waiting.setdefault((key, item.priority), []).append(item)
                    held += 1
                else:
                    self._to_memory(item, key)
                    want -= 1
            if held >= self._spill_batch:
                self._freeze_waiting(waiting)
                waiting, held = {}, 0
            if not items:
                want -= 1  # a segment of tombstones only: go on, but never forever
        if waiting:
            self._freeze_waiting(waiting)

    def _freeze_waiting(self, runs: dict[tuple[str, int], list[UrlInfo]]) -> None:
        """Each of ``runs`` (a blocked host's URLs of one priority, read from
        the log) as a block of one new waiting file, frozen at once."""
        lanes: dict[str, list[tuple[int, array[int]]]] = {}
        blocks = self._blocks_on_disk.write(list(runs.values()))
        for (key, priority), block in zip(runs, blocks, strict=True):
            lanes.setdefault(key, []).append((priority, block))
        self.spilled_total += sum(map(len, runs.values()))
        self._cold.freeze(list(lanes.items()))

    # ------------------------------------------------------------- loading
    def _load(self) -> None:
        state_path = self.directory / STATE_FILE
        if not state_path.exists():
            self.files.remove_unreferenced(set())
            self._cold.open(-1)  # no checkpoint names any of its rows
            self.checkpoint()
            return
        try:
            state = json.loads(state_path.read_text("utf-8"))
            version = state["format"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise FrontierError(f"unreadable frontier state {state_path}: {exc}") from exc
        if version not in READ_VERSIONS:
            raise FrontierError(
                f"frontier in {self.directory} has format {version}; this version of "
                f"mpcrawler reads formats {', '.join(map(str, READ_VERSIONS))}"
            )
        try:
            referenced = self._load_state(state)
            snapshot, counts = state.get("snapshot"), state.get("snapshot_counts", [0, 0, 0])
            journal = state.get("journal")
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise FrontierError(f"malformed frontier state {state_path}: {exc}") from exc
        referenced.update(n for n in (snapshot, journal) if n)
        self.files.remove_unreferenced(referenced)
        puts, acked = self._read_journal(journal) if journal else ([], set())
        taken: list[UrlInfo] = []
        if snapshot:
            items = self._read_whole(snapshot)
            back, front = int(counts[0]), int(counts[1])
            for n, item in enumerate(items):
                if item.seq in acked:
                    acked.discard(item.seq)
                elif n < back:
                    self._to_memory(item)
                elif n < back + front:
                    self._give_back(item)
                else:
                    taken.append(item)
        for item in taken:  # before the puts: they sort before them
            self._give_back(item)
        for item in puts:
            if item.seq != self._next_seq:
                log.error(
                    "frontier: journal %s does not follow its checkpoint; replay stopped", journal
                )
                break
            self._next_seq += 1
            self.recovered.append(item)
            if item.seq in acked:
                acked.discard(item.seq)
            else:
                self._insert(item)
        self._tombstones.update(acked)  # acked, and still on disk
        for host in list(self._hosts.values()):
            host.entry = None
            self._touch(host)
        if self._mem > self.cache_size:
            self._overflow()
        self.checkpoint()

    def _load_state(self, state: dict[str, Any]) -> set[str]:
        """The checkpoint's log and blocks; returns the files they use."""
        self._next_seq = int(state["next_seq"])
        self.files.number = int(state["next_segment"])
        self.spilled_total = int(state.get("spilled", 0))
        referenced = self._log.load(state["segments"])
        store = self._blocks_on_disk
        for key, lanes in store.load(state["runs"]).items():
            host = self._hosts[key] = HostQueue(key)
            for priority, blocks in lanes:
                lane = host.lanes[priority] = _Lane()
                lane.blocks = blocks
                host.size += urls_in(blocks)
        cold = state.get("cold", {})
        rows = self._cold.open(int(cold.get("gen", 0)))
        frozen, counted = sum(urls_in(b) for _, _, b in rows), int(cold.get("urls", 0))
        if frozen != counted:
            raise FrontierError(
                f"{self._cold.path} lists {frozen} URLs of waiting hosts, where the "
                f"checkpoint counted {counted}: it was lost, replaced or damaged"
            )
        for key, priority, blocks in rows:
            host = self._hosts.get(key)
            if host is None:
                host = self._hosts[key] = HostQueue(key)
            self._add_frozen(host, priority, blocks)
            store.adopt(blocks)
        referenced |= store.files_used()
        blocks_max = state.get("blocks_max")
        store.max = tuple(blocks_max) if blocks_max else None  # type: ignore[assignment]
        self._tombstones = set(map(int, state.get("tombstones", [])))
        return referenced

    def _read_whole(self, name: str) -> list[UrlInfo]:
        self.files.garbage.append(name)
        return decode_items(read_frames(self.directory / name, name), name)

    def _read_journal(self, name: str) -> tuple[list[UrlInfo], set[int]]:
        """The journal's puts, and the seqs it acked (leases and releases do
        not matter: everything not acked is queued again)."""
        self.files.garbage.append(name)
        puts: list[UrlInfo] = []
        acked: set[int] = set()
        try:
            for op, value in parse_journal(read_frames(self.directory / name, name), name):
                if op == PUT:
                    puts.append(value)
                elif op == ACK:
                    acked.add(value)
        except (FrontierError, struct.error, UnicodeDecodeError) as exc:
            log.error("frontier: journal %s: %s; replay stopped there", name, exc)
        return puts, acked
