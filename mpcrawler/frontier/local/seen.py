"""The seen set: every canonical URL the crawl has queued, on disk.

Owned by the master only.  Stores a fixed-size digest of each URL in
diskcache, so memory is bounded by diskcache's (SQLite's) own cache and the
RECENT_SIZE digests last found on disk (most links point to pages linked
before), not by the number of URLs.  Part of the local frontier
(:mod:`mpcrawler.frontier.local`).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import diskcache

from ...errors import store_damaged

__all__ = ["RECENT_SIZE", "SeenSet"]

RECENT_SIZE = 1 << 16  # digests remembered in memory (about 10 MB)


class SeenSet:
    """Every URL the crawl has queued, as 16-byte BLAKE2b digests in diskcache.

    ``add()`` and ``in`` see pending additions at once; ``flush()`` writes the
    pending batch in one transaction, after which it survives a crash.  The
    crawler flushes the frontier first and this second, so a URL is durably
    seen only once its put is durable.  Callers pass canonical URLs.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        flush_every: int | None = None,
        recent_size: int = RECENT_SIZE,
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
        except sqlite3.DatabaseError as exc:
            where = self.directory / "cache.db"
            raise store_damaged(
                exc, where, f"the seen set {where} is damaged ({exc}); nothing was crawled"
            ) from None
        self._pending: set[bytes] = set()
        self._flush_every = flush_every
        # Digests known to be on disk, most recent last: most links on a page
        # point to pages linked before, and each disk lookup is an SQLite query.
        self._recent: dict[bytes, None] = {}
        self._recent_size = recent_size

    @staticmethod
    def digest(url: str) -> bytes:
        return hashlib.blake2b(url.encode("utf-8"), digest_size=16).digest()

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
        if key in recent or key in self._pending:
            return True
        if key not in self._cache:
            return False
        self._remember(key)
        return True

    def _remember(self, key: bytes) -> None:
        recent = self._recent
        recent[key] = None
        if len(recent) > self._recent_size:
            del recent[next(iter(recent))]  # the oldest

    def __len__(self) -> int:
        return len(self._cache) + len(self._pending)

    def flush(self) -> None:
        if not self._pending:
            return
        with self._cache.transact():
            for key in self._pending:
                self._cache.set(key, 0)
        for key in self._pending:
            self._remember(key)
        self._pending.clear()

    def close(self) -> None:
        self.flush()
        self._cache.close()

    def __enter__(self) -> SeenSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
