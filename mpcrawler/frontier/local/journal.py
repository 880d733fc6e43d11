"""The frontier's on-disk state format: ``state.json``'s version and the journal.

Used by :mod:`mpcrawler.frontier.local.queue`, which writes both (the
journal through ``JournalWriter``), and by the job
directory's ``status`` through :func:`inspect`, which reads them without
opening the queue.  The journal is a run of frames (:mod:`.storage`), each a
batch of operations: ``P`` a put (the item follows), ``G`` a lease, ``A`` an
ack, ``R`` a release (a seq follows each).
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import FrontierError
from ..base import KINDS, UrlInfo
from .storage import AppendFile, frame_payload, read_frames

__all__ = [
    "FORMAT_VERSION",
    "READ_VERSIONS",
    "STATE_FILE",
    "JournalWriter",
    "inspect",
    "parse_journal",
]

FORMAT_VERSION = 4  # 4: frozen hosts (cold-hosts.db, "cold" in state.json)
READ_VERSIONS = (3, 4)  # a format-3 frontier has no frozen hosts
STATE_FILE = "state.json"
# b"P", seq, priority, depth, url length, kind, lastmod length; lastmod and url follow
PUT_OP = struct.Struct("<cqqIIBH")
SEQ_OP = struct.Struct("<cq")  # b"G" lease, b"A" ack, b"R" release; seq
PUT, LEASE, ACK, RELEASE = b"P", b"G", b"A", b"R"
_pack_put, _pack_seq = PUT_OP.pack, SEQ_OP.pack
BLOCK = 5  # a block in state.json: waiting file number, offset, end, records, first seq


def parse_journal(payloads: list[bytes], name: str) -> Iterator[tuple[bytes, Any]]:
    """(op, UrlInfo for a put or seq otherwise) for each journaled operation."""
    for payload in payloads:
        pos, end = 0, len(payload)
        while pos < end:
            op = payload[pos : pos + 1]
            if op == PUT:
                _, seq, priority, depth, length, kind, lm_length = PUT_OP.unpack_from(payload, pos)
                pos += PUT_OP.size
                lastmod = payload[pos : pos + lm_length].decode("utf-8", "replace") or None
                pos += lm_length
                url = payload[pos : pos + length].decode("utf-8", "replace")
                pos += length
                if kind >= len(KINDS):
                    raise FrontierError(f"journal {name} holds an unknown URL kind {kind}")
                yield op, UrlInfo(url, depth, priority, seq, KINDS[kind], lastmod)
            elif op in (LEASE, ACK, RELEASE):
                yield op, SEQ_OP.unpack_from(payload, pos)[1]
                pos += SEQ_OP.size
            else:
                raise FrontierError(f"journal {name} holds an unknown operation {op!r}")


def inspect(directory: str | os.PathLike[str]) -> dict[str, int]:
    """Counts of a frontier as of its last sync, read without opening it.

    ``queued`` is what ``lease()`` could return; ``taken`` what was leased
    and not acked (it is queued again when the frontier is reopened).  Reads
    ``state.json`` and the journal; writes nothing.
    """
    root = Path(directory)
    try:
        state = json.loads((root / STATE_FILE).read_text("utf-8"))
        queued = sum(int(s[4]) for s in state.get("segments", []))
        for lanes in state.get("runs", {}).values():
            for lane in lanes:
                queued += sum(int(c) for c in lane[1][3::BLOCK])
        queued += int(state.get("cold", {}).get("urls", 0))  # frozen hosts' blocks
        counts = state.get("snapshot_counts", [0, 0, 0])
        queued += int(counts[0]) + int(counts[1]) - len(state.get("tombstones", []))
        taken = int(counts[2])
        journal = state.get("journal")
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return {"queued": 0, "taken": 0}
    if journal:
        try:
            for op, _ in parse_journal(read_frames(root / journal, journal, quiet=True), journal):
                if op == PUT:
                    queued += 1
                elif op == LEASE:
                    queued, taken = queued - 1, taken + 1
                elif op == ACK:
                    taken -= 1
                elif op == RELEASE:
                    queued, taken = queued + 1, taken - 1
        except (FrontierError, struct.error):
            pass
    return {"queued": queued, "taken": taken}


class JournalWriter:
    """The open journal: operations buffered, framed in batches of BATCH
    bytes (one frame survives a torn write or is dropped whole)."""

    BATCH = 1 << 16

    def __init__(self) -> None:
        self.file: AppendFile | None = None
        self.name: str | None = None
        self.ops = 0  # operations since the journal was started
        self.buf = bytearray()

    def put(self, seq: int, priority: int, depth: int, url: bytes, kind: int, extra: bytes) -> None:
        buf = self.buf
        buf += _pack_put(PUT, seq, priority, depth, len(url), kind, len(extra))
        if extra:
            buf += extra
        buf += url
        self.ops += 1
        if len(buf) >= self.BATCH:
            self.frame()

    def op(self, op: bytes, seq: int) -> None:
        """A lease, ack or release of ``seq``."""
        self.buf += _pack_seq(op, seq)
        self.ops += 1
        if len(self.buf) >= self.BATCH:
            self.frame()

    def frame(self) -> None:
        if not self.buf:
            return
        if self.file is None:
            raise FrontierError("the queue is closed")
        payload = frame_payload(bytes(self.buf))
        self.buf.clear()
        self.file.write(payload)  # kept in the file's buffer if the write fails

    def sync(self, fsync: bool = False) -> None:
        """To the OS (survives a kill); with ``fsync``, to the disk."""
        self.frame()
        if self.file is None:
            raise FrontierError("the queue is closed")
        if fsync:
            self.file.fsync()
        else:
            self.file.sync()

    def start(self, path: Path) -> None:
        """Go on in a new, empty journal at ``path`` (the old one is dropped:
        the checkpoint that names the new one holds everything)."""
        if self.file is not None:
            self.file.close(discard=True)
        self.file, self.name, self.ops = AppendFile(path), path.name, 0
        self.buf.clear()

    def close(self, discard: bool) -> None:
        if discard:
            self.buf.clear()
        if self.file is not None:
            self.file.close(discard=discard)
            self.file = None
