"""LocalContentIndex: a job dir's content index, in SQLite behind a log.

The contract (:class:`mpcrawler.content.index.ContentIndex`): what each
page of a batch met (the first URL with its text, else the closest near
page of its host), every page added.  Here a piece of a host keeps its
newest ``PIECE_KEEP`` pages in ``content.sqlite``, and the pieces last used
(up to ``PIECES_HELD``) are held in memory: this object is the file's only
writer.

**Written behind.**  A batch costs one append to ``content.log`` (one
system call); the file takes what the log holds in one transaction at the
job's checkpoint, or once the log holds ``FLUSH_PAGES`` pages, and the log
is emptied.  Until then the pages' digests and pieces are held in memory,
so a batch reads the file only for what it never held (a digest met long
ago, a piece let go).  A kill loses nothing: the next opening takes the
log's pages into the file (those it holds already, by page id, are left).
Committing each batch in SQLite cost 40-57 µs a page in its COMMIT alone
(timed statement by statement, batches of 3); ``benchmarks/bench_content.py
--batch 3`` went from 138 to 67 µs a page.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import sqlite3
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...content.fingerprint import bands
from ...content.index import PIECE_KEEP, Met, Page, band_key, nearest
from ...errors import store_damaged
from .storage import frame_payload, fsync_path, read_frames

__all__ = [
    "CONTENT_FILE",
    "FLUSH_PAGES",
    "LOG_FILE",
    "PIECES_HELD",
    "ContentLog",
    "LocalContentIndex",
]

CONTENT_FILE = "content.sqlite"
PIECES_HELD = 4096  # pieces held in memory once written, the last used (a host's template's)
FLUSH_PAGES = 4096  # pages the log holds at most, between checkpoints
_CHUNK = 500  # values in one IN (...) at most
WAL_PAGES = 16  # pages of write-ahead log (4 KiB each) folded into the file at most
log = logging.getLogger("mpcrawler.frontier")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _keys_of(page: Page) -> list[int]:
    """The keys of a page's pieces, one a band (none without a simhash)."""
    if page.simhash is None:
        return []
    return [band_key(page.host, k, v) for k, v in enumerate(bands(page.simhash))]


class ContentLog:
    """The pages the index added since its file last took them, appended
    (one write a batch) before the index holds them: a kill loses none, and
    the next opening takes them into the file.  A frame (length, CRC32) a
    batch, of entries: page id, simhash, digest, the host's and the URL's
    lengths, the host, the URL; a page without a simhash (no
    --near-duplicates) has its id negated, and a simhash of 0.  A failed
    append leaves the file as it was (no torn frame before the next)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self.fd).st_size

    def append(self, added: list[tuple[int, bytes, Page]]) -> None:
        frames, payload = [], bytearray()
        for page_id, digest, page in added:
            host, url = page.host.encode(_UTF8, _SURROGATES), page.url.encode(_UTF8, _SURROGATES)
            simhash = page.simhash
            if simhash is None:
                page_id, simhash = -page_id, 0
            payload += _ENTRY.pack(page_id, simhash, digest, len(host), len(url))
            payload += host + url
            if len(payload) >= _FRAME_BYTES:
                frames.append(frame_payload(bytes(payload)))
                payload.clear()
        if payload:
            frames.append(frame_payload(bytes(payload)))
        data = b"".join(frames)
        try:
            written = 0
            while written < len(data):
                written += os.write(self.fd, data[written:])
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.size)
            raise
        self.size += len(data)

    def read(self) -> Iterator[tuple[int, bytes, Page]]:
        """Each entry of the whole log (a torn last frame, from a kill while
        it was written, is logged and left out: its pages were not checked)."""
        for payload in read_frames(self.path, LOG_FILE):
            at = 0
            while at < len(payload):
                page_id, simhash, digest, host_size, url_size = _ENTRY.unpack_from(payload, at)
                at += _ENTRY.size
                host = payload[at : at + host_size].decode(_UTF8, _SURROGATES)
                at += host_size
                url = payload[at : at + url_size].decode(_UTF8, _SURROGATES)
                at += url_size
                if page_id < 0:  # (no simhash)
                    yield -page_id, digest, Page(url, host, digest.hex(), None)
                else:
                    yield page_id, digest, Page(url, host, digest.hex(), simhash)

    def clear(self) -> None:
        if self.size:
            os.ftruncate(self.fd, 0)
            self.size = 0

    def close(self) -> None:
        os.close(self.fd)


LOG_FILE = "content.log"
_ENTRY = struct.Struct("<qQ16sII")  # page id, simhash, digest, host and URL lengths
_FRAME_BYTES = 1 << 18  # a frame's entries, at most about (storage.MAX_RECORD is 1 MiB)
_UTF8, _SURROGATES = "utf-8", "surrogatepass"


class LocalContentIndex:
    """The index of one job dir's crawl, in ``directory``; a piece keeps its
    newest ``keep`` pages.  Written behind (see :class:`ContentLog`): a
    batch costs one append to the log, and the file takes what the log
    holds at the job's checkpoint, or once it holds ``FLUSH_PAGES`` pages."""

    def __init__(self, directory: Path, keep: int = PIECE_KEEP) -> None:
        self.path = Path(directory) / CONTENT_FILE
        self.keep = keep
        self.read = self.compared = 0
        # key -> its entries (page id, simhash, url), oldest first: the last used
        self._held: collections.OrderedDict[int, list[tuple[int, int, str]]] = (
            collections.OrderedDict()
        )
        # In the log, not yet in the file: the pages' digests (-> URL) and rows.
        self._pending: dict[bytes, str] = {}
        self._pages: list[tuple[int, bytes, str]] = []
        self._pieces_in: list[tuple[int, int, int]] = []
        self._pieces_out: list[tuple[int, int]] = []  # (key, page id) a piece forgot
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            # A kill loses nothing the log holds; a power cut, nothing before
            # the job's last checkpoint (``checkpoint`` syncs the file).
            self.db.execute("PRAGMA synchronous=OFF")
            self.db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
            self.db.executescript(
                "CREATE TABLE IF NOT EXISTS pages (id INTEGER PRIMARY KEY, digest BLOB UNIQUE,"
                " url TEXT NOT NULL);"
                "CREATE TABLE IF NOT EXISTS pieces (key INTEGER NOT NULL, page INTEGER NOT NULL,"
                " simhash INTEGER NOT NULL, PRIMARY KEY (key, page)) WITHOUT ROWID;"
            )
            # the greatest page id the file holds (this object is its only writer)
            self._last_id = int(
                self.db.execute("SELECT coalesce(max(id), 0) FROM pages").fetchone()[0]
            )
        except sqlite3.DatabaseError as exc:
            raise store_damaged(
                exc,
                self.path,
                f"the pages' fingerprints {self.path} are damaged ({exc}); move the file "
                "away and rerun (or rerun with --no-dedup): the pages recorded so far are "
                "then not known by their text",
            ) from None
        self.log = ContentLog(Path(directory) / LOG_FILE)
        self._replay()

    def check(self, pages: Sequence[Page]) -> list[Met]:
        """The batch's digests and pieces (held, pending, or read: at most
        one query each), then the pages in order (each meets those before
        it), then one append to the log.  A failed append changes nothing
        held."""
        if not pages:
            return []
        digests = [bytes.fromhex(page.digest) for page in pages]
        keys = [_keys_of(page) for page in pages]
        known = self._known(digests)
        pieces, forgotten = self._pieces({key for page_keys in keys for key in page_keys})
        next_id = self._last_id
        met, added = [], []
        for page, digest, page_keys in zip(pages, digests, keys, strict=True):
            first = known.get(digest)
            if first is not None:
                met.append(Met(first if first != page.url else None))
                continue
            if page.simhash is None:
                met.append(Met())
            else:
                # each page once, though it shares several pieces: url -> simhash
                candidates = {u: s for key in page_keys for _, s, u in pieces[key]}
                self.compared += len(candidates)
                near = nearest(page.simhash, ((s, u) for u, s in candidates.items()), page.url)
                met.append(Met(None, near))
            known[digest] = page.url
            next_id += 1
            added.append((next_id, digest, page, page_keys))
            forgotten += self._file(pieces, page_keys, next_id, page.simhash, page.url)
        if added:
            self.log.append([entry[:3] for entry in added])  # (raises: nothing below is done)
        self._apply(added, pieces, forgotten, next_id)
        if len(self._pages) >= FLUSH_PAGES:
            self._write()
        return met

    def _known(self, digests: list[bytes]) -> dict[bytes, str]:
        """The URL that had each of ``digests`` first, of those met before."""
        pending = self._pending
        known = {d: pending[d] for d in digests if d in pending}
        rest = [d for d in digests if d not in known]
        known.update(self._select("SELECT digest, url FROM pages", "digest", rest))
        return known

    def _file(
        self,
        pieces: dict[int, list[tuple[int, int, str]]],
        keys: list[int],
        page: int,
        simhash: int | None,
        url: str,
    ) -> list[tuple[int, int]]:
        """A new page into each of its ``pieces``; the (key, page id) that
        their newest ``keep`` no longer hold."""
        forgotten = []
        for key in keys:
            entries = pieces[key]
            entries.append((page, simhash, url))
            if len(entries) > self.keep:
                forgotten.append((key, entries.pop(0)[0]))
        return forgotten

    def _apply(
        self,
        added: list[tuple[int, bytes, Page, list[int]]],
        pieces: dict[int, list[tuple[int, int, str]]],
        forgotten: list[tuple[int, int]],
        last_id: int,
    ) -> None:
        """What a batch (or a replayed one) added, held until it is written."""
        held = self._held
        for key, entries in pieces.items():
            held[key] = entries
            held.move_to_end(key)
        for page_id, digest, page, keys in added:
            self._pending[digest] = page.url
            self._pages.append((page_id, digest, page.url))
            if page.simhash is not None:
                signed = _signed(page.simhash)
                self._pieces_in += [(key, page_id, signed) for key in keys]
        self._pieces_out += forgotten
        self._last_id = last_id

    def _pieces(
        self, keys: set[int]
    ) -> tuple[dict[int, list[tuple[int, int, str]]], list[tuple[int, int]]]:
        """A copy of the entries ``(page id, simhash, url)`` of each of
        ``keys``, oldest first, the newest ``keep`` of each (held, or read);
        and the (key, page id) of the older ones (a piece of a job dir from
        before pieces were bounded, forgotten at its first reading)."""
        held = self._held
        pieces: dict[int, list[tuple[int, int, str]]] = {}
        missing = []
        for key in keys:
            entries = held.get(key)
            if entries is None:
                missing.append(key)
            else:
                pieces[key] = entries.copy()
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
            pieces[key] = entries
        return pieces, forgotten

    def _replay(self) -> None:
        """The pages a kill left in the log only, taken again, then written."""
        for page_id, digest, page in self.log.read():
            if page_id <= self._last_id:  # written, and the log not yet emptied
                continue
            keys = _keys_of(page)
            pieces, forgotten = self._pieces(set(keys))
            forgotten += self._file(pieces, keys, page_id, page.simhash, page.url)
            self._apply([(page_id, digest, page, keys)], pieces, forgotten, page_id)
        self._write()

    def _write(self) -> None:
        """What the log holds, into the file; then the log emptied, and the
        pieces held cut to PIECES_HELD.  A failure keeps it all held and
        logged, for the next try."""
        self._write_file()
        self.log.clear()
        self._pending.clear()
        self._pages, self._pieces_in, self._pieces_out = [], [], []
        held = self._held
        while len(held) > PIECES_HELD:
            held.popitem(last=False)

    def _write_file(self) -> None:
        """The pages and pieces held since the last write, in one transaction."""
        db = self.db
        if self._pages or self._pieces_out:
            db.execute("BEGIN")
            try:
                db.executemany("INSERT OR IGNORE INTO pages VALUES (?, ?, ?)", self._pages)
                db.executemany("INSERT OR IGNORE INTO pieces VALUES (?, ?, ?)", self._pieces_in)
                db.executemany("DELETE FROM pieces WHERE key = ? AND page = ?", self._pieces_out)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # (SQLite rolled back already after a full disk)
                    db.execute("ROLLBACK")
                raise

    def _select(self, query: str, column: str, values: list[Any]) -> Iterator[tuple[Any, ...]]:
        """The rows of ``query`` whose ``column`` is one of ``values``, in
        chunks (SQLite's limit of parameters)."""
        for at in range(0, len(values), _CHUNK):
            chunk = values[at : at + _CHUNK]
            marks = ",".join("?" * len(chunk))
            yield from self.db.execute(f"{query} WHERE {column} IN ({marks})", chunk)

    def checkpoint(self) -> None:
        """What the log holds, written; the write-ahead log folded into the
        file, and the file synced (the job's checkpoint)."""
        self._write()
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        fsync_path(self.path)

    def close(self) -> None:
        """What the log holds, written, and the files closed.  A write that
        fails (a full disk) is not raised, only said in the crawl's log
        (its error is the crawl's already): ``content.log`` keeps the pages,
        and the next opening takes them into the file."""
        try:
            self._write()
        except (OSError, sqlite3.Error) as exc:
            log.info("the pages' fingerprints stay in %s until the next run: %s", LOG_FILE, exc)
        finally:
            self.log.close()
            self.db.close()
