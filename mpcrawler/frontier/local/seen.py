"""The seen set: every canonical URL the crawl has queued, on disk.

Owned by the master only.  Stores a fixed-size digest of each URL in
diskcache, so memory is bounded by diskcache's (SQLite's) own cache and the
RECENT_SIZE digests last found on disk (most links point to pages linked
before), not by the number of URLs.  Part of the local frontier
(:mod:`mpcrawler.frontier.local`).

diskcache makes and opens the file (its table, index and the triggers that
keep its count); the set reads and writes its rows through a connection of
its own, as diskcache writes a raw key of value 0 (``ROW``): a batch in one
``executemany``, where ``Cache.set`` costs a query, an insert and Python
around them a key (9% of the master's CPU, sampled, in a crawl of 8,000
pages).  A test reads what the set wrote through diskcache's own API.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path

import diskcache

from ...errors import store_damaged
from ...recent import Recent

__all__ = ["RECENT_SIZE", "SeenSet"]

RECENT_SIZE = 1 << 16  # digests remembered in memory (about 5 MB: mpcrawler.recent)
DIGEST_SIZE = 16
BATCH_FILE = "batch"  # a checkpoint's digests, until they are in diskcache
CACHE_FILE = "cache.db"  # diskcache's
# A raw bytes key of value 0, as diskcache's Cache.set writes it (raw=1,
# size 0, mode 1: MODE_RAW), stored and accessed at the time given twice.
ROW = (
    "INSERT OR IGNORE INTO Cache (key, raw, store_time, expire_time, access_time,"
    " access_count, tag, size, mode, filename, value) VALUES (?, 1, ?, NULL, ?, 0, NULL, 0, 1,"
    " NULL, 0)"
)
_HAS = "SELECT 1 FROM Cache WHERE key = ? AND raw = 1"


class SeenSet:
    """Every URL the crawl has queued, as 16-byte BLAKE2b digests in diskcache.

    ``add()`` and ``in`` see pending additions at once; ``flush()`` writes the
    pending batch in one transaction, after which it survives a crash.  The
    crawler flushes the frontier first and this second, so a URL is durably
    seen only once its put is durable.  Callers pass canonical URLs.

    A checkpoint's batch may instead be made durable at once in a file of
    its digests (``begin_flush``: one write), then moved into diskcache a
    step at a time (``flush_step``, at each turn of the master's loop), the
    file emptied once it is all there: diskcache writes a key in about
    0.06 ms, and a checkpoint that wrote every URL found in 2 s held the
    loop for tens of milliseconds, every worker's slots emptying meanwhile.
    Opening the set moves a file left by a kill into diskcache first.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        flush_every: int | None = None,
        recent_size: int = RECENT_SIZE,
        fsync: bool = True,
    ) -> None:
        self.directory = Path(directory)
        try:
            self._cache = diskcache.Cache(
                str(self.directory),
                eviction_policy="none",
                size_limit=1 << 62,
                cull_limit=0,
                statistics=False,
                tag_index=False,
            )
            self._db = sqlite3.connect(
                self.directory / CACHE_FILE, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA synchronous=NORMAL")  # (as diskcache's own)
        except sqlite3.DatabaseError as exc:
            where = self.directory / CACHE_FILE
            raise store_damaged(
                exc, where, f"the seen set {where} is damaged ({exc}); nothing was crawled"
            ) from None
        self._pending: set[bytes] = set()
        self._batch: list[bytes] = []  # a checkpoint's batch (in BATCH_FILE), from _written on
        self._batch_keys: set[bytes] = set()
        self._written = 0
        self._batch_path = self.directory / BATCH_FILE
        self._fsync = fsync
        self._flush_every = flush_every
        # Digests last found on disk: most links on a page point to pages
        # linked before, and each disk lookup is an SQLite query.
        self._recent: Recent[bytes] = Recent(recent_size)
        self._recover_batch()

    @staticmethod
    def digest(url: str) -> bytes:
        return hashlib.blake2b(url.encode("utf-8"), digest_size=DIGEST_SIZE).digest()

    def add(self, url: str) -> bool:
        """Mark ``url`` seen; True if it was not seen before."""
        key = self.digest(url)
        if self._known(key):
            return False
        self._pending.add(key)
        if self._flush_every is not None and len(self._pending) >= self._flush_every:
            self.flush()
        return True

    def __contains__(self, url: object) -> bool:
        if not isinstance(url, str):
            return False
        return self._known(self.digest(url))

    def _known(self, key: bytes) -> bool:
        recent = self._recent
        if key in recent or key in self._pending or key in self._batch_keys:
            return True
        if self._db.execute(_HAS, (key,)).fetchone() is None:
            return False
        self._remember(key)
        return True

    def _remember(self, key: bytes) -> None:
        self._recent.add(key)

    def __len__(self) -> int:
        return len(self._cache) + len(self._pending) + len(self._batch) - self._written

    def flush(self) -> None:
        """Everything added so far is durable once this returns."""
        self.flush_step(None)
        self._write(list(self._pending))
        self._pending.clear()

    def begin_flush(self) -> None:
        """What was added so far is durable once this returns, in the batch
        file, which ``flush_step`` moves into diskcache (an earlier batch's
        rest goes there first)."""
        self.flush_step(None)
        if not self._pending:
            return
        batch = list(self._pending)
        _store(self._batch_path, b"".join(batch), self._fsync)
        self._batch, self._batch_keys, self._written = batch, self._pending, 0
        self._pending = set()

    def flush_step(self, count: int | None) -> bool:
        """Move ``count`` more keys of the batch (None: all) into diskcache,
        in one transaction; True once the batch is all there (and its file
        emptied)."""
        batch, start = self._batch, self._written
        if not batch:
            return True
        end = len(batch) if count is None else min(len(batch), start + count)
        self._write(batch[start:end])
        self._written = end
        if end < len(batch):
            return False
        _store(self._batch_path, b"", False)  # (a kill before: moved again, the same)
        self._batch, self._batch_keys, self._written = [], set(), 0
        return True

    def _write(self, keys: list[bytes]) -> None:
        if not keys:
            return
        now = time.time()
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(ROW, [(key, now, now) for key in keys])
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # (SQLite rolled back already after a full disk)
                db.execute("ROLLBACK")
            raise
        for key in keys:
            self._remember(key)

    def _recover_batch(self) -> None:
        """A batch a kill left in its file, moved into diskcache (a torn
        last digest, from a kill while the file was written, is left out:
        the queue's journal replays its URL)."""
        try:
            data = self._batch_path.read_bytes()
        except FileNotFoundError:
            return
        if len(data) >= DIGEST_SIZE:
            whole = len(data) - len(data) % DIGEST_SIZE
            self._write([data[i : i + DIGEST_SIZE] for i in range(0, whole, DIGEST_SIZE)])
        _store(self._batch_path, b"", False)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._db.close()
            self._cache.close()

    def __enter__(self) -> SeenSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _store(path: Path, data: bytes, fsync: bool) -> None:
    """``path`` holds ``data`` (synced to the disk if ``fsync``)."""
    with open(path, "wb") as f:
        f.write(data)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
