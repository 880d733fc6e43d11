"""ContentIndex: the fingerprints of the pages a crawl recorded, to know a page met again.

Beside the seen set (which knows URLs), this knows texts: the exact
digest of each page's normalized text, crawl-wide, and the 64-bit simhash
of each, by host, in pieces (:mod:`mpcrawler.web.fingerprint`).  The
master's settling (:mod:`mpcrawler.master.settle`) asks it about a batch
of pages before it admits their links (``check``); each page gets

- ``duplicate_of``: the first URL whose page had the same digest;
- ``near_duplicate_of``: else a URL of the same host whose simhash is
  within ``NEAR_BITS`` bits (the closest), found through the pieces;

and is added in the same step.  A page met again under its own URL (a
revisit, or a page fetched again after a kill) is not its own duplicate.

``LocalContentIndex`` keeps them in SQLite (``content.sqlite``, in the job
dir's state), committed with each batch: a killed crawl loses none of what
it recorded; the job's checkpoint folds its write-ahead log into the file.
The shared crawl's is :class:`mpcrawler.frontier.redis.content.RedisContentIndex`.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from ..errors import JobDamaged, full_disk_error
from ..web.fingerprint import NEAR_BITS, bands, hamming

__all__ = [
    "CONTENT_FILE",
    "ContentIndex",
    "LocalContentIndex",
    "Met",
    "Page",
    "band_key",
    "nearest",
]

CONTENT_FILE = "content.sqlite"
WAL_PAGES = 16  # pages of write-ahead log (4 KiB each) folded into the file at most


class Page(NamedTuple):
    """A page to look up: its URL, host key, text digest and simhash."""

    url: str
    host: str
    digest: str
    simhash: int


class Met(NamedTuple):
    """What the index knew of a page: the URL that had its text first, or
    the closest near one of its host (None: neither)."""

    duplicate_of: str | None = None
    near_duplicate_of: str | None = None


class ContentIndex(Protocol):
    def check(self, pages: Sequence[Page]) -> list[Met]:
        """What each page met, in order (a page meets those before it in
        ``pages`` too); every page is added."""

    def checkpoint(self) -> None:
        """What was added is durable (at the job's checkpoint)."""

    def close(self) -> None: ...


def nearest(page: Page, candidates: Iterable[tuple[int, str]]) -> str | None:
    """The URL of the candidate ``(simhash, url)`` closest to ``page``,
    within NEAR_BITS bits (ties: the first met), other than itself."""
    best, best_bits = None, NEAR_BITS + 1
    for simhash, url in candidates:
        bits = hamming(simhash, page.simhash)
        if bits < best_bits and url != page.url:
            best, best_bits = url, bits
    return best


def band_key(host: str, band: int, value: int) -> int:
    """A signed 64-bit key of one piece of a host's simhashes."""
    data = f"{band}:{value}:{host}".encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big", signed=True)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


class LocalContentIndex:
    """The index of one job dir's crawl, in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / CONTENT_FILE
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # a kill loses nothing committed
            self.db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
            self.db.executescript(
                "CREATE TABLE IF NOT EXISTS pages (id INTEGER PRIMARY KEY, digest BLOB UNIQUE,"
                " url TEXT NOT NULL);"
                "CREATE TABLE IF NOT EXISTS pieces (key INTEGER NOT NULL,"
                " simhash INTEGER NOT NULL, page INTEGER NOT NULL);"
                "CREATE INDEX IF NOT EXISTS pieces_key ON pieces (key);"
            )
        except sqlite3.DatabaseError as exc:
            if full := full_disk_error(exc, self.path):
                raise full from None  # not damage: no room to write it
            raise JobDamaged(
                f"the pages' fingerprints {self.path} are damaged ({exc}); move the file "
                "away and rerun (or rerun with --no-dedup): the pages recorded so far are "
                "then not known by their text"
            ) from None

    def check(self, pages: Sequence[Page]) -> list[Met]:
        db, met = self.db, []
        db.execute("BEGIN")
        try:
            for page in pages:
                digest = bytes.fromhex(page.digest)
                row = db.execute("SELECT url FROM pages WHERE digest = ?", (digest,)).fetchone()
                if row is not None:
                    met.append(Met(row[0] if row[0] != page.url else None))
                    continue
                keys = [band_key(page.host, k, v) for k, v in enumerate(bands(page.simhash))]
                found = db.execute(
                    "SELECT p.simhash, u.url FROM pieces p JOIN pages u ON u.id = p.page "
                    f"WHERE p.key IN ({','.join('?' * len(keys))})",
                    keys,
                ).fetchall()
                near = nearest(page, ((s & (1 << 64) - 1, u) for s, u in found))
                met.append(Met(None, near))
                page_id = db.execute(
                    "INSERT INTO pages (digest, url) VALUES (?, ?)", (digest, page.url)
                ).lastrowid
                signed = _signed(page.simhash)
                db.executemany(
                    "INSERT INTO pieces VALUES (?, ?, ?)", [(k, signed, page_id) for k in keys]
                )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # (SQLite rolled back already after a full disk)
                db.execute("ROLLBACK")
            raise
        return met

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the file (the job's checkpoint)."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def pages(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM pages").fetchone()[0])

    def close(self) -> None:
        self.db.close()
