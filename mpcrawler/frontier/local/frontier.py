"""LocalFrontier: the embedded frontier, files in the job directory (the default).

Owned by the master.  It is the :class:`~mpcrawler.frontier.base.Frontier`
the crawler talks to: the seen set (:class:`SeenSet`, in ``DIR/seen``) and
the per-host queues (:class:`UrlQueueManager`, in ``DIR/frontier``) behind
one interface, kept consistent here.  A URL is durably seen only once its
put is durable: ``checkpoint()`` makes the queue durable first and the seen
set second, and after a crash the queue's replayed puts are marked seen again.

It keeps the crawl's page budgets (``set_budget``), as the shared frontier
does in Redis: no lease of a page past ``max_pages`` (pages recorded before
this run plus leases in it), no URL queued past ``max_pages_per_host`` of its
host (the counts in ``DIR/host-pages.db``, :class:`HostCounts`, made durable
after the seen set).  Embeds count against neither: once the pages are
spent, a lease still takes the embeds queued (their band of priorities puts
them ahead of every page, so the best URL is a page only when no embed is
ready); ``embeds`` counts them, from a walk of the queue the first time it
is wanted after opening.

Revisits (``schedule``) live in ``DIR/revisits.db`` (:class:`RevisitStore`),
opened once a run turns them on or finds the file.  A URL due again is put
into the queue like any other (``promote``, at a lease and every turn),
its row naming the copy queued; its state comes back with its lease.

A checkpoint does not hold the master's loop while the seen set's new URLs
go into diskcache: they are durable at once in one file of their digests
(``SeenSet.begin_flush``), then moved ``SEEN_STEP`` a turn of the loop.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...web.urls import host_key
from ..base import Admission, Revisit, UrlInfo
from .content import LocalContentIndex
from .hostcounts import FILE as COUNTS_FILE
from .hostcounts import HostCounts
from .queue import UrlQueueManager, inspect
from .revisits import FILE as REVISITS_FILE
from .revisits import NOT_QUEUED, RevisitStore
from .seen import SeenSet

PROMOTE_BATCH = 1000  # URLs due again put into the queue at once, at most
SEEN_STEP = 64  # seen URLs a turn of the master's loop writes after a checkpoint

__all__ = ["LocalFrontier"]


class LocalFrontier:
    """The seen set plus the disk-backed per-host queues, in ``directory``."""

    batch_window = 0.0  # its calls are local: nothing is gained by gathering them

    def __init__(
        self, directory: str | os.PathLike[str], cache_size: int = 10_000, *, fsync: bool = True
    ) -> None:
        self.directory = Path(directory)
        self.queue = UrlQueueManager(self.directory / "frontier", cache_size, fsync=fsync)
        self.seen = SeenSet(self.directory / "seen", fsync=fsync)
        self.counts = HostCounts(self.directory / COUNTS_FILE)  # URLs queued per host
        for item in self.queue.recovered:  # puts replayed after a crash
            # Not durably seen: not durably counted either (a job with a
            # per-host budget has counts).
            if self.seen.add(item.url) and len(self.counts):
                self.counts.add(host_key(item.url))
        self.queue.recovered.clear()
        self.seen.flush()  # the queue checkpointed them on opening: no journal holds them now
        self.max_pages: int | None = None
        self.max_pages_per_host: int | None = None
        self.started = 0  # pages recorded before this run, plus leases in it
        self.over_budget = 0  # URLs not queued since the last take: their host's budget was spent
        self.revisits: RevisitStore | None = None
        self.lag: float | None = None  # revisits on: a URL is due at its time plus this
        self.before = math.inf  # ... if its time is before this
        self._revisit_seqs: set[int] = set()  # leased copies that their row names
        self.stale = 0  # queued copies dropped: their row did not name them
        # Embeds queued (None: not counted since opening).  A queue that opens
        # empty has none: counted from its admissions, with no walk of the
        # queue when the pages are spent (a read of every URL queued on disk).
        self._embeds: int | None = 0 if not len(self.queue) else None
        self.excluded: Callable[[str], bool] | None = None  # `control exclude`
        self.dropped = 0  # URLs dropped by it
        if (self.directory / REVISITS_FILE).exists():
            self._open_revisits()

    def _open_revisits(self) -> RevisitStore:
        if self.revisits is None:
            self.revisits = RevisitStore(self.directory)
            self.revisits.forget_lost(self.queue.next_seq)  # puts a kill took back
        return self.revisits

    def set_revisits(self, lag: float | None, before: float = math.inf) -> None:
        self.lag, self.before = lag, before
        if lag is not None:
            self._open_revisits()
            self.promote()

    def schedule(self, revisits: Sequence[Revisit]) -> None:
        store = self._open_revisits()
        for revisit in revisits:
            store.schedule(*revisit)

    def expedite(self, items: Sequence[tuple[str, float]]) -> int:
        if self.revisits is None or not items:
            return 0
        return self.revisits.expedite(items)

    def next_due(self) -> float | None:
        store = self.revisits
        if store is None or self.lag is None or store.next_due is None:
            return None
        if store.next_due >= self.before:
            return None
        return store.next_due + self.lag

    def _due(self, when: float) -> bool:
        return self.lag is not None and when < self.before and when + self.lag <= time.time()

    def promote(self, now: float | None = None) -> int:
        """Put the URLs due by ``now`` (Unix time) into the queue; how many."""
        store = self.revisits
        if store is None or self.lag is None:
            return 0
        until = min((time.time() if now is None else now) - self.lag, self.before)
        promoted = 0
        while rows := store.due(until, PROMOTE_BATCH):
            for url, depth, priority, kind in rows:
                store.mark_queued(url, self.queue.put(url, depth, priority, kind).seq)
                self._count_embed(kind, 1)
            promoted += len(rows)
            if len(rows) < PROMOTE_BATCH:
                break
        if promoted:
            store.refresh_next_due()
        return promoted

    def set_budget(
        self,
        max_pages: int | None,
        max_pages_per_host: int | None,
        *,
        done: int = 0,
        host_pages: Mapping[str, int] | None = None,
    ) -> None:
        """The crawl's limits, and what counts against them already: ``done``
        pages recorded; ``host_pages``, URLs queued per host as an older
        job.json kept them (taken if none are counted here yet)."""
        self.max_pages, self.max_pages_per_host = max_pages, max_pages_per_host
        self.started = done
        if host_pages:
            self.counts.seed(host_pages)

    def set_max_pages(self, max_pages: int | None) -> None:
        self.max_pages = max_pages

    def admit(
        self,
        url: str,
        depth: int = 0,
        priority: int = 0,
        kind: str = "page",
        lastmod: str | None = None,
    ) -> bool:
        budget = self.max_pages_per_host if kind != "embed" else None
        if budget is not None:
            host = host_key(url)
            if self.counts.count(host) >= budget:
                if url not in self.seen:
                    self.over_budget += 1
                return False
        if not self.seen.add(url):
            return False
        if budget is not None:
            self.counts.add(host)
        self.queue.put(url, depth, priority, kind, lastmod)
        self._count_embed(kind, 1)
        return True

    def _count_embed(self, kind: str, n: int) -> None:
        if kind == "embed" and self._embeds is not None:
            self._embeds += n

    def embeds(self) -> int:
        """Embeds queued (counted by a walk of the queue the first time)."""
        if self._embeds is None:
            self._embeds = self.queue.count(lambda item: item.kind == "embed")
        return self._embeds

    def admit_many(self, items: Sequence[Admission], want: int = 0) -> list[bool]:
        return [self.admit(*item) for item in items]

    def retry(self, items: Sequence[Admission]) -> int:
        """Queue each URL again, seen or not (a seed no server answered, a
        page --retry-failed fetches again); its host's budget counted it
        when it was first admitted.  How many were queued."""
        for url, depth, priority, kind, lastmod in items:
            self.seen.add(url)
            self.queue.put(url, depth, priority, kind, lastmod)
            self._count_embed(kind, 1)
        return len(items)

    def take_over_budget(self) -> int:
        taken, self.over_budget = self.over_budget, 0
        return taken

    def is_seen(self, url: str) -> bool:
        return url in self.seen

    def lease(self, now: float | None = None, want: int = 1) -> UrlInfo | None:
        pages = self.pages_left()
        if not pages and not self.embeds():
            return None
        if self.lag is not None:
            self.promote()
        while (item := self.queue.lease(now)) is not None:
            if self.excluded is not None and self.excluded(item.url):
                self.queue.ack(item)  # queued before the rule, or due again: dropped
                self.dropped += 1
                self._count_embed(item.kind, -1)
                continue
            if self.revisits is None:
                break
            row = self.revisits.get(item.url)
            if row is None:
                break
            if row.queued == NOT_QUEUED and self._due(row.due):
                self.revisits.mark_queued(item.url, item.seq)  # due, none queued: this one serves
            elif row.queued != item.seq:  # a copy a kill left, or one queued twice
                self.queue.ack(item)
                self.stale += 1
                self._count_embed(item.kind, -1)
                continue
            self._revisit_seqs.add(item.seq)
            item = item._replace(state=row.state)
            break
        if item is None:
            return None
        if item.kind != "embed":
            if not pages:  # no embed is ready: the best URL is a page
                self.release(item)
                return None
            self.started += 1
        else:
            self._count_embed("embed", -1)
        return item

    def ack(
        self,
        item: UrlInfo,
        seen: list[str] | tuple[str, ...] = (),
        error: bool = False,
        wait: float = 0.0,
    ) -> None:
        for url in seen:
            self.seen.add(url)
        if item.seq in self._revisit_seqs and self.revisits is not None:
            self._revisit_seqs.discard(item.seq)
            self.revisits.unmark(item.url, item.seq)  # not scheduled again (revisits off): waits
        self.queue.ack(item)

    def exclude(self, match: Callable[[str], bool], *, drop_queued: bool = True) -> int:
        self.excluded = match
        if not drop_queued:
            return 0
        dropped = self.queue.drop(match)
        self.dropped += dropped
        if dropped:
            self._embeds = None  # counted again when wanted
        return dropped

    def release(self, item: UrlInfo) -> None:
        self._revisit_seqs.discard(item.seq)
        if self.queue.release(item):
            self._count_embed(item.kind, 1)

    def block(self, host: str, until: float) -> None:
        self.queue.block(host, until)

    def next_ready(self, now: float) -> float | None:
        return self.queue.next_ready(now)

    def sync(self) -> None:
        if self.revisits is not None:
            self.revisits.commit()  # before the acks it must precede
        self.queue.sync()

    def content_index(self) -> LocalContentIndex:
        """The fingerprints of the crawl's pages, beside its seen set."""
        return LocalContentIndex(self.directory)

    def report(self, figures: Mapping[str, Any]) -> None:
        """Nothing to do: a local frontier's node is its job dir's ``stats.json``."""

    def tick(self) -> None:
        if self.lag is not None:
            self.promote()
        self.sync()  # every turn of the master's loop: a killed master loses one turn
        self.seen.flush_step(SEEN_STEP)  # the last checkpoint's batch, into diskcache

    def checkpoint(self) -> None:
        """The queue durable, then the seen set (its batch file; diskcache
        a step a turn, ``tick``), then the host counts."""
        if self.revisits is not None:
            self.revisits.sync()
        self.queue.flush()
        self.seen.begin_flush()
        self.counts.flush()

    def schedule_rows(self) -> int:
        """URLs in the revisit schedule (0: none kept): the job counts them
        at each checkpoint, so a schedule emptied or cut shows."""
        return 0 if self.revisits is None else self.revisits.rows

    def stats(self) -> dict[str, Any]:
        stats = {**self.queue.stats(), "seen": len(self.seen)}
        if self.revisits is not None:
            stats["scheduled"] = self.revisits.waiting()
            stats["next_due"] = self.next_due()
            stats["stale"] = self.stale
        if self.dropped:
            stats["excluded"] = self.dropped
        return stats

    def __len__(self) -> int:
        return len(self.queue)

    def queued_of(self, host: str) -> int:
        """URLs of ``host`` (``scheme://host[:port]``) queued (the web view's)."""
        return self.queue.queued_of(host)

    @property
    def taken(self) -> int:
        return self.queue.taken

    def available(self) -> bool:
        return True

    def fetch_deadline(self) -> float:
        return 0.0  # no lease of another process to lose

    def holds(self, item: UrlInfo) -> bool:
        return True  # only this process leases from it

    def leased_elsewhere(self) -> int:
        return 0  # only this process leases from it

    def pages_left(self) -> bool:
        """A page may still be leased: ``max_pages`` is not spent."""
        return self.max_pages is None or self.started < self.max_pages

    def budget_left(self) -> bool:
        return self.pages_left() or self.embeds() > 0

    def close(self) -> None:
        try:
            if self.revisits is not None:
                self.revisits.close()
            self.queue.close()
        finally:
            try:
                self.seen.close()
            finally:
                self.counts.close()

    @staticmethod
    def inspect(directory: str | os.PathLike[str]) -> dict[str, int]:
        """``queued`` and ``taken`` of the frontier in ``directory``, without opening it."""
        return inspect(Path(directory) / "frontier")
