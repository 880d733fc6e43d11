"""BlockStore: hosts' URLs spilled to disk, as blocks of waiting files.

When memory is full of hosts that must wait, the queue moves their URLs out
(see :mod:`.queue`, ``_overflow``): each run of one host's lane becomes a
*block*, a byte range of a waiting file, described in memory by BLOCK
integers (file number, offset, end, records left, first seq), so a blocked
host's backlog costs five integers a run and never stands in front of
another host.  This store writes blocks, reads a block's head back, counts
what blocks hold and which files are still used (a file is garbage once
its last block is read).  The lanes that own the blocks are the queue's.

Blocks are small (a host blocked while the log is read past it gets one of
a URL or two at each spill) and read one at a time, so the store keeps the
waiting files it reads from open, up to OPEN_FILES of them, and reads with
``os.pread``: opening a file for every block was most of a block's cost.
"""

from __future__ import annotations

import os
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..base import UrlInfo
from .files import QueueFiles, waiting_name
from .journal import BLOCK
from .storage import HEADER, ITEM, encode_item, log, read_items_at, read_one_at

__all__ = ["OPEN_FILES", "BlockStore", "urls_in"]

OPEN_FILES = 64  # waiting files kept open for reading, the last used ones


def urls_in(blocks: array[int]) -> int:
    """The URLs a lane's ``blocks`` hold (tombstones included)."""
    return sum(blocks[3::BLOCK])


def _record_size(item: UrlInfo) -> int:
    return HEADER.size + ITEM.size + len((item.lastmod or "").encode()) + len(item.url.encode())


class BlockStore:
    """The blocks of every lane: their files, and counts."""

    def __init__(self, files: QueueFiles) -> None:
        self.files = files
        self.count = 0  # URLs in blocks
        self.refs: dict[int, int] = {}  # waiting file number -> live blocks
        self.max: tuple[int, int] | None = None  # no block item sorts after this
        self._open: OrderedDict[int, int] = OrderedDict()  # file number -> descriptor

    def write(self, parts: Sequence[Sequence[UrlInfo]]) -> list[array[int]]:
        """Each of ``parts`` (sorted runs) as one block, all in one new waiting file."""
        name = self.files.new_name("waiting")
        number = self.files.number
        data = bytearray()
        blocks = []
        for part in parts:
            start = len(data)
            for item in part:
                data += encode_item(item)
            blocks.append(array("q", (number, start, len(data), len(part), part[0].seq)))
            last = (-part[-1].priority, part[-1].seq)
            if self.max is None or last > self.max:
                self.max = last
            self.count += len(part)
        self.files.write(name, bytes(data))
        self.refs[number] = len(blocks)
        return blocks

    def read_head(self, blocks: array[int], want: int) -> tuple[list[UrlInfo], int]:
        """Up to ``want`` URLs from the head of the first of ``blocks``,
        which is updated in place (and removed once read to its end); and
        how many URLs the block lost (a damaged file)."""
        number, offset, end, count, _ = blocks[:BLOCK]
        name = waiting_name(number)
        fd = self._descriptor(number, name)
        if fd is None:
            items, after = [], end
        elif count == 1:  # nothing to peek past
            items, after = read_one_at(fd, name, offset, end), end
        else:
            items, after = read_items_at(fd, name, offset, end, want + 1)
        if len(items) > want:  # one more was read to learn the next head
            peek = items.pop()
            after -= _record_size(peek)
            blocks[1], blocks[3], blocks[4] = after, count - len(items), peek.seq
            self.count -= len(items)
            return items, 0
        lost = count - len(items)
        if lost:
            log.warning("frontier: %s lost %d URLs", name, lost)
        self.count -= count
        del blocks[:BLOCK]
        self._unref(number)
        if self.count == 0:
            self.max = None
        return items, lost

    def load(self, runs: dict[str, list[Any]]) -> dict[str, list[tuple[int, array[int]]]]:
        """The blocks a checkpoint listed: by host, (priority, blocks) a lane."""
        lanes: dict[str, list[tuple[int, array[int]]]] = {}
        for key, flat_lanes in runs.items():
            for priority, flat in flat_lanes:
                blocks = array("q", map(int, flat))
                lanes.setdefault(key, []).append((int(priority), blocks))
                self.adopt(blocks)
        return lanes

    def adopt(self, blocks: array[int]) -> None:
        """Count ``blocks`` (a lane's, read back when opening) as this store's."""
        for number, count in zip(blocks[0::BLOCK], blocks[3::BLOCK], strict=True):
            self.refs[number] = self.refs.get(number, 0) + 1
            self.count += count

    def files_used(self) -> set[str]:
        return {waiting_name(number) for number in self.refs}

    def close(self) -> None:
        """Close the files kept open for reading."""
        while self._open:
            os.close(self._open.popitem()[1])

    def _descriptor(self, number: int, name: str) -> int | None:
        """The open waiting file ``number`` (None: it cannot be opened, logged)."""
        fd = self._open.get(number)
        if fd is not None:
            self._open.move_to_end(number)
            return fd
        try:
            fd = os.open(self.files.path(name), os.O_RDONLY)
        except OSError as exc:
            log.warning("frontier: cannot read %s (%s); its URLs are lost", name, exc)
            return None
        self._open[number] = fd
        if len(self._open) > OPEN_FILES:
            os.close(self._open.popitem(last=False)[1])
        return fd

    def _unref(self, number: int) -> None:
        left = self.refs.get(number, 1) - 1
        if left > 0:
            self.refs[number] = left
        else:
            self.refs.pop(number, None)
            self.files.garbage.append(waiting_name(number))
            fd = self._open.pop(number, None)
            if fd is not None:
                os.close(fd)
