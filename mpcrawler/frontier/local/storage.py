"""The frontier's on-disk records: framing, item encoding, append-only files.

Used by :mod:`mpcrawler.frontier.local.queue` only.  Every frontier file is a run
of *frames*: payload length, CRC32 of the payload, payload.  A torn or
corrupt frame is detected, logged and skipped.  Nothing here is pickle: items
are ``struct``-packed, state is JSON.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from pathlib import Path

from ...errors import FrontierError
from ..base import KINDS, UrlInfo

log = logging.getLogger("mpcrawler.frontier")

HEADER = struct.Struct("<II")  # payload length, crc32(payload)
ITEM = struct.Struct("<qqIBH")  # seq, priority, depth, kind, lastmod length; lastmod, url follow
MAX_RECORD = 1 << 20
_pack_item, _pack_header, _unpack_item = ITEM.pack, HEADER.pack, ITEM.unpack_from
_ITEM_SIZE, _HEADER_SIZE, _unpack_header = ITEM.size, HEADER.size, HEADER.unpack_from
crc32 = zlib.crc32
MAX_URL_BYTES = 1 << 16


def frame_payload(payload: bytes) -> bytes:
    """One record as written to every frontier file: length, CRC32, payload."""
    return HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def kind_code(kind: str) -> int:
    try:
        return KINDS.index(kind)
    except ValueError:
        raise ValueError(f"unknown URL kind {kind!r}; one of {', '.join(KINDS)}") from None


def encode_item(item: UrlInfo) -> bytes:
    """``item`` as one framed record."""
    url, depth, priority, seq, kind, lastmod = item[:6]
    if kind == "page" and lastmod is None:  # nearly every item
        payload = _pack_item(seq, priority, depth, 0, 0) + url.encode()
    else:
        extra = (lastmod or "").encode()
        payload = (
            _pack_item(seq, priority, depth, kind_code(kind), len(extra)) + extra + url.encode()
        )
    return _pack_header(len(payload), crc32(payload)) + payload


def decode_item(payload: bytes) -> UrlInfo:
    """The item in one payload.  Raises FrontierError if it holds none: its
    checksum matched, so that is a bug or tampering, not a torn write."""
    if len(payload) < ITEM.size:
        raise FrontierError(f"a {len(payload)}-byte record is too short to hold a URL")
    seq, priority, depth, kind, length = _unpack_item(payload)
    try:
        if not (kind or length):  # nearly every item
            return UrlInfo(payload[_ITEM_SIZE:].decode(), depth, priority, seq)
        if kind >= len(KINDS) or ITEM.size + length > len(payload):
            raise FrontierError("a record's kind or length is out of range")
        lastmod = payload[_ITEM_SIZE : _ITEM_SIZE + length].decode() or None
        url = payload[_ITEM_SIZE + length :].decode()
    except UnicodeDecodeError as exc:
        raise FrontierError(f"a record's URL is not UTF-8 ({exc.reason})") from None
    return UrlInfo(url, depth, priority, seq, KINDS[kind], lastmod)


def decode_items(payloads: list[bytes], name: str) -> list[UrlInfo]:
    """Decode ``payloads``, skipping (with a warning) any that hold no item."""
    try:
        return list(map(decode_item, payloads))
    except FrontierError:
        items = []
        for payload in payloads:
            try:
                items.append(decode_item(payload))
            except FrontierError as exc:
                log.warning("frontier: %s in %s; skipped", exc, name)
        return items


def split_frames(
    data: bytes, limit: int, name: str, quiet: bool = False
) -> tuple[list[bytes], int, bool]:
    """Split up to ``limit`` framed payloads off the front of ``data``.

    Returns the payloads, the bytes consumed, and whether a corrupt record was
    met (after which nothing more in this file can be trusted).  A record cut
    off by the end of ``data`` is left for the caller to read on.
    """
    payloads: list[bytes] = []
    pos, end = 0, len(data)
    header_size = HEADER.size
    while len(payloads) < limit and pos + header_size <= end:
        length, crc = HEADER.unpack_from(data, pos)
        start = pos + header_size
        if length > MAX_RECORD:
            if not quiet:
                log.warning("frontier: corrupt record length in %s at byte %d; skipped", name, pos)
            return payloads, pos, True
        if start + length > end:
            break
        payload = data[start : start + length]
        if zlib.crc32(payload) != crc:
            if not quiet:
                log.warning("frontier: checksum mismatch in %s at byte %d; skipped", name, pos)
            return payloads, pos, True
        payloads.append(payload)
        pos = start + length
    return payloads, pos, False


def read_frames(path: Path, name: str, quiet: bool = False) -> list[bytes]:
    """Every frame of a whole file (a missing or unreadable one: none, logged
    unless ``quiet``)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        if not quiet:
            log.warning("frontier: cannot read %s: %s", name, exc)
        return []
    payloads, used, corrupt = split_frames(data, 1 << 62, name, quiet)
    if not corrupt and used != len(data) and not quiet:
        log.warning("frontier: torn record at the end of %s; skipped", name)
    return payloads


def read_items(
    path: Path, name: str, offset: int, end: int, limit: int
) -> tuple[list[UrlInfo], int]:
    """Up to ``limit`` items from ``path`` between byte ``offset`` and ``end``:
    (the items, the offset after them).  A file that cannot be read, ends
    early or holds a corrupt record gives what it can and the offset
    ``end`` (the rest is lost, with a warning)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        log.warning("frontier: cannot read %s (%s); its URLs are lost", name, exc)
        return [], end
    with f:
        return read_items_at(f.fileno(), name, offset, end, limit)


def read_one_at(fd: int, name: str, offset: int, end: int) -> list[UrlInfo]:
    """The one item between byte ``offset`` and ``end`` of a file open for
    reading: the common block of a broad crawl, read without the general
    loop.  Anything unexpected goes the general way (which logs it)."""
    try:
        data = os.pread(fd, end - offset, offset)
    except OSError:
        data = b""
    if len(data) > _HEADER_SIZE:
        length, crc = _unpack_header(data)
        payload = data[_HEADER_SIZE:]
        if length == len(payload) and crc32(payload) == crc:
            try:
                return [decode_item(payload)]
            except FrontierError:
                pass
    return read_items_at(fd, name, offset, end, 1)[0]


def read_items_at(
    fd: int, name: str, offset: int, end: int, limit: int
) -> tuple[list[UrlInfo], int]:
    """``read_items`` from a file already open for reading (``os.pread``:
    the descriptor's own offset is not used)."""
    items: list[UrlInfo] = []
    chunk = max(1 << 16, min(limit * 128, 1 << 24))
    while len(items) < limit and offset < end:
        try:
            data = os.pread(fd, min(chunk, end - offset), offset)
        except OSError as exc:
            log.warning("frontier: cannot read %s (%s); the rest of it is lost", name, exc)
            return items, end
        payloads, used, corrupt = split_frames(data, limit - len(items), name)
        items.extend(decode_items(payloads, name))
        offset += used
        if corrupt or (not payloads and len(data) < chunk):
            if not corrupt:
                log.warning("frontier: %s ends early; the rest of it is lost", name)
            return items, end
        if not payloads:
            chunk *= 2  # one record longer than the chunk
    return items, offset


class AppendFile:
    """An append-only file with a buffer the queue controls (no hidden buffering)."""

    __slots__ = ("buffer", "fd", "size")

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.buffer = bytearray()
        self.size = 0  # bytes written or buffered

    def write(self, data: bytes) -> None:
        self.buffer += data
        self.size += len(data)
        if len(self.buffer) >= 1 << 16:
            self.sync()

    def sync(self) -> None:
        """Write the buffer out; what a failed write (a full disk) left
        unwritten stays in it, for the next sync."""
        buffer = self.buffer
        while buffer:
            del buffer[: os.write(self.fd, buffer)]

    def fsync(self) -> None:
        self.sync()
        os.fsync(self.fd)

    def close(self, *, discard: bool = False) -> None:
        if not discard:
            self.sync()
        os.close(self.fd)


def write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, fsync: bool) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if fsync:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if fsync:
        fsync_path(path.parent)
