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

The pieces, each with its own state: ``lanes.py`` (the hosts and lanes in
memory, the ready heap, blocks, freezing and thawing), ``spill.py`` (where a
URL goes; spills and refills), ``checkpoint.py`` (a checkpoint, and a
reopening), ``files.py`` (names, dirty files, garbage), ``segments.py`` (the
log), ``blocks.py`` (hosts' spilled blocks), ``cold.py`` (frozen hosts' block
lists, committed with each checkpoint), ``journal.py`` (the journal and the
state format), ``storage.py`` (framed records).  This module is the queue's
operations over them, and what is taken (leased, not acked)::

    put --> Spiller.place --> the log (finding)  or  Lanes (memory) --overflow--> log front / blocks
    lease <-- Lanes.pop_best <-- refill <-- the log        blocks <--> cold (frozen hosts)
    every operation --> journal;  checkpoint: Checkpoints.write / reopening: Checkpoints.load
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ...errors import FrontierError
from ..base import UrlInfo
from .blocks import BlockStore
from .checkpoint import Checkpoints
from .cold import ColdHosts
from .files import QueueFiles, waiting_name
from .journal import ACK, BLOCK, FORMAT_VERSION, LEASE, RELEASE, JournalWriter, inspect
from .lanes import Guard, Lanes
from .segments import SegmentLog
from .spill import Spiller
from .storage import MAX_URL_BYTES, kind_code, log, read_items

__all__ = ["FORMAT_VERSION", "UrlQueueManager", "inspect"]

_JOURNAL_LIMIT = 500_000  # operations; flush() checkpoints past this


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
        self.guard = Guard()  # a write that failed while URLs moved
        store, cold = BlockStore(self.files), ColdHosts(self.directory, fsync)
        self._log = SegmentLog(self.files)
        self._unacked: dict[int, UrlInfo] = {}  # taken: leased, not acked
        self._lanes = Lanes(store, cold, self.guard, read_batch=max(1, cache_size // 4))
        self._spill = Spiller(
            self._lanes, self._log, store, cold, self._unacked, self.guard, cache_size
        )
        self._journal = JournalWriter()
        self._checkpoints = Checkpoints(self.files, self._lanes, self._spill, self._journal)
        self._closed = False
        self._next_seq, self.recovered = self._checkpoints.load(self._unacked)

    @property
    def failed(self) -> BaseException | None:
        """A write that failed while URLs moved between memory and files:
        no checkpoint is written after it."""
        return self.guard.failed

    @property
    def spilled_total(self) -> int:
        return self._spill.spilled_total

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
        self._spill.place(item)
        return item

    def lease(self, now: float | None = None) -> UrlInfo | None:
        """The best URL of a host not blocked at ``now`` (default: the
        monotonic clock), or None.  Ack it (or release it) when done."""
        lanes, spill = self._lanes, self._spill
        if lanes.blocked.timed or lanes.thawing:  # (inline: the hot path)
            lanes.ready(now)
        if lanes.mem < spill.refill_below and self._log.count:
            spill.refill()
        while (item := lanes.pop_best()) is None:
            if not self._log.count:
                if not (lanes.mem or lanes.store.count):
                    # Nothing is on disk: no tombstone can stand for a URL
                    # (after a damaged file, some stood for URLs it lost).
                    lanes.tombstones.clear()
                return None
            if spill.full():
                # Every URL in memory belongs to a host that must wait: move
                # them to their lanes' blocks and read the log past them.
                spill.spill_hosts(list(lanes.mem_hosts.values()))
            spill.refill()
        self._unacked[item.seq] = item
        self._journal.op(LEASE, item.seq)
        return item

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
        self._lanes.give_back(item)
        if self._lanes.mem > self.cache_size:
            self._spill.overflow()
        return True

    def drop(self, match: Callable[[str], bool]) -> int:
        """Every queued URL (not taken) that ``match`` says True of leaves the
        queue; how many.  Those in memory leave their lanes; those on disk
        (the log and blocks, read through once) become tombstones, skipped
        when read.  Each is journaled as acked, so a kill keeps it dropped."""
        self._check_open()
        dropped = self._lanes.drop(match, lambda seq: self._journal.op(ACK, seq))
        tombstones = self._lanes.tombstones
        for item in self._on_disk():
            if item.seq not in tombstones and match(item.url):
                tombstones.add(item.seq)
                self._journal.op(ACK, item.seq)
                dropped += 1
        return dropped

    def count(self, predicate: Callable[[UrlInfo], bool]) -> int:
        """How many queued URLs (not taken) ``predicate`` says True of: a
        walk of memory and of the files on disk (the log and blocks), as
        ``drop`` does, that changes nothing."""
        self._check_open()
        found = sum(1 for item in self._lanes.in_memory() if predicate(item))
        tombstones = self._lanes.tombstones
        return found + sum(
            1 for item in self._on_disk() if item.seq not in tombstones and predicate(item)
        )

    def _on_disk(self) -> Iterator[UrlInfo]:
        """The URLs of the log and of every block, as they are on disk
        (tombstones included), read without moving them."""
        self._log.sync_writers()
        for segments in self._log.runs.values():
            for seg in segments:
                path = self.files.path(seg.name)
                yield from read_items(path, seg.name, seg.offset, seg.end, seg.count)[0]
        for blocks in [*self._lanes.block_lists(), *self._lanes.cold.blocks()]:
            for at in range(0, len(blocks) if blocks else 0, BLOCK):
                number, offset, end, count, _ = blocks[at : at + BLOCK]
                name = waiting_name(number)
                yield from read_items(self.files.path(name), name, offset, end, count)[0]

    def block(self, host: str, until: float) -> None:
        """``host`` may not be leased from before ``until`` (monotonic; FOREVER:
        until blocked again with a time; 0: ready now)."""
        self._lanes.block(host, until)

    def next_ready(self, now: float) -> float | None:
        """The earliest time after ``now`` a host blocked until then becomes
        ready (None: none is); it may have nothing queued.  Hosts whose block
        ran out by ``now`` go back to the ready heap first (a wake that only
        dropped their blocks would leave them out of it, queued for good)."""
        self._lanes.wake(now)
        return self._lanes.blocked.next_time(now)

    def blocked(self, host: str) -> float:
        """Until when ``host`` is blocked (0: not blocked)."""
        return self._lanes.blocked.get(host)

    def queued_of(self, host: str) -> int:
        """URLs of ``host`` in memory and in blocks (tombstones counted until read)."""
        found = self._lanes.hosts.get(host)
        return 0 if found is None else found.size

    def __len__(self) -> int:
        lanes = self._lanes
        # (never below 0: tombstones of URLs a damaged file lost count until drained)
        return max(0, lanes.mem + lanes.store.count + self._log.count - len(lanes.tombstones))

    @property
    def next_seq(self) -> int:
        """The seq the next put gets (every seq below it was put)."""
        return self._next_seq

    @property
    def taken(self) -> int:
        """Items leased and not yet acked (queued again on reopening)."""
        return len(self._unacked)

    def stats(self) -> dict[str, int]:
        lanes = self._lanes
        return {
            "queued": len(self),
            "in_cache": lanes.mem,
            "waiting": lanes.store.count + self._log.waiting,
            "finding": self._log.count - self._log.waiting,
            "taken": len(self._unacked),
            "spilled": self._spill.spilled_total,
            "hosts_queued": len(lanes.hosts),
            "frozen": lanes.cold.urls,
            "hosts_blocked": len(lanes.blocked),
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
        self._checkpoints.write(self._next_seq, self._unacked)

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

    def _release_files(self, *, discard: bool) -> None:
        self._lanes.store.close()
        self._lanes.cold.close()
        self._log.close(discard=discard)
        self._journal.close(discard=discard)
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise FrontierError("the queue is closed")
