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

**A page costs the same at the 100,000th page of a host as at the 100th.**
A piece of a host (one band's value, :func:`band_key`) keeps its newest
``PIECE_KEEP`` pages, and forgets the older ones as newer come: on a host
of look-alike pages (a forum, a shop, a wiki) one piece would otherwise
hold nearly every page, and reading it whole made each page cost more than
the last.  So a page is compared with at most ``BANDS * PIECE_KEEP``
candidates, read in as many rows, whatever the host holds; the exact
digests stay crawl-wide and whole (one indexed lookup a page).  A near
copy of a page that 16 newer pages sharing its piece have pushed out is
still found when it is near one of them (on such a host it mostly is); the
share of near copies found on a set with known edits is measured by
``benchmarks/bench_simhash.py --index``.  ``read`` and ``compared`` count
the rows read and the candidates compared, for the tests that guard it.

``LocalContentIndex`` keeps them in SQLite (``content.sqlite``, in the job
dir's state), committed with each batch: a killed crawl loses none of what
it recorded; the job's checkpoint folds its write-ahead log into the file.
The shared crawl's is :class:`mpcrawler.frontier.redis.content.RedisContentIndex`.
"""

from __future__ import annotations

import collections
import hashlib
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from ..errors import store_damaged
from ..web.fingerprint import NEAR_BITS, bands

__all__ = [
    "CONTENT_FILE",
    "PIECE_KEEP",
    "ContentIndex",
    "LocalContentIndex",
    "Met",
    "Page",
    "band_key",
    "nearest",
]

CONTENT_FILE = "content.sqlite"
PIECE_KEEP = 16  # pages a piece of a host keeps (its newest): candidates a page, per band
PIECES_HELD = 4096  # pieces the local index holds in memory, the last used (a host's template's)
_CHUNK = 500  # values in one IN (...) at most
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
    """Interface: the pages' fingerprints, checked and added a batch at a time."""

    read: int  # entries of pieces read so far (a page: at most BANDS * PIECE_KEEP)
    compared: int  # candidates compared so far (as many at most)

    def check(self, pages: Sequence[Page]) -> list[Met]:
        """What each page met, in order (a page meets those before it in
        ``pages`` too); every page is added."""

    def checkpoint(self) -> None:
        """What was added is durable (at the job's checkpoint)."""

    def close(self) -> None: ...


def nearest(simhash: int, candidates: Iterable[tuple[int, str]], own: str) -> str | None:
    """The name (a URL, or what stands for one) of the candidate ``(simhash,
    name)`` closest to ``simhash``, within NEAR_BITS bits (ties: the first
    met), other than ``own`` (the page's own)."""
    best, best_bits = None, NEAR_BITS + 1
    for other, name in candidates:
        bits = (other ^ simhash).bit_count()  # (hamming's, inline: 64 a page)
        if bits < best_bits and name != own:
            best, best_bits = name, bits
    return best


def band_key(host: str, band: int, value: int) -> int:
    """A signed 64-bit key of one piece of a host's simhashes; kept once
    made (a host's template gives the same few), up to ``_KEYS_HELD`` keys,
    then all forgotten at once (a dict never emptied from its front)."""
    found = _keys.get((host, band, value))
    if found is None:
        if len(_keys) >= _KEYS_HELD:
            _keys.clear()
        data = f"{band}:{value}:{host}".encode()
        found = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big", signed=True)
        _keys[(host, band, value)] = found
    return found


_KEYS_HELD = 16_384
_keys: dict[tuple[str, int, int], int] = {}


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


class LocalContentIndex:
    """The index of one job dir's crawl, in ``directory``; a piece keeps its
    newest ``keep`` pages."""

    def __init__(self, directory: Path, keep: int = PIECE_KEEP) -> None:
        self.path = Path(directory) / CONTENT_FILE
        self.keep = keep
        self.read = self.compared = 0
        self._last_id: int | None = None  # the greatest page id written
        # key -> its entries (page id, simhash, url), oldest first: the last used
        self._held: collections.OrderedDict[int, list[tuple[int, int, str]]] = (
            collections.OrderedDict()
        )
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            # A kill loses nothing committed; a power cut, nothing before the
            # job's last checkpoint (``checkpoint`` syncs the file).
            self.db.execute("PRAGMA synchronous=OFF")
            self.db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
            self.db.executescript(
                "CREATE TABLE IF NOT EXISTS pages (id INTEGER PRIMARY KEY, digest BLOB UNIQUE,"
                " url TEXT NOT NULL);"
                "CREATE TABLE IF NOT EXISTS pieces (key INTEGER NOT NULL, page INTEGER NOT NULL,"
                " simhash INTEGER NOT NULL, PRIMARY KEY (key, page)) WITHOUT ROWID;"
            )
        except sqlite3.DatabaseError as exc:
            raise store_damaged(
                exc,
                self.path,
                f"the pages' fingerprints {self.path} are damaged ({exc}); move the file "
                "away and rerun (or rerun with --no-dedup): the pages recorded so far are "
                "then not known by their text",
            ) from None

    def check(self, pages: Sequence[Page]) -> list[Met]:
        """One read of the batch's digests and one of its pieces, then the
        pages in order (each meets those before it), then one write: the
        new pages and their pieces in, what their pieces forgot out."""
        if not pages:
            return []
        db = self.db
        digests = [bytes.fromhex(page.digest) for page in pages]
        keys = [[band_key(p.host, k, v) for k, v in enumerate(bands(p.simhash))] for p in pages]
        flat = list({key for page_keys in keys for key in page_keys})
        db.execute("BEGIN")
        try:
            known: dict[bytes, str] = dict(
                self._select("SELECT digest, url FROM pages", "digest", digests)
            )
            pieces, forgotten = self._pieces(flat)
            if self._last_id is None:  # (this object is the file's only writer)
                self._last_id = int(
                    db.execute("SELECT coalesce(max(id), 0) FROM pages").fetchone()[0]
                )
            next_id = self._last_id
            met, new_pages, new_pieces = [], [], []
            for page, digest, page_keys in zip(pages, digests, keys, strict=True):
                first = known.get(digest)
                if first is not None:
                    met.append(Met(first if first != page.url else None))
                    continue
                # each page once, though it shares several pieces: url -> simhash
                candidates = {u: s for key in page_keys for _, s, u in pieces[key]}
                self.compared += len(candidates)
                near = nearest(page.simhash, ((s, u) for u, s in candidates.items()), page.url)
                met.append(Met(None, near))
                known[digest] = page.url
                next_id += 1
                new_pages.append((next_id, digest, page.url))
                signed = _signed(page.simhash)
                for key in page_keys:
                    new_pieces.append((key, next_id, signed))
                    entries = pieces[key]
                    entries.append((next_id, page.simhash, page.url))
                    if len(entries) > self.keep:
                        forgotten.append((key, entries.pop(0)[0]))
            db.executemany("INSERT INTO pages (id, digest, url) VALUES (?, ?, ?)", new_pages)
            db.executemany("INSERT INTO pieces VALUES (?, ?, ?)", new_pieces)
            db.executemany("DELETE FROM pieces WHERE key = ? AND page = ?", forgotten)
            db.execute("COMMIT")
            self._last_id = next_id
        except BaseException:
            self._last_id = None  # read again from what the file kept
            self._held.clear()
            if db.in_transaction:  # (SQLite rolled back already after a full disk)
                db.execute("ROLLBACK")
            raise
        return met

    def _pieces(
        self, keys: list[int]
    ) -> tuple[dict[int, list[tuple[int, int, str]]], list[tuple[int, int]]]:
        """The entries ``(page id, simhash, url)`` of each of ``keys``, oldest
        first, the newest ``keep`` of each (held, or read: then held); and
        the (key, page id) of the older ones (a piece of a job dir from
        before pieces were bounded, forgotten at its first reading)."""
        held = self._held
        pieces: dict[int, list[tuple[int, int, str]]] = {}
        missing = []
        for key in keys:
            entries = held.get(key)
            if entries is None:
                missing.append(key)
            else:
                held.move_to_end(key)
                pieces[key] = entries
        read: dict[int, list[tuple[int, int, str]]] = {key: [] for key in missing}
        for key, page, simhash, url in self._select(
            "SELECT p.key, p.page, p.simhash, u.url FROM pieces p JOIN pages u ON u.id = p.page",
            "p.key",
            missing,
        ):
            read[key].append((page, simhash & (1 << 64) - 1, url))
            self.read += 1
        forgotten = []
        for key, entries in read.items():
            entries.sort()
            if len(entries) > self.keep:
                forgotten += [(key, page) for page, _, _ in entries[: -self.keep]]
                del entries[: -self.keep]
            pieces[key] = held[key] = entries
        while len(held) > PIECES_HELD:
            held.popitem(last=False)
        return pieces, forgotten

    def _select(self, query: str, column: str, values: list[Any]) -> Iterator[tuple[Any, ...]]:
        """The rows of ``query`` whose ``column`` is one of ``values``, in
        chunks (SQLite's limit of parameters)."""
        for at in range(0, len(values), _CHUNK):
            chunk = values[at : at + _CHUNK]
            marks = ",".join("?" * len(chunk))
            yield from self.db.execute(f"{query} WHERE {column} IN ({marks})", chunk)

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the file, and sync it (the job's checkpoint)."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        self.db.close()
