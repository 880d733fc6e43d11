"""ParkedHosts: the politeness state of idle hosts, out of memory, for one run.

Owned by the scheduler (in the master).  A broad crawl meets a new host
every few pages; keeping each one's robots.txt rules, spacing and pace in
memory made the master grow by about 1.3 KB a host, however few were busy.
So the scheduler keeps in memory only the hosts with work (held, in
flight, robots.txt being fetched) and the ``max_hosts`` idle ones it gave
work to last; an idle host beyond those is *parked* here, and unparked,
as it was, when it is next given work (a lease of its URL, a retry, a
redirect hop).

Two tables of plain columns in an SQLite file: ``groups`` (a politeness
group's next start, last start, Crawl-delay, pace and timeouts) and
``hosts`` (an origin's robots.txt state and text, its failures, when its
copy expires (``--robots-ttl``), the block the frontier was last told,
and its soft-404 probe and answer).  Times are the master's monotonic clock, so a parked row means
nothing to another run: its tables are made anew when a run opens it, and
robots.txt is fetched again on every run, as before.
Its writes need no durability (``synchronous=OFF``, no journal, one open
transaction committed every COMMIT_EVERY writes: a statement in its own
transaction cost 21 us, 4 in a shared one): a killed run leaves a file the
next one empties.  Without a path the rows live in
an in-memory database (the scheduler's unit tests).
"""

from __future__ import annotations

import os
import sqlite3
from typing import NamedTuple

__all__ = ["FILE", "GroupRow", "HostRow", "ParkedHosts"]

FILE = "parked-hosts.db"  # in the job's state directory
COMMIT_EVERY = 1000  # writes; what is not committed stays in SQLite's page cache


class GroupRow(NamedTuple):
    """What a politeness group keeps while none of its hosts is in memory
    (its limit and delay come from the settings and its Crawl-delay); each
    field is named as the scheduler's ``Group`` attribute it keeps."""

    next_start: float
    last_start: float
    crawl_delay: float
    pace: float
    good_run: int
    cut_at: float
    timeouts: int


class HostRow(NamedTuple):
    """What an idle origin keeps: its robots.txt (the text, parsed again
    when it comes back), why its last fetch failed, and its frontier block;
    each field but ``robots_text`` is named as the ``Host`` attribute it keeps."""

    robots_state: str
    robots_text: str | None
    robots_failures: int
    robots_retry_at: float
    robots_error: str
    robots_error_kind: str
    blocked_until: float
    robots_expires: float
    probe_state: str
    soft_404: str | None


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS groups (key TEXT PRIMARY KEY, next_start REAL, last_start REAL,"
    " crawl_delay REAL, pace REAL, good_run INTEGER, cut_at REAL, timeouts INTEGER)"
    " WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS hosts (key TEXT PRIMARY KEY, robots_state TEXT,"
    " robots_text TEXT, robots_failures INTEGER, robots_retry_at REAL, robots_error TEXT,"
    " robots_error_kind TEXT, blocked_until REAL, robots_expires REAL, probe_state TEXT,"
    " soft_404 TEXT) WITHOUT ROWID",
)


class ParkedHosts:
    """Parked groups and hosts, by key; ``take_*`` removes what it returns.

    Raises ``sqlite3.OperationalError`` (a full disk among them) from any
    call; the crawl stops on it as on any full disk."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._db = sqlite3.connect(
            ":memory:" if path is None else os.fspath(path), isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        # Another run's rows (its clock, maybe another version's columns): gone.
        self._db.execute("DROP TABLE IF EXISTS groups")
        self._db.execute("DROP TABLE IF EXISTS hosts")
        for statement in _SCHEMA:
            self._db.execute(statement)
        self.rows = {"groups": 0, "hosts": 0}  # parked now
        self._writes = 0
        self._db.execute("BEGIN")

    @property
    def groups(self) -> int:
        return self.rows["groups"]

    @property
    def hosts(self) -> int:
        return self.rows["hosts"]

    def park_group(self, key: str, row: GroupRow) -> None:
        self._park("groups", key, row)

    def park_host(self, key: str, row: HostRow) -> None:
        self._park("hosts", key, row)

    def take_group(self, key: str) -> GroupRow | None:
        found = self._take("groups", key)
        return None if found is None else GroupRow(*found)

    def take_host(self, key: str) -> HostRow | None:
        found = self._take("hosts", key)
        return None if found is None else HostRow(*found)

    def _park(self, table: str, key: str, row: tuple[object, ...]) -> None:
        marks = ",".join("?" * (len(row) + 1))
        self._db.execute(f"INSERT INTO {table} VALUES ({marks})", (key, *row))
        self.rows[table] += 1
        self._wrote()

    def _take(self, table: str, key: str) -> tuple[object, ...] | None:
        found = self._db.execute(f"DELETE FROM {table} WHERE key=? RETURNING *", (key,)).fetchone()
        if found is None:
            return None
        self.rows[table] -= 1
        self._wrote()
        return tuple(found[1:])

    def _wrote(self) -> None:
        self._writes += 1
        if self._writes % COMMIT_EVERY == 0:
            self._db.execute("COMMIT")
            self._db.execute("BEGIN")

    def group(self, key: str) -> GroupRow | None:
        """The parked group ``key``, left parked."""
        found = self._db.execute("SELECT * FROM groups WHERE key=?", (key,)).fetchone()
        return None if found is None else GroupRow(*found[1:])

    def close(self) -> None:
        self._db.close()  # what was not committed is dropped: nothing outlives the run
