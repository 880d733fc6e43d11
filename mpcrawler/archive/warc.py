"""WARC/1.1 output (``--warc DIR``): each worker process writes its own files.

Owned by one worker process, whose download threads share one ``WarcFiles``
(a lock around each fetch's records).  Bodies never reach the master, so the
archive is written where they are: a fetch becomes a ``request`` and a
``response`` record (HTTP status line and headers as received, the body as
sent, still content-coded), and once the page is parsed a ``metadata``
record with its outlinks.  Each record is its own gzip member, written and
handed to the OS before the result goes to the master, which puts
``warc_file`` and ``warc_offset`` (of the response record) into the page's
record: the output still comes before the frontier's ack.  warcio writes
the records and computes ``WARC-Payload-Digest`` and ``WARC-Block-Digest``
(sha1, base32).

A revisit of a page that did not change (see
:func:`mpcrawler.revisits.records.revisit_of`) is a
``revisit`` record instead of a ``response``: profile
``server-not-modified`` for a 304, ``identical-payload-digest`` for a 2xx
whose payload digest is the last capture's.  The latter's block is the HTTP
headers as received; a 304's has none, so that replay serves the original
capture's status, headers and body (pywb plays a 3xx revisit's own status
line as an empty redirect).  Both carry ``WARC-Refers-To-Target-URI``,
``WARC-Refers-To-Date`` and, where known, ``WARC-Refers-To`` (the original
capture's record id) and that capture's ``WARC-Payload-Digest``, so a
replay tool serves the original's body.  A body cut short (``--max-bytes``, a timeout, a dropped
connection) is archived as far as it came, with ``WARC-Truncated``.

Files start with a ``warcinfo`` record, rotate at ``--warc-size``, and are
named ``mpcrawler-TIMESTAMP-PID-SERIAL.warc.gz``: unique across workers and
runs, so a resumed job never appends to a file a killed process left.
:func:`repair` (run by the master before its workers start) cuts such a
file's torn last record off.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import socket
import threading
import time
import uuid
import zlib
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from ..__version__ import __version__
from ..revisits.records import PROFILES, Revisit
from ..worker.downloader import Exchange

__all__ = ["WarcFiles", "Written", "repair"]

log = logging.getLogger(__name__)

SUFFIX = ".warc.gz"
WARC_VERSION = "WARC/1.1"
GZIP_LEVEL = 6
# A body archived without transfer coding keeps the header under another name.
_HOP_BY_HOP = {"transfer-encoding"}


class Written(NamedTuple):
    """Where a fetch's main record went: file, offset, WARC-Record-ID,
    WARC-Date; and, with an index kept, the records' CDXJ lines."""

    file: str
    offset: int
    record_id: str
    date: str
    cdxj: list[str] = []


class WarcFiles:
    """The WARC files of one worker process."""

    def __init__(
        self, directory: str, max_size: int, settings: dict[str, Any], index: bool = False
    ) -> None:
        self.directory = Path(directory)
        self.index = index  # --cdxj: each fetch's records are indexed as written
        self.lines: dict[str, int] = {}  # CDXJ lines made, by file (every file opened)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_size = max_size
        self._settings = settings
        self._lock = threading.Lock()
        self._file: BinaryIO | None = None
        self._name = ""
        self._maker = WARCWriter(io.BytesIO(), gzip=False, warc_version=WARC_VERSION)
        self._serial = 0
        self._stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())

    def write_fetch(self, url: str, exchange: Exchange, revisit: Revisit | None = None) -> Written:
        """Write a fetch's response (or ``revisit``) and request records;
        where the first went.  Handed to the OS when this returns."""
        protocol, _, status = exchange.status_line.partition(" ")
        response_headers = StatusAndHeaders(
            status, _archived_headers(exchange.headers), protocol=protocol
        )
        response_id = _record_id()
        warc_headers = {"WARC-Record-ID": response_id}
        if revisit is not None:
            response = self._revisit_record(url, response_headers, warc_headers, revisit)
        else:
            if exchange.truncated:
                warc_headers["WARC-Truncated"] = exchange.truncated
            response = self._maker.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(exchange.body),
                http_headers=response_headers,
                warc_headers_dict=warc_headers,
            )
        date = response.rec_headers.get_header("WARC-Date")
        request = self._maker.create_warc_record(
            url,
            "request",
            payload=io.BytesIO(b""),
            http_headers=_request_headers(exchange.request),
            warc_headers_dict={"WARC-Concurrent-To": response_id},
        )
        members = _member(response) + _member(request)  # compressed outside the lock
        name, offset = self._append(members)
        if not self.index:
            return Written(name, offset, response_id, date)
        from .cdxj import record_lines

        lines = record_lines(members, name, offset)
        with self._lock:
            self.lines[name] = self.lines.get(name, 0) + len(lines)
        return Written(name, offset, response_id, date, lines)

    def _revisit_record(
        self,
        url: str,
        http_headers: StatusAndHeaders,
        warc_headers: dict[str, str],
        revisit: Revisit,
    ) -> Any:
        """A ``revisit`` record: no payload, and the HTTP headers as received
        (none for a 304: see below)."""
        warc_headers["WARC-Profile"] = PROFILES[revisit.profile]
        warc_headers["WARC-Refers-To-Target-URI"] = revisit.refers_to_uri
        warc_headers["WARC-Refers-To-Date"] = revisit.refers_to_date
        if revisit.refers_to:
            warc_headers["WARC-Refers-To"] = revisit.refers_to
        if revisit.digest:
            warc_headers["WARC-Payload-Digest"] = revisit.digest
        # warcio keeps the WARC-Payload-Digest given (the original's): a
        # revisit's block has no payload to digest.
        if revisit.profile == "server-not-modified":
            # No block: replay tools take a revisit's status line from its
            # block, and pywb plays any 3xx revisit as an empty redirect, so a
            # 304's headers here would replay as "304", not as the page.
            record = self._maker.create_warc_record(
                url, "revisit", payload=io.BytesIO(b""), warc_headers_dict=warc_headers
            )
        else:
            record = self._maker.create_warc_record(
                url, "revisit", http_headers=http_headers, warc_headers_dict=warc_headers
            )
        return record

    def write_outlinks(self, url: str, links: list[str]) -> None:
        """A ``metadata`` record listing the page's outlinks, one ``outlink:`` field each."""
        body = "".join(f"outlink: {link}\r\n" for link in links).encode("utf-8")
        self._write_about(url, "metadata", body, "application/warc-fields")

    def write_conversion(self, url: str, refers_to: str, text: str) -> None:
        """A ``conversion`` record of the page's main text (--extract), which
        refers to its ``response`` record ``refers_to``."""
        body = text.encode("utf-8")
        headers = {"WARC-Refers-To": refers_to}
        self._write_about(url, "conversion", body, "text/plain; charset=utf-8", headers)

    def _write_about(
        self,
        url: str,
        kind: str,
        body: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        """One record of ``kind`` about ``url`` (not an HTTP message)."""
        record = self._maker.create_warc_record(
            url,
            kind,
            payload=io.BytesIO(body),
            warc_content_type=content_type,
            warc_headers_dict=headers or {},
        )
        self._append(_member(record))

    def close(self) -> None:
        with self._lock:
            self._close_file()

    def _append(self, members: bytes) -> tuple[str, int]:
        """Append whole records to the current file; (its name, their offset)."""
        with self._lock:
            f = self._open()
            offset = f.tell()
            try:
                f.write(members)
                f.flush()
            except OSError:  # a torn record may be left: repair() cuts it on the next run
                with contextlib.suppress(OSError):
                    f.close()
                self._file = None
                raise
            name = self._name
            if f.tell() >= self.max_size:
                self._close_file()
        return name, offset

    def _open(self) -> BinaryIO:
        if self._file is None:
            self._serial += 1
            self._name = f"mpcrawler-{self._stamp}-{os.getpid()}-{self._serial:05d}{SUFFIX}"
            self.lines.setdefault(self._name, 0)
            self._file = open(self.directory / self._name, "ab")  # noqa: SIM115 - kept open
            info = {
                "software": f"mpcrawler/{__version__}",
                "hostname": socket.gethostname(),
                "format": "WARC File Format 1.1",
                "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
                "robots": "obey" if self._settings.get("robots", True) else "ignore",
                "http-header-user-agent": self._settings.get("user_agent", ""),
            }
            self._file.write(_member(self._maker.create_warcinfo_record(self._name, info)))
        return self._file

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file = None


def _member(record: Any) -> bytes:
    """One record as one gzip member, at zlib's default level (as gzip and wget
    compress; warcio's own writer uses level 9, about 1.5 times slower)."""
    buffer = io.BytesIO()
    WARCWriter(buffer, gzip=False, warc_version=WARC_VERSION).write_record(record)
    member = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return member.compress(buffer.getvalue()) + member.flush()


def _record_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"


def _request_headers(raw: bytes) -> StatusAndHeaders:
    text = raw.decode("latin-1")
    head, *lines = [line for line in text.split("\r\n") if line]
    headers = [tuple(line.split(": ", 1)) for line in lines if ": " in line]
    return StatusAndHeaders(head, headers, is_http_request=True)  # "GET /path HTTP/1.1"


def _archived_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers as received, except a transfer coding (the body is kept
    without it), renamed so that a reader does not undo it twice."""
    return [
        (f"X-Archive-Orig-{name}" if name.lower() in _HOP_BY_HOP else name, value)
        for name, value in headers
    ]


def repair(directory: str | os.PathLike[str]) -> list[tuple[str, int]]:
    """Cut the torn last record off every WARC file in ``directory``: keep
    each file up to the end of its last record that reads whole.  Returns
    (file name, bytes cut) for the files it cut."""
    cut: list[tuple[str, int]] = []
    root = Path(directory)
    if not root.is_dir():
        return cut
    for path in sorted(root.glob("*" + SUFFIX)):
        good = _readable_length(path)
        size = path.stat().st_size
        if good < size:
            with open(path, "r+b") as f:
                f.truncate(good)
            log.warning("warc: %s ended in a torn record; cut %d bytes", path.name, size - good)
            cut.append((path.name, size - good))
    return cut


def _readable_length(path: Path) -> int:
    """Bytes of ``path`` up to the end of its last whole gzip member (each
    record is one member, so its last whole record)."""
    good = fed = 0
    member = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            fed += len(chunk)
            while chunk:
                try:
                    member.decompress(chunk, 1 << 16)
                    while member.unconsumed_tail and not member.eof:
                        member.decompress(member.unconsumed_tail, 1 << 16)
                except zlib.error as exc:
                    log.debug("warc: %s stops reading at %d: %s", path.name, good, exc)
                    return good
                if not member.eof:
                    break
                chunk = member.unused_data
                good = fed - len(chunk)
                member = zlib.decompressobj(16 + zlib.MAX_WBITS)
    return good
