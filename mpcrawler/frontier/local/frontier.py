"""LocalFrontier: the embedded frontier, files in the job directory (the default).

Owned by the master.  It is the :class:`~mpcrawler.frontier.base.Frontier`
the crawler talks to: the seen set (:class:`SeenSet`, in ``DIR/seen``) and
the per-host queues (:class:`UrlQueueManager`, in ``DIR/frontier``) behind
one interface, kept consistent here.  A URL is durably seen only once its
put is durable: ``checkpoint()`` makes the queue durable first and the seen
set second, and after a crash the queue's replayed puts are marked seen again.

It keeps the crawl's page budgets (``set_budget``), as the shared frontier
does in Redis: no lease past ``max_pages`` (pages recorded before this run
plus leases in it), no URL queued past ``max_pages_per_host`` of its host.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...web.urls import host_key
from ..base import Admission, UrlInfo
from .queue import UrlQueueManager, inspect
from .seen import SeenSet

__all__ = ["LocalFrontier"]


class LocalFrontier:
    """The seen set plus the disk-backed per-host queues, in ``directory``."""

    batch_window = 0.0  # its calls are local: nothing is gained by gathering them

    def __init__(
        self, directory: str | os.PathLike[str], cache_size: int = 10_000, *, fsync: bool = True
    ) -> None:
        self.directory = Path(directory)
        self.queue = UrlQueueManager(self.directory / "frontier", cache_size, fsync=fsync)
        self.seen = SeenSet(self.directory / "seen")
        for item in self.queue.recovered:  # puts replayed after a crash
            self.seen.add(item.url)
        self.queue.recovered.clear()
        self.seen.flush()  # the queue checkpointed them on opening: no journal holds them now
        self.max_pages: int | None = None
        self.max_pages_per_host: int | None = None
        self.started = 0  # pages recorded before this run, plus leases in it
        self.host_pages: Counter[str] = Counter()  # URLs queued per host, with a per-host budget
        self.over_budget = 0  # URLs not queued since the last take: their host's budget was spent

    def set_budget(
        self,
        max_pages: int | None,
        max_pages_per_host: int | None,
        *,
        done: int = 0,
        host_pages: Mapping[str, int] | None = None,
    ) -> None:
        """The crawl's limits, and what counts against them already: ``done``
        pages recorded, ``host_pages`` URLs queued per host (in job.json)."""
        self.max_pages, self.max_pages_per_host = max_pages, max_pages_per_host
        self.started = done
        self.host_pages = Counter(host_pages or {})

    def admit(
        self,
        url: str,
        depth: int = 0,
        priority: int = 0,
        kind: str = "page",
        lastmod: str | None = None,
    ) -> bool:
        budget = self.max_pages_per_host
        if budget is not None:
            host = host_key(url)
            if self.host_pages[host] >= budget:
                if url not in self.seen:
                    self.over_budget += 1
                return False
        if not self.seen.add(url):
            return False
        if budget is not None:
            self.host_pages[host] += 1
        self.queue.put(url, depth, priority, kind, lastmod)
        return True

    def admit_many(self, items: Sequence[Admission], want: int = 0) -> list[bool]:
        return [self.admit(*item) for item in items]

    def take_over_budget(self) -> int:
        taken, self.over_budget = self.over_budget, 0
        return taken

    def budget_counts(self) -> dict[str, int]:
        return dict(self.host_pages)

    def is_seen(self, url: str) -> bool:
        return url in self.seen

    def lease(self, now: float | None = None, want: int = 1) -> UrlInfo | None:
        if not self.budget_left():
            return None
        item = self.queue.lease(now)
        if item is not None:
            self.started += 1
        return item

    def ack(
        self, item: UrlInfo, seen: list[str] | tuple[str, ...] = (), error: bool = False
    ) -> None:
        for url in seen:
            self.seen.add(url)
        self.queue.ack(item)

    def release(self, item: UrlInfo) -> None:
        self.queue.release(item)

    def block(self, host: str, until: float) -> None:
        self.queue.block(host, until)

    def next_ready(self, now: float) -> float | None:
        return self.queue.next_ready(now)

    def sync(self) -> None:
        self.queue.sync()

    def tick(self) -> None:
        self.queue.sync()  # every turn of the master's loop: a killed master loses one turn

    def checkpoint(self) -> None:
        self.queue.flush()
        self.seen.flush()

    def stats(self) -> dict[str, Any]:
        return {**self.queue.stats(), "seen": len(self.seen)}

    def __len__(self) -> int:
        return len(self.queue)

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

    def budget_left(self) -> bool:
        return self.max_pages is None or self.started < self.max_pages

    def close(self) -> None:
        try:
            self.queue.close()
        finally:
            self.seen.close()

    @staticmethod
    def inspect(directory: str | os.PathLike[str]) -> dict[str, int]:
        """``queued`` and ``taken`` of the frontier in ``directory``, without opening it."""
        return inspect(Path(directory) / "frontier")
