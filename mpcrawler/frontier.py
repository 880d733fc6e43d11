"""The frontier: a crash-safe, disk-backed priority queue of URLs, and the seen set.

Owned by the master process only (workers never touch it).  The scheduler
``get()``s URLs from the :class:`UrlQueueManager`, and ``ack()``s each one once
its page is recorded and the links found on it are ``put()``.  The
:class:`SeenSet` remembers every canonical URL ever queued.

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

Durability is by checkpoint.  ``flush()`` writes the cache and the gotten but
un-acked items to a snapshot file, fsyncs every segment written since the
last checkpoint, and then atomically replaces ``state.json``, which records
each segment's read offset and valid length.  Reopening after a crash
returns to that checkpoint exactly: later appends past a recorded length and
unreferenced files are ignored and removed.  Records carry their length and a
CRC32, so a torn or corrupt record is detected, logged and skipped.  Nothing
on disk is pickle: records are ``struct``-packed, state is JSON.
"""

from __future__ import annotations

import contextlib
import hashlib
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

import diskcache

__all__ = ["FORMAT_VERSION", "FrontierError", "SeenSet", "UrlInfo", "UrlQueueManager"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
STATE_FILE = "state.json"
_HEADER = struct.Struct("<II")  # payload length, crc32(payload)
_PAYLOAD = struct.Struct("<qqI")  # seq, weight, depth; the UTF-8 url follows
_MAX_RECORD = 1 << 20
_SEGMENT_RECORDS = 200_000  # a finding segment is sealed after this many records
_MAX_OPEN_WRITERS = 32
_SEGMENT_NAME = re.compile(r"^(waiting|finding|snapshot)-(\d+)\.seg$")


class FrontierError(RuntimeError):
    """The frontier's directory cannot be used (wrong format, unreadable state)."""


class UrlInfo(NamedTuple):
    """One queued URL.  ``seq`` is its put sequence number, unique per queue."""

    url: str
    depth: int
    weight: int
    seq: int


def _encode(item: UrlInfo) -> bytes:
    payload = _PAYLOAD.pack(item.seq, item.weight, item.depth) + item.url.encode("utf-8")
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def _decode_records(data: bytes, limit: int, name: str) -> tuple[list[UrlInfo], int, bool]:
    """Decode up to ``limit`` records from ``data``.

    Returns the items, the number of bytes consumed, and whether a corrupt
    record was met (after which nothing more can be trusted in this file).
    """
    items: list[UrlInfo] = []
    pos, end = 0, len(data)
    header_size, payload_size = _HEADER.size, _PAYLOAD.size
    while len(items) < limit and pos + header_size <= end:
        length, crc = _HEADER.unpack_from(data, pos)
        start = pos + header_size
        if length < payload_size or length > _MAX_RECORD or start + length > end:
            if start + length > end and length <= _MAX_RECORD:
                break  # record continues past this chunk; the caller reads on
            log.warning("frontier: corrupt record length in %s at byte %d; skipped", name, pos)
            return items, pos, True
        payload = data[start : start + length]
        if zlib.crc32(payload) != crc:
            log.warning("frontier: checksum mismatch in %s at byte %d; skipped", name, pos)
            return items, pos, True
        seq, weight, depth = _PAYLOAD.unpack_from(payload)
        items.append(UrlInfo(payload[payload_size:].decode("utf-8"), depth, weight, seq))
        pos = start + length
    return items, pos, False


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
        return [self.name, self.kind, self.offset, self.end, self.count]


class _Writer:
    """The open tail of a finding segment."""

    __slots__ = ("file", "segment")

    def __init__(self, path: Path, segment: _Segment) -> None:
        self.file = open(path, "ab", buffering=1 << 16)  # noqa: SIM115 - closed by the queue
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


class UrlQueueManager:
    """A priority queue of URLs: bounded memory, disk overflow, crash-safe.

    ``get()`` returns items highest weight first, in put order among equal
    weights.  Not thread-safe: the master process is its only user.

    Raises :class:`FrontierError` when ``directory`` holds a frontier of
    another format version or an unreadable ``state.json``.
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
        self._insert(item)
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
        return item

    def ack(self, item: UrlInfo) -> bool:
        """Mark a gotten item done; False if it was not outstanding."""
        return self._unacked.pop(item.seq, None) is not None

    def __len__(self) -> int:
        return self._cache_count + self._disk_count

    @property
    def in_flight(self) -> int:
        """Items gotten and not yet acked."""
        return len(self._unacked)

    def stats(self) -> dict[str, int]:
        return {
            "queued": len(self),
            "in_cache": self._cache_count,
            "waiting": self._waiting_count,
            "finding": self._disk_count - self._waiting_count,
            "in_flight": len(self._unacked),
            "spilled": self.spilled_total,
        }

    def flush(self) -> None:
        """Checkpoint: once this returns, the current state survives a crash."""
        self._check_open()
        snapshot_items = sorted(
            [*self._unacked.values(), *(i for b in self._cache.values() for i in b)],
            key=lambda i: (-i.weight, i.seq),
        )
        old_snapshot = self._snapshot
        self._snapshot = None
        if snapshot_items:
            name = self._new_name("snapshot")
            with open(self.directory / name, "wb") as f:
                f.write(b"".join(_encode(i) for i in snapshot_items))
            self._snapshot = name
            self._dirty.add(name)
        for writer in self._writers.values():
            writer.file.flush()
        if self._fsync:
            for name in self._dirty.difference(self._garbage):
                _fsync_path(self.directory / name)
        self._dirty.clear()
        state = {
            "format": FORMAT_VERSION,
            "next_seq": self._next_seq,
            "next_segment": self._next_segment,
            "spilled": self.spilled_total,
            "snapshot": self._snapshot,
            "segments": [[*s.to_json(), w] for w, segs in self._disk.items() for s in segs],
        }
        _atomic_write(self.directory / STATE_FILE, json.dumps(state).encode(), self._fsync)
        if old_snapshot:
            self._garbage.append(old_snapshot)
        for name in self._garbage:
            with contextlib.suppress(FileNotFoundError):
                (self.directory / name).unlink()
        self._garbage.clear()

    def close(self) -> None:
        """Flush and release files.  Un-acked items are delivered again on reopen."""
        if self._closed:
            return
        self.flush()
        for writer in self._writers.values():
            writer.file.close()
        self._writers.clear()
        self._closed = True

    def __enter__(self) -> UrlQueueManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[UrlInfo]:
        """Get (without acking) until empty."""
        while (item := self.get()) is not None:
            yield item

    # ------------------------------------------------------------ internals
    def _check_open(self) -> None:
        if self._closed:
            raise FrontierError("the queue is closed")

    def _new_name(self, kind: str) -> str:
        self._next_segment += 1
        return f"{kind}-{self._next_segment:08d}.seg"

    def _max_disk_weight(self) -> int | None:
        return max(self._disk) if self._disk else None

    def _insert(self, item: UrlInfo) -> None:
        top = self._max_disk_weight()
        if top is None or item.weight > top:
            bucket = self._cache.get(item.weight)
            if bucket is None:
                bucket = self._cache[item.weight] = deque()
            bucket.append(item)
            self._cache_count += 1
            if self._cache_count > self.cache_size:
                self._spill()
        else:
            self._append_finding(item)

    def _append_finding(self, item: UrlInfo) -> None:
        writer = self._writers.get(item.weight)
        if writer is None or writer.segment.count >= _SEGMENT_RECORDS:
            writer = self._open_writer(item.weight)
        record = _encode(item)
        writer.file.write(record)
        segment = writer.segment
        segment.end += len(record)
        segment.count += 1
        self._disk_count += 1

    def _open_writer(self, weight: int) -> _Writer:
        old = self._writers.pop(weight, None)
        if old is not None:
            old.file.close()
        if len(self._writers) >= _MAX_OPEN_WRITERS:
            victim = next(iter(self._writers))
            self._writers.pop(victim).file.close()
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

    def _push_waiting(self, weight: int, items: list[UrlInfo]) -> None:
        """Write ``items`` (sorted) as a waiting segment at the front of ``weight``."""
        name = self._new_name("waiting")
        data = b"".join(_encode(i) for i in items)
        with open(self.directory / name, "wb") as f:
            f.write(data)
        self._dirty.add(name)
        segment = _Segment(name, "waiting", weight, 0, len(data), len(items))
        self._disk.setdefault(weight, deque()).appendleft(segment)
        self._disk_count += len(items)
        self._waiting_count += len(items)
        self.spilled_total += len(items)

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
                    writer.file.close()
                    del self._writers[weight]
                self._garbage.append(segment.name)

    def _read(self, segment: _Segment, limit: int) -> list[UrlInfo]:
        """Read up to ``limit`` records from the front of ``segment``."""
        writer = self._writers.get(segment.weight)
        if writer is not None and writer.segment is segment:
            writer.file.flush()
        items: list[UrlInfo] = []
        path = self.directory / segment.name
        try:
            f = open(path, "rb")  # noqa: SIM115 - closed below
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
            f.seek(segment.offset)
            chunk = max(1 << 16, min(limit * 128, 1 << 24))
            while len(items) < limit and segment.offset < segment.end:
                data = f.read(min(chunk, segment.end - segment.offset))
                if not data:
                    log.warning(
                        "frontier: %s is shorter than recorded; %d URLs lost",
                        segment.name,
                        segment.count,
                    )
                    self._drop(segment, segment.count)
                    break
                got, used, corrupt = _decode_records(data, limit - len(items), segment.name)
                items.extend(got)
                segment.offset += used
                self._drop(segment, len(got))
                if corrupt:
                    self._drop(segment, segment.count)
                    segment.offset = segment.end
                    break
                if not got and used == 0:
                    if len(data) >= chunk:
                        chunk *= 2  # one record longer than the chunk
                        f.seek(segment.offset)
                        continue
                    log.warning("frontier: torn record at the end of %s; skipped", segment.name)
                    self._drop(segment, segment.count)
                    segment.offset = segment.end
                    break
                f.seek(segment.offset)
        if segment.offset >= segment.end and segment.count:
            log.warning("frontier: %s ended %d records early", segment.name, segment.count)
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
            snapshot = state.get("snapshot")
        except (KeyError, TypeError, ValueError) as exc:
            raise FrontierError(f"malformed frontier state {state_path}: {exc}") from exc
        referenced = {s.name for segs in self._disk.values() for s in segs}
        if snapshot:
            referenced.add(snapshot)
        self._remove_unreferenced(referenced)
        if snapshot:
            self._restore_snapshot(snapshot)

    def _restore_snapshot(self, name: str) -> None:
        path = self.directory / name
        try:
            data = path.read_bytes()
        except OSError as exc:
            log.warning("frontier: cannot read snapshot %s: %s", name, exc)
            return
        items, used, corrupt = _decode_records(data, 1 << 62, name)
        if corrupt or used != len(data):
            log.warning("frontier: snapshot %s is damaged after %d records", name, len(items))
        self._garbage.append(name)
        top = self._max_disk_weight()
        # Items that sort before everything on disk go back to the cache; an
        # un-acked item of a weight below the disk's top goes to the front of
        # its weight's disk run, which is exactly where it sorted before.
        behind: dict[int, list[UrlInfo]] = {}
        for item in items:
            if top is not None and item.weight < top:
                behind.setdefault(item.weight, []).append(item)
            else:
                self._cache.setdefault(item.weight, deque()).append(item)
                self._cache_count += 1
        for weight, group in behind.items():
            self._push_waiting(weight, group)
            self.spilled_total -= len(group)
        if self._cache_count > self.cache_size:
            self._spill()

    def _remove_unreferenced(self, referenced: set[str]) -> None:
        for path in self.directory.iterdir():
            match = _SEGMENT_NAME.match(path.name)
            if match and path.name not in referenced:
                path.unlink()
                self._next_segment = max(self._next_segment, int(match.group(2)))
            elif path.name.endswith(".tmp"):
                path.unlink()


class SeenSet:
    """Every URL the crawl has queued, as 16-byte BLAKE2b digests in diskcache.

    ``add()`` and ``in`` see pending additions at once; ``flush()`` writes the
    pending batch in one transaction, after which it survives a crash.  The
    crawler flushes the frontier first and this second, so a URL is durably
    seen only once its put is durable.  Callers pass canonical URLs.
    """

    def __init__(
        self, directory: str | os.PathLike[str], *, flush_every: int | None = None
    ) -> None:
        self.directory = Path(directory)
        self._cache = diskcache.Cache(
            str(self.directory),
            eviction_policy="none",
            size_limit=1 << 62,
            cull_limit=0,
            statistics=False,
            tag_index=False,
        )
        self._pending: set[bytes] = set()
        self._flush_every = flush_every

    @staticmethod
    def digest(url: str) -> bytes:
        return hashlib.blake2b(url.encode("utf-8"), digest_size=16).digest()

    def add(self, url: str) -> bool:
        """Mark ``url`` seen; True if it was not seen before."""
        key = self.digest(url)
        if key in self._pending or key in self._cache:
            return False
        self._pending.add(key)
        if self._flush_every is not None and len(self._pending) >= self._flush_every:
            self.flush()
        return True

    def __contains__(self, url: object) -> bool:
        if not isinstance(url, str):
            return False
        key = self.digest(url)
        return key in self._pending or key in self._cache

    def __len__(self) -> int:
        return len(self._cache) + len(self._pending)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def flush(self) -> None:
        if not self._pending:
            return
        with self._cache.transact():
            for key in self._pending:
                self._cache.set(key, 0)
        self._pending.clear()

    def close(self) -> None:
        self.flush()
        self._cache.close()

    def __enter__(self) -> SeenSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
