"""HostCounts: URLs queued per host against ``--max-pages-per-host``, on disk.

Part of the local frontier (:mod:`mpcrawler.frontier.local`), owned by the
master.  A broad crawl counts a host for every host it meets: kept in
``job.json``, the counter took about 35 bytes a host there and an entry in
memory for every host, and was rewritten whole at every checkpoint (1.4 MB
every 2 s after 40,000 hosts).  Here each host is a row of ``DIR/host-pages.db`` (SQLite);
a checkpoint writes only the hosts counted since the last one, in one
transaction, and memory holds those and the RECENT_SIZE counts read last
(a page's links mostly go to hosts met just before).

``flush()`` makes the counts so far durable; the frontier calls it after the
seen set's, so a crash loses at most what the seen set lost too (those URLs
are replayed from the queue's journal and counted again).
"""

from __future__ import annotations

import os
import sqlite3
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from ...errors import JobDamaged

__all__ = ["FILE", "RECENT_SIZE", "HostCounts"]

FILE = "host-pages.db"
RECENT_SIZE = 4096  # counts remembered in memory besides those not yet written


class HostCounts:
    """``count(host)`` and ``add(host)``; ``flush()`` writes what changed."""

    def __init__(self, path: str | os.PathLike[str], recent_size: int = RECENT_SIZE) -> None:
        self.path = Path(path)
        try:
            self._db = sqlite3.connect(os.fspath(self.path), isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS host_pages (host TEXT PRIMARY KEY, queued INTEGER)"
                " WITHOUT ROWID"
            )
            self.hosts = int(self._db.execute("SELECT COUNT(*) FROM host_pages").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            if "full" in str(exc) or "locked" in str(exc):
                raise
            raise JobDamaged(
                f"the per-host page counts {self.path} are damaged ({exc}): rerun with --repair "
                "to count them again from the records and the queue"
            ) from None
        self._dirty: dict[str, int] = {}  # counted since the last flush
        self._recent: OrderedDict[str, int] = OrderedDict()  # read from disk, newest last
        self._recent_size = recent_size
        # Reads share one transaction between flushes, instead of each
        # taking and dropping SQLite's locks in a transaction of its own.
        self._db.execute("BEGIN")

    def count(self, host: str) -> int:
        """URLs of ``host`` counted so far."""
        found = self._dirty.get(host)
        if found is None:
            found = self._recent.get(host)
        if found is None:
            row = self._db.execute("SELECT queued FROM host_pages WHERE host=?", (host,)).fetchone()
            found = 0 if row is None else int(row[0])
            self._remember(host, found)
        return found

    def add(self, host: str, n: int = 1) -> None:
        """Count ``n`` more URLs of ``host``."""
        before = self.count(host)
        if not before and host not in self._dirty:
            self.hosts += 1
        self._dirty[host] = before + n
        self._recent.pop(host, None)

    def seed(self, counts: Mapping[str, int]) -> None:
        """Counts of an older job (kept in its job.json), if none are here yet."""
        if self.hosts or self._dirty:
            return
        for host, n in counts.items():
            if n > 0:
                self.add(host, n)
        self.flush()

    def _remember(self, host: str, count: int) -> None:
        recent = self._recent
        recent[host] = count
        if len(recent) > self._recent_size:
            recent.popitem(last=False)  # the oldest

    def flush(self) -> None:
        """Everything counted so far is durable once this returns."""
        if not self._dirty:
            return
        self._db.executemany("INSERT OR REPLACE INTO host_pages VALUES (?, ?)", self._dirty.items())
        self._db.execute("COMMIT")  # the reads' transaction, and these writes: one commit
        self._db.execute("BEGIN")
        for host, count in self._dirty.items():
            self._remember(host, count)
        self._dirty.clear()

    def __len__(self) -> int:
        """Hosts counted."""
        return self.hosts

    def close(self) -> None:
        self.flush()
        self._db.execute("COMMIT")
        self._db.close()
