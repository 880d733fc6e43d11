"""ColdHosts: the block lists of hosts that must wait, in SQLite, not in memory.

When the queue reads its log past hosts that must wait, each such host's
URLs go to blocks of its own (see :mod:`.blocks`); the blocks stay in the
waiting files, and the list of them -- BLOCK integers a block, a lane per
priority, a ``HostQueue`` -- cost about a kilobyte a host in memory.  A host
that is blocked and has nothing left in memory is *frozen* instead: its
lanes' block lists become rows of ``cold-hosts.db`` and the queue forgets
the host.  It is *thawed* (its rows read back into a ``HostQueue``) when it
may be leased from again, or when a URL taken from it is given back.  What
the queue still keeps of a frozen host is a few bits of a filter
(``maybe``), so that a URL read for it later knows its host has older URLs
here.

Durability follows the queue's checkpoints without a second atomic write.
Rows are written in one long transaction, committed by ``commit`` just
before the queue writes ``state.json``; a lane has a row for each checkpoint
*generation* it was frozen in (a freeze again in the same generation
appends its blocks to it), and a row thawed carries the generation it was
thawed in (``gone``); one of the generation being written, which no
checkpoint names yet, is deleted instead.  A checkpoint of generation G
uses the rows written at G or before and not gone by G
(``CHECKPOINT_ROWS``).  So a crash after the commit and before
``state.json`` names G leaves rows the previous checkpoint does not know
(dropped when opened) and rows it still needs (given back): ``open``
settles them for the generation ``state.json`` names.  Rows gone by a
checkpoint that was written are deleted after it.

Used by :class:`.queue.UrlQueueManager` only; the waiting files the rows
name are counted in :class:`.blocks.BlockStore` like any others.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import FrontierError, full_disk_error
from .blocks import urls_in

__all__ = ["CHECKPOINT_ROWS", "COLD_FILE", "ColdHosts", "lane_blocks", "lane_urls"]

COLD_FILE = "cold-hosts.db"
# The rows a checkpoint of generation :gen uses (what ``open`` settles to).
CHECKPOINT_ROWS = "gen <= :gen AND (gone IS NULL OR gone > :gen)"
_THAW_BATCH = 10_000  # hosts a statement thaws
_FILTER_BITS = 1 << 20  # at least; more when more hosts are frozen (10 bits a host)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS blocks (
    host TEXT NOT NULL,
    gen INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    flat BLOB NOT NULL,  -- a lane's blocks, as array('q') bytes, oldest first
    gone INTEGER,
    PRIMARY KEY (host, gen, priority)
) WITHOUT ROWID;
"""


class ColdHosts:
    """The frozen hosts' block lists, and a filter of which hosts may be frozen."""

    def __init__(self, directory: Path, fsync: bool) -> None:
        self.path = directory / COLD_FILE
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'OFF'}")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise _refusal(self.path, exc) from None
        self.gen = 0  # of the checkpoint being written now
        self.urls = 0  # in frozen hosts' blocks
        self._bits = _FILTER_BITS
        self._filter = bytearray(self._bits // 8)
        self._marked = 0  # hosts marked in the filter since it was last emptied

    # ----------------------------------------------------------- opening
    def open(self, gen: int) -> list[tuple[str, int, array[int]]]:
        """Settle the rows for the checkpoint of generation ``gen`` (the one
        ``state.json`` names) and thaw them all: a reopened queue has every
        host ready.  Returns (host, priority, blocks) a lane, its rows' blocks
        in the order written."""
        self.gen = gen + 1
        db = self.db
        try:
            db.execute("BEGIN")
            db.execute("DELETE FROM blocks WHERE gen > ?", (gen,))  # after that checkpoint
            db.execute("UPDATE blocks SET gone = NULL WHERE gone > ?", (gen,))
            db.execute("DELETE FROM blocks WHERE gone IS NOT NULL")
            rows = db.execute(
                "SELECT host, priority, flat FROM blocks ORDER BY host, gen"
            ).fetchall()
            db.execute("UPDATE blocks SET gone = ?", (self.gen,))
        except sqlite3.DatabaseError as exc:
            raise _refusal(self.path, exc) from None
        lanes: dict[tuple[str, int], array[int]] = {}
        for host, priority, flat in rows:
            _append(lanes, (host, int(priority)), flat)
        return [(host, priority, blocks) for (host, priority), blocks in lanes.items()]

    # ---------------------------------------------------------- freezing
    def maybe(self, host: str) -> bool:
        """``host`` may have frozen blocks (False: it has none)."""
        if not self.urls:
            return False
        a, b = self._bits_of(host)
        f = self._filter
        return bool(f[a >> 3] & (1 << (a & 7)) and f[b >> 3] & (1 << (b & 7)))

    def freeze(self, hosts: list[tuple[str, list[tuple[int, array[int]]]]]) -> None:
        """Each host's lanes (host, [(priority, blocks)]), after any it has
        here already: a lane has a row a generation, its blocks appended."""
        self._begin()
        gen = self.gen
        self.db.executemany(
            "INSERT INTO blocks (host, gen, priority, flat) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (host, gen, priority) DO UPDATE SET "
            "flat = CAST(flat || excluded.flat AS BLOB)",
            [
                (host, gen, priority, blocks.tobytes())
                for host, lanes in hosts
                for priority, blocks in lanes
            ],
        )
        self.urls += sum(urls_in(blocks) for _, lanes in hosts for _, blocks in lanes)
        self._marked += len(hosts)
        if self._marked * 10 > self._bits:  # about 10 bits a host
            self._rebuild(self._bits * 2)
        for host, _ in hosts:
            self._mark(host)

    def thaw(self, host: str) -> list[tuple[int, array[int]]]:
        """``host``'s frozen lanes (priority, blocks: its rows' in the order
        written); they are no longer here."""
        return self.thaw_many([host]).get(host, [])

    def thaw_many(self, hosts: list[str]) -> dict[str, list[tuple[int, array[int]]]]:
        """``thaw`` for each of ``hosts`` (those with frozen lanes), a few
        statements for them all: a wake lifts many blocks at once."""
        self._begin()
        db, gen = self.db, self.gen
        thawed: dict[str, list[tuple[int, array[int]]]] = {}
        for at in range(0, len(hosts), _THAW_BATCH):  # a batch's rows at a time, not all
            names = json.dumps(hosts[at : at + _THAW_BATCH])
            # This generation's rows no checkpoint names: they go.  Older ones
            # are marked gone, for a checkpoint that was named may still need them.
            rows = db.execute(
                "DELETE FROM blocks WHERE gen = ? AND host IN (SELECT value FROM json_each(?)) "
                "RETURNING host, gen, priority, flat",
                (gen, names),
            ).fetchall()
            rows += db.execute(
                "UPDATE blocks SET gone = ? WHERE gone IS NULL "
                "AND host IN (SELECT value FROM json_each(?)) RETURNING host, gen, priority, flat",
                (gen, names),
            ).fetchall()
            rows.sort(key=lambda row: (row[0], row[1]))  # each host's, in the order written
            merged: dict[tuple[str, int], array[int]] = {}
            for host, _, priority, flat in rows:
                _append(merged, (host, int(priority)), flat)
            del rows
            for (host, priority), blocks in merged.items():
                thawed.setdefault(host, []).append((priority, blocks))
                self.urls -= urls_in(blocks)
        if not self.urls:
            self._filter = bytearray(self._bits // 8)
            self._marked = 0
        return thawed

    def blocks(self) -> Iterator[array[int]]:
        """Every frozen lane's blocks (for reading what is on disk)."""
        for (flat,) in self.db.execute("SELECT flat FROM blocks WHERE gone IS NULL").fetchall():
            yield _blocks(flat)

    # -------------------------------------------------------- checkpoints
    def commit(self) -> int:
        """Make this generation's rows durable; the generation, for
        ``state.json``.  Call ``committed`` once that is written."""
        if self.db.in_transaction:
            self.db.execute("COMMIT")
        return self.gen

    def committed(self) -> None:
        """``state.json`` names the generation just committed: the rows
        gone by it are not needed again (deleted at once, in a transaction
        of its own); a new generation begins.  No transaction stays open
        until the next row is written."""
        self.db.execute("DELETE FROM blocks WHERE gone <= ?", (self.gen,))
        self.gen += 1

    def close(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")  # what no checkpoint named
        self.db.close()

    def _begin(self) -> None:
        if not self.db.in_transaction:
            self.db.execute("BEGIN")

    # ------------------------------------------------------------ filter
    def _bits_of(self, host: str) -> tuple[int, int]:
        """The two bits of the filter that stand for ``host``."""
        h, mask = hash(host), self._bits - 1
        return h & mask, (h >> 32) & mask

    def _mark(self, host: str) -> None:
        a, b = self._bits_of(host)
        self._filter[a >> 3] |= 1 << (a & 7)
        self._filter[b >> 3] |= 1 << (b & 7)

    def _rebuild(self, bits: int) -> None:
        """A filter of ``bits`` bits with only the hosts frozen now."""
        self._bits = bits
        self._filter = bytearray(bits // 8)
        hosts = self.db.execute("SELECT DISTINCT host FROM blocks WHERE gone IS NULL").fetchall()
        self._marked = len(hosts)
        for (host,) in hosts:
            self._mark(host)


def _blocks(flat: bytes) -> array[int]:
    blocks = array("q")
    blocks.frombytes(flat)
    return blocks


def _append(lanes: dict[Any, array[int]], lane: Any, flat: bytes) -> None:
    """The blocks of a row, after those of the lane's earlier rows."""
    if lane in lanes:
        lanes[lane].frombytes(flat)
    else:
        lanes[lane] = _blocks(flat)


def _refusal(path: Path, exc: sqlite3.DatabaseError) -> Exception:
    if full := full_disk_error(exc, path):
        return full  # not damage: no room to write it
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return FrontierError(
            f"the frontier's {path} is in use by another process ({exc}); "
            "is another crawl running on this job dir?"
        )
    return FrontierError(
        f"the frontier's {path} is damaged ({exc}); "
        "rerun with --repair, or restore the job dir from a copy"
    )


def lane_urls(flat: bytes) -> int:
    """The URLs a row's blocks list."""
    return urls_in(_blocks(flat))


def lane_blocks(flat: bytes) -> array[int]:
    """A row's blocks (``BLOCK`` numbers each: waiting file, offset, end, ...)."""
    return _blocks(flat)
