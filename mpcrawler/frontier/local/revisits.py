"""The revisit schedule of the local frontier: each fetched URL, when it is
due again, and what was kept of its last fetch, in ``DIR/revisits.db``.

Part of the local frontier (:mod:`mpcrawler.frontier.local`), owned by the
master.  One SQLite table (WAL): a row per URL scheduled, with its due time
(Unix seconds), when it was last fetched, its depth, priority and kind, its
state (JSON, opaque here) and ``queued``, the queue seq of the copy of it that is queued now (-1:
none; it waits for its due time).  It exists only in a job that revisits,
so a crawl that never does pays nothing.

Durability.  Writes wait in one open transaction; ``commit()`` (every turn
of the master's loop, before the queue's journal is synced) hands them to
the OS, ``sync()`` (at a checkpoint) also to the disk.  The queue and this
table are two files, so the frontier keeps them consistent with two rules:
a row is updated before its URL's ack reaches the queue (a kill between the
two fetches the page once more, never loses its schedule), and a row names
a queued copy by its seq, so a promotion whose put did not survive is found
on reopening (``forget_lost``: a seq the queue never reached) and a copy
the row does not name is a stale one, dropped when leased.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from ...errors import store_damaged

__all__ = ["FILE", "RevisitStore", "Row"]

FILE = "revisits.db"
NOT_QUEUED = -1


class Row(NamedTuple):
    """A URL's place in the schedule: when it is due, its queued copy, its state."""

    due: float
    queued: int
    state: str


class RevisitStore:
    """The schedule of the URLs to fetch again (see the module's docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / FILE
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS revisits (url TEXT PRIMARY KEY, due REAL NOT NULL, "
                "fetched REAL NOT NULL, depth INTEGER NOT NULL, priority INTEGER NOT NULL, "
                "kind TEXT NOT NULL, "
                "state TEXT NOT NULL, queued INTEGER NOT NULL DEFAULT -1) WITHOUT ROWID"
            )
            self.db.execute("CREATE INDEX IF NOT EXISTS waiting ON revisits (due) WHERE queued < 0")
            self.db.execute("BEGIN")
        except sqlite3.DatabaseError as exc:
            raise store_damaged(
                exc,
                self.path,
                f"the revisit schedule {self.path} is damaged ({exc}); move it away and "
                "rerun with --revisit-after to rebuild it from the records",
            ) from None
        self.next_due = self._first_due()
        # Rows are never deleted: the count only grows.  The job keeps it
        # at each checkpoint, and a file with fewer rows was emptied or cut
        # (mpcrawler.frontier.local.integrity).
        self.rows = self.count(self.db)

    @staticmethod
    def count(db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT count(*) FROM revisits").fetchone()[0])

    def schedule(
        self,
        url: str,
        due: float,
        depth: int,
        priority: int,
        kind: str,
        state: str,
        fetched: float,
    ) -> None:
        """``url`` is due at ``due``, waiting (no queued copy)."""
        values = (url, due, fetched, depth, priority, kind, state)
        cursor = self.db.execute(
            "INSERT INTO revisits (url, due, fetched, depth, priority, kind, state, queued) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, -1) ON CONFLICT (url) DO NOTHING",
            values,
        )
        if cursor.rowcount:
            self.rows += 1
        else:
            self.db.execute(
                "UPDATE revisits SET due = ?, fetched = ?, depth = ?, priority = ?, kind = ?, "
                "state = ?, queued = -1 WHERE url = ?",
                (*values[1:], url),
            )
        if self.next_due is None or due < self.next_due:
            self.next_due = due

    def get(self, url: str) -> Row | None:
        row = self.db.execute(
            "SELECT due, queued, state FROM revisits WHERE url = ?", (url,)
        ).fetchone()
        return None if row is None else Row(*row)

    def due(self, until: float, limit: int) -> list[tuple[str, int, int, str]]:
        """Up to ``limit`` waiting URLs due by ``until``, earliest first:
        (url, depth, priority, kind)."""
        if self.next_due is None or self.next_due > until:
            return []
        return self.db.execute(
            "SELECT url, depth, priority, kind FROM revisits WHERE queued < 0 AND due <= ? "
            "ORDER BY due LIMIT ?",
            (until, limit),
        ).fetchall()

    def mark_queued(self, url: str, seq: int) -> None:
        self.db.execute("UPDATE revisits SET queued = ? WHERE url = ?", (seq, url))

    def unmark(self, url: str, seq: int) -> None:
        """The queued copy ``seq`` of ``url`` is done, and ``url`` was not
        scheduled again: it waits for its (past) time again."""
        cursor = self.db.execute(
            "UPDATE revisits SET queued = -1 WHERE url = ? AND queued = ?", (url, seq)
        )
        if cursor.rowcount:
            self.next_due = self._first_due()

    def refresh_next_due(self) -> None:
        self.next_due = self._first_due()

    def expedite(self, items: Iterable[tuple[str, float]]) -> int:
        """Each waiting URL fetched before the time given with it is due now
        (a sitemap's newer ``<lastmod>``); how many."""
        moved = 0
        for url, since in items:
            cursor = self.db.execute(
                "UPDATE revisits SET due = 0 WHERE url = ? AND queued < 0 AND due > 0 "
                "AND fetched < ?",
                (url, since),
            )
            moved += cursor.rowcount
        if moved:
            self.next_due = 0.0
        return moved

    def forget_lost(self, next_seq: int) -> int:
        """Rows naming a queued copy the queue never reached (seq at or past
        its ``next_seq`` after a kill) wait again; how many."""
        cursor = self.db.execute("UPDATE revisits SET queued = -1 WHERE queued >= ?", (next_seq,))
        self.commit()
        self.next_due = self._first_due()
        return cursor.rowcount

    def waiting(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM revisits WHERE queued < 0").fetchone()[0])

    def commit(self) -> None:
        """What was written so far survives this process being killed."""
        self.db.execute("COMMIT")
        self.db.execute("BEGIN")

    def sync(self) -> None:
        """What was written so far survives a power cut."""
        self.db.execute("COMMIT")
        self.db.execute("PRAGMA wal_checkpoint(FULL)")
        self.db.execute("BEGIN")

    def close(self) -> None:
        self.sync()
        self.db.execute("COMMIT")
        self.db.close()

    def _first_due(self) -> float | None:
        row = self.db.execute("SELECT min(due) FROM revisits WHERE queued < 0").fetchone()
        return None if row is None or row[0] is None else float(row[0])

    @staticmethod
    def inspect(directory: str | os.PathLike[str]) -> dict[str, float | int | None]:
        """``scheduled`` URLs and the ``next_due`` time, read-only (status)."""
        path = Path(directory) / FILE
        if not path.exists():
            return {}
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                count, first = db.execute(
                    "SELECT count(*), min(CASE WHEN queued < 0 THEN due END) FROM revisits"
                ).fetchone()
            finally:
                db.close()
        except sqlite3.DatabaseError:
            return {}
        return {"scheduled": int(count), "next_due": None if first is None else float(first)}
