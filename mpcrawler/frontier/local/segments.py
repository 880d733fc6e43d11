"""SegmentLog: the queue's log, one run of segment files per priority.

A segment is an immutable run of records of one priority, sorted by seq.
*finding* segments take new URLs that sort after everything in memory
(appended, through one open writer per priority, at most _MAX_OPEN_WRITERS
open); *waiting* segments take what spills out of memory and go to the
front of their priority's run, so a URL that spills keeps its turn.  The
queue reads the log's head (highest priority, oldest first) back into
memory with ``read_head``.  The log owns its counts and writers; the queue
decides what goes in and when to read (see :mod:`.queue`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base import UrlInfo
from .files import QueueFiles
from .storage import AppendFile, encode_item, log, read_items

__all__ = ["Segment", "SegmentLog"]

_SEGMENT_RECORDS = 200_000  # a finding segment is sealed after this many records
_MAX_OPEN_WRITERS = 32


@dataclass
class Segment:
    """One immutable run of log records of one priority, sorted by seq."""

    name: str
    kind: str  # "waiting" or "finding"
    priority: int
    offset: int  # byte offset of the next unread record
    end: int  # bytes of valid data
    count: int  # records not yet read

    def to_json(self) -> list[Any]:
        return [self.name, self.kind, self.offset, self.end, self.count, self.priority]


class _Writer(AppendFile):
    """The open tail of a finding segment."""

    __slots__ = ("segment",)

    def __init__(self, path: Path, segment: Segment) -> None:
        super().__init__(path)
        self.segment = segment


class SegmentLog:
    """The segments of every priority, with their counts."""

    def __init__(self, files: QueueFiles) -> None:
        self.files = files
        self.runs: dict[int, deque[Segment]] = {}
        self.count = 0  # records not yet read
        self.waiting = 0  # of which in waiting segments
        self.top = -math.inf  # highest priority in the log
        self._writers: dict[int, _Writer] = {}

    def __bool__(self) -> bool:
        return bool(self.runs)

    def append(self, item: UrlInfo) -> None:
        """``item`` at the end of its priority's run (a finding segment)."""
        writer = self._writers.get(item.priority)
        if writer is None or writer.segment.count >= _SEGMENT_RECORDS:
            writer = self._open_writer(item.priority)
        record = encode_item(item)
        segment = writer.segment
        segment.end += len(record)
        segment.count += 1
        self.count += 1
        writer.write(record)  # counted first: a failed write keeps it buffered

    def push_front(self, priority: int, items: list[UrlInfo]) -> None:
        """``items`` (sorted) as a waiting segment at the front of ``priority``'s run."""
        name = self.files.new_name("waiting")
        data = b"".join(map(encode_item, items))
        self.files.write(name, data)
        segment = Segment(name, "waiting", priority, 0, len(data), len(items))
        self.runs.setdefault(priority, deque()).appendleft(segment)
        self.top = max(self.top, priority)
        self.count += len(items)
        self.waiting += len(items)

    def read_head(self, want: int) -> list[UrlInfo]:
        """Up to ``want`` records from the head segment (of the highest
        priority), which is dropped once read to its end."""
        priority = max(self.runs)
        segments = self.runs[priority]
        segment = segments[0]
        writer = self._writers.get(priority)
        if writer is not None and writer.segment is segment:
            writer.sync()
        items, after = read_items(
            self.files.path(segment.name), segment.name, segment.offset, segment.end, want
        )
        segment.offset = after
        read = len(items) if after < segment.end else segment.count
        if read > len(items):
            log.warning("frontier: %s lost %d URLs", segment.name, read - len(items))
        segment.count -= read
        self.count -= read
        if segment.kind == "waiting":
            self.waiting -= read
        if segment.count <= 0 or segment.offset >= segment.end:
            segments.popleft()
            if not segments:
                del self.runs[priority]
                self.top = max(self.runs, default=-math.inf)
            if writer is not None and writer.segment is segment:
                writer.close()
                del self._writers[priority]
            self.files.garbage.append(segment.name)
        return items

    def sync_writers(self) -> None:
        for writer in self._writers.values():
            writer.sync()

    def close(self, discard: bool) -> None:
        for writer in self._writers.values():
            writer.close(discard=discard)
        self._writers.clear()

    def to_json(self) -> list[list[Any]]:
        return [s.to_json() for segments in self.runs.values() for s in segments]

    def load(self, segments: list[list[Any]]) -> set[str]:
        """The segments a checkpoint listed; returns their file names."""
        names = set()
        for name, kind, offset, end, count, priority in segments:
            segment = Segment(name, kind, int(priority), int(offset), int(end), int(count))
            self.runs.setdefault(segment.priority, deque()).append(segment)
            self.count += segment.count
            if kind == "waiting":
                self.waiting += segment.count
            names.add(name)
        self.top = max(self.runs, default=-math.inf)
        return names

    def _open_writer(self, priority: int) -> _Writer:
        old = self._writers.pop(priority, None)
        if old is not None:
            old.close()
        if len(self._writers) >= _MAX_OPEN_WRITERS:
            victim = next(iter(self._writers))
            self._writers.pop(victim).close()
        name = self.files.new_name("finding")
        segment = Segment(name, "finding", priority, 0, 0, 0)
        self.runs.setdefault(priority, deque()).append(segment)
        self.top = max(self.top, priority)
        self.files.dirty.add(name)
        writer = self._writers[priority] = _Writer(self.files.path(name), segment)
        return writer
