"""The frontier: a crash-safe, disk-backed priority queue of URLs, and the seen set.

Owned by the master process only (workers never touch it).  The scheduler
``get()``s URLs from the :class:`UrlQueueManager`, and ``ack()``s each one once
its page is recorded and the links found on it are ``put()``.  The
:class:`SeenSet` (in :mod:`mpcrawler.seen`, re-exported here) remembers every
canonical URL ever queued.

UrlQueueManager has three tiers, after the classic three-tier design:

* **cache** -- a bounded in-memory queue (at most ``cache_size`` items) that
  ``get()`` serves from.  Invariant: every item in the cache sorts before every
  item on disk, so the head of the cache is always the global head.
* **finding** files -- new URLs that may not enter the cache (because the disk
  already holds something that sorts before them) are appended here.
* **waiting** files -- when the cache overflows, its tail is spilled here.  A
  spilled item sorts before everything on disk of its weight, so waiting
  segments are read before finding segments: the spilled URL keeps its turn.

Order is exactly that of a heap keyed by ``(-weight, put sequence number)``.
Per weight, the disk holds one sorted run as a deque of immutable segment
files: spills push a *waiting* segment at the front, puts append to the last
*finding* segment, refills read from the front.

Durability is a checkpoint plus a journal.  A *checkpoint* writes the cache
and the gotten-but-unacked items to a snapshot file, fsyncs every segment
written since the last one, and atomically replaces ``state.json``, which
records each segment's read offset and valid length and names a new, empty
*journal*.  Between checkpoints every put, get and ack is appended to the
journal: ``sync()`` hands it to the OS (survives the process being killed),
``flush()`` also fsyncs it (survives a power cut) and checkpoints once the
journal is long.  Reopening loads the checkpoint, deletes files it does not
reference, replays the journal (the queue is deterministic, so replay
rebuilds the exact state), and puts items gotten but not acked back in their
places.  Records carry their length and a CRC32: a torn or corrupt record is
detected, logged and skipped.  Nothing on disk is pickle: records are
``struct``-packed, state is JSON.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import struct
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .seen import SeenSet

__all__ = [
    "FORMAT_VERSION",
    "FrontierError",
    "SeenSet",
    "UrlInfo",
    "UrlQueueManager",
    "inspect",
]

log = logging.getLogger(__name__)

FORMAT_VERSION = 2
STATE_FILE = "state.json"
_HEADER = struct.Struct("<II")  # payload length, crc32(payload)
_PAYLOAD = struct.Struct("<qqI")  # seq, weight, depth; the UTF-8 url follows
_SEQ = struct.Struct("<q")
_MAX_RECORD = 1 << 20
_SEGMENT_RECORDS = 200_000  # a finding segment is sealed after this many records
_MAX_OPEN_WRITERS = 32
_JOURNAL_LIMIT = 500_000  # records; flush() checkpoints past this
_FILE_NAME = re.compile(r"^(waiting|finding|snapshot|journal)-(\d+)\.(seg|log)$")
_PUT, _GET, _ACK = b"P", b"G", b"A"


class FrontierError(RuntimeError):
    """The frontier's directory cannot be used (wrong format, unreadable state)."""


class UrlInfo(NamedTuple):
    """One queued URL.  ``seq`` is its put sequence number, unique per queue."""

    url: str
    depth: int
    weight: int
    seq: int


def frame_payload(payload: bytes) -> bytes:
    """One record as written to every frontier file: length, CRC32, payload."""
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def _encode(item: UrlInfo) -> bytes:
    return frame_payload(
        _PAYLOAD.pack(item.seq, item.weight, item.depth) + item.url.encode("utf-8")
    )


def _decode(payload: bytes | memoryview) -> UrlInfo:
    """The item in one payload.  Raises FrontierError if it holds none: its
    checksum matched, so that is a bug or tampering, not a torn write."""
    if len(payload) < _PAYLOAD.size:
        raise FrontierError(f"a {len(payload)}-byte record is too short to hold a URL")
    seq, weight, depth = _PAYLOAD.unpack_from(payload)
    try:
        url = bytes(payload[_PAYLOAD.size :]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontierError(f"a record's URL is not UTF-8 ({exc.reason})") from None
    return UrlInfo(url, depth, weight, seq)


def _decode_seq(payload: bytes | memoryview) -> int:
    if len(payload) != _SEQ.size:
        raise FrontierError(f"a {len(payload)}-byte record where a sequence number belongs")
    return int(_SEQ.unpack(payload)[0])


def _decode_all(payloads: list[bytes], name: str) -> list[UrlInfo]:
    """Decode ``payloads``, skipping (with a warning) any that hold no item."""
    try:
        return list(map(_decode, payloads))
    except FrontierError:
        items = []
        for payload in payloads:
            try:
                items.append(_decode(payload))
            except FrontierError as exc:
                log.warning("frontier: %s in %s; skipped", exc, name)
        return items


def _frames(data: bytes, limit: int, name: str) -> tuple[list[bytes], int, bool]:
    """Split up to ``limit`` framed payloads off the front of ``data``.

    Returns the payloads, the bytes consumed, and whether a corrupt record was
    met (after which nothing more in this file can be trusted).  A record cut
    off by the end of ``data`` is left for the caller to read on.
    """
    payloads: list[bytes] = []
    pos, end = 0, len(data)
    header_size = _HEADER.size
    while len(payloads) < limit and pos + header_size <= end:
        length, crc = _HEADER.unpack_from(data, pos)
        start = pos + header_size
        if length > _MAX_RECORD:
            log.warning("frontier: corrupt record length in %s at byte %d; skipped", name, pos)
            return payloads, pos, True
        if start + length > end:
            break
        payload = data[start : start + length]
        if zlib.crc32(payload) != crc:
            log.warning("frontier: checksum mismatch in %s at byte %d; skipped", name, pos)
            return payloads, pos, True
        payloads.append(payload)
        pos = start + length
    return payloads, pos, False


@dataclass
class _Segment:
    """One immutable run of records of one weight, sorted by seq."""

    name: str
    kind: str  # "waiting" or "finding"
    weight: int
    offset: int  # byte offset of the next unread record
    end: int  # bytes of valid data
    count: int  # records not yet read

    def to_json(self) -> list[Any]:
        return [self.name, self.kind, self.offset, self.end, self.count, self.weight]


class _AppendFile:
    """An append-only file with a buffer the queue controls (no hidden buffering)."""

    __slots__ = ("buffer", "fd")

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.buffer = bytearray()

    def write(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) >= 1 << 16:
            self.sync()

    def sync(self) -> None:
        if not self.buffer:
            return
        data = bytes(self.buffer)
        self.buffer.clear()
        written = 0
        while written < len(data):
            written += os.write(self.fd, data[written:])

    def fsync(self) -> None:
        self.sync()
        os.fsync(self.fd)

    def close(self, *, discard: bool = False) -> None:
        if not discard:
            self.sync()
        os.close(self.fd)


class _Writer(_AppendFile):
    """The open tail of a finding segment."""

    __slots__ = ("segment",)

    def __init__(self, path: Path, segment: _Segment) -> None:
        super().__init__(path)
        self.segment = segment


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write(path: Path, data: bytes, fsync: bool) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if fsync:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if fsync:
        _fsync_path(path.parent)


def inspect(directory: str | os.PathLike[str]) -> dict[str, int]:
    """Counts of a frontier as of its last sync, read without opening it.

    ``queued`` is what ``get()`` could return; ``taken`` what was gotten
    and not acked (it is queued again when the frontier is reopened).  Reads
    ``state.json``, the snapshot and the journal; writes nothing.
    """
    root = Path(directory)
    try:
        state = json.loads((root / STATE_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return {"queued": 0, "taken": 0}
    queued = sum(int(segment[4]) for segment in state.get("segments", []))
    taken = 0
    for name, is_journal in ((state.get("snapshot"), False), (state.get("journal"), True)):
        if not name:
            continue
        try:
            data = (root / name).read_bytes()
        except OSError:
            continue
        payloads, _, _ = _frames(data, 1 << 62, name)
        if not is_journal:
            cached = min(int(state.get("snapshot_cache", 0)), len(payloads))
            queued += cached
            taken += len(payloads) - cached
            continue
        for payload in payloads:
            op = payload[:1]
            if op == _PUT:
                queued += 1
            elif op == _GET:
                queued -= 1
                taken += 1
            elif op == _ACK:
                taken -= 1
    return {"queued": queued, "taken": taken}


class UrlQueueManager:
    """A priority queue of URLs: bounded memory, disk overflow, crash-safe.

    ``get()`` returns items highest weight first, in put order among equal
    weights.  Not thread-safe: the master process is its only user.

    Raises :class:`FrontierError` when ``directory`` holds a frontier of
    another format version or an unreadable ``state.json``; ``OSError`` (such
    as ENOSPC) from writes propagates, and the last checkpoint stays intact.
    """

    def __init__(
        self, directory: str | os.PathLike[str], cache_size: int = 10_000, *, fsync: bool = True
    ) -> None:
        if cache_size < 1:
            raise ValueError("cache_size must be at least 1")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.cache_size = cache_size
        self._fsync = fsync
        self._spill_batch = max(1, cache_size // 4)
        self._refill_below = max(1, cache_size // 2)
        self._cache: dict[int, deque[UrlInfo]] = {}
        self._cache_count = 0
        self._disk: dict[int, deque[_Segment]] = {}
        self._disk_count = 0
        self._waiting_count = 0
        self._writers: dict[int, _Writer] = {}
        self._unacked: dict[int, UrlInfo] = {}
        self._dirty: set[str] = set()
        self._garbage: list[str] = []
        self._next_seq = 0
        self._next_segment = 0
        self._snapshot: str | None = None
        self._journal: _AppendFile | None = None
        self._journal_name: str | None = None
        self._journal_records = 0
        self._replaying = False
        self.recovered: list[UrlInfo] = []
        self.spilled_total = 0
        self._closed = False
        self._load()

    # ------------------------------------------------------------------ API
    def put(self, url: str, depth: int = 0, weight: int = 0) -> UrlInfo:
        """Queue ``url``; returns the stored :class:`UrlInfo`."""
        if not isinstance(weight, int):
            raise TypeError("weight must be an int")
        item = UrlInfo(url, depth, weight, self._next_seq)
        self._next_seq += 1
        payload = _PAYLOAD.pack(item.seq, weight, depth) + url.encode("utf-8")
        if not self._replaying:
            self._log(_PUT + payload)
        self._insert(item, payload)
        return item

    def get(self) -> UrlInfo | None:
        """The head item, or None when nothing is queued.  Ack it when done."""
        if self._cache_count < self._refill_below and self._disk_count:
            self._refill()
        if not self._cache_count:
            return None
        weight = max(self._cache)
        bucket = self._cache[weight]
        item = bucket.popleft()
        if not bucket:
            del self._cache[weight]
        self._cache_count -= 1
        self._unacked[item.seq] = item
        if not self._replaying:
            self._log(_GET + _SEQ.pack(item.seq))
        return item

    def ack(self, item: UrlInfo) -> bool:
        """Mark a gotten item done; False if it was not outstanding."""
        if self._unacked.pop(item.seq, None) is None:
            return False
        if not self._replaying:
            self._log(_ACK + _SEQ.pack(item.seq))
        return True

    def __len__(self) -> int:
        return self._cache_count + self._disk_count

    @property
    def taken(self) -> int:
        """Items gotten and not yet acked (queued again on reopening)."""
        return len(self._unacked)

    def stats(self) -> dict[str, int]:
        return {
            "queued": len(self),
            "in_cache": self._cache_count,
            "waiting": self._waiting_count,
            "finding": self._disk_count - self._waiting_count,
            "taken": len(self._unacked),
            "spilled": self.spilled_total,
        }

    def sync(self) -> None:
        """Hand the journal to the OS: everything so far survives this process
        being killed (not a power cut; that takes ``flush()``)."""
        self._check_open()
        assert self._journal is not None
        self._journal.sync()

    def flush(self) -> None:
        """Everything so far is durable once this returns."""
        self._check_open()
        assert self._journal is not None
        if self._journal_records >= _JOURNAL_LIMIT:
            self.checkpoint()
        elif self._fsync:
            self._journal.fsync()
        else:
            self._journal.sync()

    def checkpoint(self) -> None:
        """Write the whole state afresh and start an empty journal."""
        self._check_open()
        cache_items = [i for w in sorted(self._cache, reverse=True) for i in self._cache[w]]
        unacked = sorted(self._unacked.values(), key=lambda i: (-i.weight, i.seq))
        old_snapshot, old_journal = self._snapshot, self._journal_name
        self._snapshot = None
        if cache_items or unacked:
            name = self._new_name("snapshot", "seg")
            with open(self.directory / name, "wb") as f:
                f.write(b"".join(map(_encode, cache_items)) + b"".join(map(_encode, unacked)))
            self._snapshot = name
            self._dirty.add(name)
        for writer in self._writers.values():
            writer.sync()
        if self._fsync:
            for name in self._dirty.difference(self._garbage):
                _fsync_path(self.directory / name)
        self._dirty.clear()
        journal_name = self._new_name("journal", "log")
        journal = _AppendFile(self.directory / journal_name)
        state = {
            "format": FORMAT_VERSION,
            "next_seq": self._next_seq,
            "next_segment": self._next_segment,
            "spilled": self.spilled_total,
            "snapshot": self._snapshot,
            "snapshot_cache": len(cache_items),
            "journal": journal_name,
            "segments": [s.to_json() for segs in self._disk.values() for s in segs],
        }
        _atomic_write(self.directory / STATE_FILE, json.dumps(state).encode(), self._fsync)
        if self._journal is not None:
            self._journal.close(discard=True)
        self._journal, self._journal_name, self._journal_records = journal, journal_name, 0
        self._garbage += [n for n in (old_snapshot, old_journal) if n]
        for name in self._garbage:
            with contextlib.suppress(FileNotFoundError):
                (self.directory / name).unlink()
        self._garbage.clear()

    def close(self) -> None:
        """Checkpoint and release files.  Un-acked items are delivered again on reopen."""
        if self._closed:
            return
        self.checkpoint()
        self._release(discard=False)

    def abandon(self) -> None:
        """Drop everything not yet synced and release files, as if killed (for tests)."""
        self._release(discard=True)

    def __enter__(self) -> UrlQueueManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[UrlInfo]:
        """Get (without acking) until empty."""
        while (item := self.get()) is not None:
            yield item

    # ------------------------------------------------------------ internals
    def _release(self, *, discard: bool) -> None:
        for writer in self._writers.values():
            writer.close(discard=discard)
        self._writers.clear()
        if self._journal is not None:
            self._journal.close(discard=discard)
            self._journal = None
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise FrontierError("the queue is closed")

    def _log(self, payload: bytes) -> None:
        assert self._journal is not None, "the queue is closed"
        self._journal.write(frame_payload(payload))
        self._journal_records += 1

    def _new_name(self, kind: str, ext: str = "seg") -> str:
        self._next_segment += 1
        return f"{kind}-{self._next_segment:08d}.{ext}"

    def _insert(self, item: UrlInfo, payload: bytes) -> None:
        if not self._disk or item.weight > max(self._disk):
            bucket = self._cache.get(item.weight)
            if bucket is None:
                bucket = self._cache[item.weight] = deque()
            bucket.append(item)
            self._cache_count += 1
            if self._cache_count > self.cache_size:
                self._spill()
        else:
            self._append_finding(item, payload)

    def _append_finding(self, item: UrlInfo, payload: bytes) -> None:
        writer = self._writers.get(item.weight)
        if writer is None or writer.segment.count >= _SEGMENT_RECORDS:
            writer = self._open_writer(item.weight)
        record = frame_payload(payload)
        writer.write(record)
        segment = writer.segment
        segment.end += len(record)
        segment.count += 1
        self._disk_count += 1

    def _open_writer(self, weight: int) -> _Writer:
        old = self._writers.pop(weight, None)
        if old is not None:
            old.close()
        if len(self._writers) >= _MAX_OPEN_WRITERS:
            victim = next(iter(self._writers))
            self._writers.pop(victim).close()
        name = self._new_name("finding")
        segment = _Segment(name, "finding", weight, 0, 0, 0)
        self._disk.setdefault(weight, deque()).append(segment)
        self._dirty.add(name)
        writer = self._writers[weight] = _Writer(self.directory / name, segment)
        return writer

    def _spill(self) -> None:
        """Move the cache's tail (lowest weight, newest) to waiting segments."""
        to_spill = self._cache_count - self.cache_size + self._spill_batch
        to_spill = min(to_spill, self._cache_count)
        while to_spill > 0:
            weight = min(self._cache)
            bucket = self._cache[weight]
            take = min(to_spill, len(bucket))
            spilled = [bucket.pop() for _ in range(take)]
            spilled.reverse()
            if not bucket:
                del self._cache[weight]
            self._cache_count -= take
            to_spill -= take
            self._push_waiting(weight, spilled)
            self.spilled_total += take

    def _push_waiting(self, weight: int, items: list[UrlInfo]) -> None:
        """Write ``items`` (sorted) as a waiting segment at the front of ``weight``."""
        name = self._new_name("waiting")
        data = b"".join(map(_encode, items))
        with open(self.directory / name, "wb") as f:
            f.write(data)
        self._dirty.add(name)
        segment = _Segment(name, "waiting", weight, 0, len(data), len(items))
        self._disk.setdefault(weight, deque()).appendleft(segment)
        self._disk_count += len(items)
        self._waiting_count += len(items)

    def _refill(self) -> None:
        """Move the disk's head items into the cache, up to the cache's 3/4."""
        want = max(1, self.cache_size - self._spill_batch - self._cache_count)
        while want > 0 and self._disk:
            weight = max(self._disk)
            segments = self._disk[weight]
            segment = segments[0]
            items = self._read(segment, want)
            if items:
                bucket = self._cache.get(weight)
                if bucket is None:
                    bucket = self._cache[weight] = deque()
                bucket.extend(items)
                self._cache_count += len(items)
                want -= len(items)
            if segment.count == 0:
                segments.popleft()
                if not segments:
                    del self._disk[weight]
                writer = self._writers.get(weight)
                if writer is not None and writer.segment is segment:
                    writer.close()
                    del self._writers[weight]
                self._garbage.append(segment.name)

    def _read(self, segment: _Segment, limit: int) -> list[UrlInfo]:
        """Read up to ``limit`` records from the front of ``segment``."""
        writer = self._writers.get(segment.weight)
        if writer is not None and writer.segment is segment:
            writer.sync()
        items: list[UrlInfo] = []
        try:
            f = open(self.directory / segment.name, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            log.warning(
                "frontier: cannot read %s (%s); its %d URLs are lost",
                segment.name,
                exc,
                segment.count,
            )
            self._drop(segment, segment.count)
            return items
        with f:
            chunk = max(1 << 16, min(limit * 128, 1 << 24))
            while len(items) < limit and segment.offset < segment.end and segment.count:
                f.seek(segment.offset)
                data = f.read(min(chunk, segment.end - segment.offset))
                payloads, used, corrupt = _frames(data, limit - len(items), segment.name)
                items.extend(_decode_all(payloads, segment.name))
                segment.offset += used
                self._drop(segment, len(payloads))
                if corrupt or (not payloads and len(data) < chunk):
                    if not corrupt:
                        log.warning("frontier: torn record at the end of %s; skipped", segment.name)
                    segment.offset = segment.end
                elif not payloads:
                    chunk *= 2  # one record longer than the chunk
        if segment.count and segment.offset >= segment.end:
            log.warning(
                "frontier: %s ended %d records early; they are lost", segment.name, segment.count
            )
        if segment.offset >= segment.end:
            self._drop(segment, segment.count)
        return items

    def _drop(self, segment: _Segment, n: int) -> None:
        segment.count -= n
        self._disk_count -= n
        if segment.kind == "waiting":
            self._waiting_count -= n

    # ------------------------------------------------------------- loading
    def _load(self) -> None:
        state_path = self.directory / STATE_FILE
        if not state_path.exists():
            self._remove_unreferenced(set())
            self.checkpoint()
            return
        try:
            state = json.loads(state_path.read_text("utf-8"))
            version = state["format"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise FrontierError(f"unreadable frontier state {state_path}: {exc}") from exc
        if version != FORMAT_VERSION:
            raise FrontierError(
                f"frontier in {self.directory} has format {version}; "
                f"this version of mpcrawler reads format {FORMAT_VERSION}"
            )
        try:
            self._next_seq = int(state["next_seq"])
            self._next_segment = int(state["next_segment"])
            self.spilled_total = int(state.get("spilled", 0))
            for name, kind, offset, end, count, weight in state["segments"]:
                segment = _Segment(name, kind, int(weight), int(offset), int(end), int(count))
                self._disk.setdefault(segment.weight, deque()).append(segment)
                self._disk_count += segment.count
                if kind == "waiting":
                    self._waiting_count += segment.count
            snapshot, cached = state.get("snapshot"), int(state.get("snapshot_cache", 0))
            journal = state.get("journal")
        except (KeyError, TypeError, ValueError) as exc:
            raise FrontierError(f"malformed frontier state {state_path}: {exc}") from exc
        referenced = {s.name for segs in self._disk.values() for s in segs}
        referenced.update(n for n in (snapshot, journal) if n)
        self._remove_unreferenced(referenced)
        if snapshot:
            self._restore_snapshot(snapshot, cached)
        if journal:
            self._replay(journal)
        self._return_unacked()
        if self._cache_count > self.cache_size:
            self._spill()
        self.checkpoint()

    def _read_file(self, name: str) -> list[bytes]:
        try:
            data = (self.directory / name).read_bytes()
        except OSError as exc:
            log.warning("frontier: cannot read %s: %s", name, exc)
            return []
        payloads, used, corrupt = _frames(data, 1 << 62, name)
        if not corrupt and used != len(data):
            log.warning("frontier: torn record at the end of %s; skipped", name)
        self._garbage.append(name)
        return payloads

    def _restore_snapshot(self, name: str, cached: int) -> None:
        for n, item in enumerate(_decode_all(self._read_file(name), name)):
            if n < cached:
                self._cache.setdefault(item.weight, deque()).append(item)
                self._cache_count += 1
            else:
                self._unacked[item.seq] = item

    def _replay(self, name: str) -> None:
        """Re-run the journal's operations on the checkpointed state."""
        self._replaying = True
        try:
            for payload in self._read_file(name):
                op, body = payload[:1], payload[1:]
                if op == _PUT:
                    item = _decode(body)
                    if item.seq != self._next_seq:
                        raise FrontierError(f"journal {name} does not follow its checkpoint")
                    self.put(item.url, item.depth, item.weight)
                    self.recovered.append(item)
                elif op == _GET:
                    seq = _decode_seq(body)
                    got = self.get()
                    if got is None or got.seq != seq:
                        raise FrontierError(f"journal {name} does not follow its checkpoint")
                elif op == _ACK:
                    self._unacked.pop(_decode_seq(body), None)
                else:
                    raise FrontierError(f"journal {name} holds an unknown operation {op!r}")
        except FrontierError as exc:
            log.error("frontier: %s; replay stopped there", exc)
        finally:
            self._replaying = False

    def _return_unacked(self) -> None:
        """Put un-acked items back where they sorted.

        One of weight below the disk's top goes to the front of its weight's
        disk run (it sorts before everything there); the rest merge into the
        cache, which is rebuilt in order.
        """
        if not self._unacked:
            return
        top = max(self._disk) if self._disk else None
        behind: dict[int, list[UrlInfo]] = {}
        merged = [i for b in self._cache.values() for i in b]
        for item in self._unacked.values():
            if top is not None and item.weight < top:
                behind.setdefault(item.weight, []).append(item)
            else:
                merged.append(item)
        self._unacked.clear()
        merged.sort(key=lambda i: (-i.weight, i.seq))
        self._cache = {}
        for item in merged:
            self._cache.setdefault(item.weight, deque()).append(item)
        self._cache_count = len(merged)
        for weight, group in behind.items():
            group.sort(key=lambda i: i.seq)
            self._push_waiting(weight, group)

    def _remove_unreferenced(self, referenced: set[str]) -> None:
        for path in self.directory.iterdir():
            match = _FILE_NAME.match(path.name)
            if match and path.name not in referenced:
                path.unlink()
                self._next_segment = max(self._next_segment, int(match.group(2)))
            elif path.name.endswith(".tmp"):
                path.unlink()
