"""A worker's documents (PDFs, with --extract): read off its parser's
thread, in a child process, each within a time limit (--pdf-timeout).

pypdf is pure Python: a 50,000-page PDF holds the thread that reads it for
many seconds, and a thread cannot be stopped.  So a worker reads its PDFs in
one child process of its own (``python -m mpcrawler.worker.documents``,
started at the first PDF), one at a time, from a thread of its own; its
parser goes on with the other pages meanwhile::

    parser (or the event loop) -- Documents.put --> queue (at most ``slots`` wait)
      -> the documents thread: Reader.read -- the body --> the child's stdin
                               <-- its answer (JSON) -- the child's stdout, until the limit
      -> finish(page, content or PdfError): the worker analyzes the page and reports it

A PDF past the limit is that page's error (``error_kind: pdf``, "reading
the PDF took longer than ..."), and its child is killed (the next PDF
starts another); so is a PDF that kills its reader (out of memory).  A
child that has grown past ``RETIRE_MB`` exits once it has answered.  When
the queue is full the parser waits, then the downloads, as for a browser.

Frames, both ways: an 8-byte big-endian length, then the body (to the child)
or its answer as JSON (from it); no pickle.  The child's first frame is an
empty one, once pypdf is imported: a PDF's time counts from there.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any, NamedTuple

from ..messages import PageResult
from ..modules import process_usage
from ..web.pdf import PdfContent, PdfError, read_pdf
from .downloader import Response

__all__ = ["RETIRE_MB", "STARTUP", "Documents", "Page", "Reader"]

RETIRE_MB = 256.0  # a child this big (RSS) after a document exits; the next starts afresh
STARTUP = 60.0  # s: the longest a child may take to be ready (a loaded machine's imports)
_FRAME = struct.Struct("!Q")
_READY = _FRAME.pack(0)  # the child's first frame: it is ready
_CHUNK = 1 << 20


class Page(NamedTuple):
    """A downloaded page whose document waits to be read."""

    result: PageResult
    response: Response
    depth: int


class Reader:
    """The child process that reads PDFs, one at a time, each within
    ``timeout`` seconds (see the module).  One thread uses it."""

    def __init__(self, timeout: float, retire_mb: float = RETIRE_MB) -> None:
        self.timeout, self.retire_mb = timeout, retire_mb
        self._child: subprocess.Popen[bytes] | None = None
        self.read_count = self.timeouts = self.deaths = self.starts = 0
        self.cpu = 0.0  # CPU seconds of the children, as they reported them
        self.max_rss_mb = 0.0

    @property
    def pid(self) -> int | None:
        """The child's process ID; None while none runs."""
        return self._child.pid if self._child is not None else None

    def read(self, body: bytes) -> PdfContent:
        """The PDF's content; PdfError if it cannot be read, takes longer
        than the limit, or its reader dies."""
        try:
            child = self._child if self._child is not None else self._start()
        except OSError as exc:  # no process to be had (the process table, memory)
            raise PdfError(f"the PDF reader could not start: {exc}") from None
        deadline = time.monotonic() + self.timeout
        self.read_count += 1
        try:
            assert child.stdin is not None
            child.stdin.write(_FRAME.pack(len(body)))
            child.stdin.write(body)
            child.stdin.flush()
            answer = self._answer(child, deadline)
        except TimeoutError:
            self.timeouts += 1
            self.close()
            raise PdfError(
                f"reading the PDF took longer than {self.timeout:g} s (--pdf-timeout)"
            ) from None
        except (OSError, EOFError):
            self.deaths += 1
            code = self.close()
            raise PdfError(f"the PDF reader died reading it ({_how(code)})") from None
        self.cpu += answer.get("cpu", 0.0)
        self.max_rss_mb = max(self.max_rss_mb, answer.get("max_rss_mb", 0.0))
        if answer.get("retire"):
            self.close()
        if "error" in answer:
            raise PdfError(answer["error"])
        return PdfContent(answer["text"], answer["pages"], answer["title"], answer["links"])

    def _start(self) -> subprocess.Popen[bytes]:
        """A new child, once it says it is ready (its imports done: its
        start is not counted in a PDF's time); OSError if it cannot start."""
        self.starts += 1
        child = self._child = subprocess.Popen(
            [sys.executable, "-m", __name__, str(self.retire_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        assert child.stdout is not None
        try:
            ready = _read(child.stdout.fileno(), _FRAME.size, time.monotonic() + STARTUP)
        except (TimeoutError, EOFError):
            code = self.close()
            raise OSError(f"it ended before it was ready ({_how(code)})") from None
        if ready != _READY:
            self.close()
            raise OSError("it said something else than that it was ready")
        return child

    def _answer(self, child: subprocess.Popen[bytes], deadline: float) -> dict[str, Any]:
        """The child's next answer, read by the ``deadline`` (TimeoutError)."""
        assert child.stdout is not None
        fd = child.stdout.fileno()
        (size,) = _FRAME.unpack(_read(fd, _FRAME.size, deadline))
        answer: dict[str, Any] = json.loads(_read(fd, size, deadline))
        return answer

    def close(self) -> int | None:
        """End the child, if one runs (its exit status)."""
        child, self._child = self._child, None
        if child is None:
            return None
        if child.poll() is None:
            child.kill()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        return child.wait()

    def summary(self) -> dict[str, Any]:
        return {
            "pdfs_read": self.read_count,
            "pdf_timeouts": self.timeouts,
            "pdf_reader_deaths": self.deaths,
            "pdf_readers_started": self.starts,
            "pdf_reader_cpu_s": round(self.cpu, 3),
            "pdf_reader_max_rss_mb": self.max_rss_mb,
        }


def _read(fd: int, size: int, deadline: float) -> bytes:
    """``size`` bytes from the pipe ``fd``, by the ``deadline``
    (TimeoutError; EOFError if the child ended first)."""
    parts: list[bytes] = []
    left = size
    while left:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            raise TimeoutError
        chunk = os.read(fd, min(left, _CHUNK))
        if not chunk:
            raise EOFError
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _how(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


class Documents:
    """The worker's documents thread and its queue (see the module):
    ``finish(page, content)`` is called in that thread for each page put,
    with the PDF's content or the PdfError that is the page's error."""

    def __init__(
        self,
        timeout: float,
        slots: int,
        finish: Callable[[Page, PdfContent | PdfError], None],
    ) -> None:
        self.reader = Reader(timeout)
        self.finish = finish
        self._queue: queue.Queue[Page | None] = queue.Queue(maxsize=slots)
        self._pending = 0  # put and not finished
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="documents", daemon=True)
        self._thread.start()

    @property
    def pending(self) -> int:
        """Pages put whose ``finish`` has not returned."""
        return self._pending

    def put(self, page: Page) -> None:
        """Read ``page``'s document in turn (waits while ``slots`` wait)."""
        with self._lock:
            self._pending += 1
        self._queue.put(page)

    def end(self) -> None:
        """No more pages: the thread ends once it has finished those put."""
        self._queue.put(None)

    def join(self) -> None:
        self._thread.join()

    def _run(self) -> None:
        try:
            while (page := self._queue.get()) is not None:
                try:
                    content: PdfContent | PdfError = self.reader.read(page.response.body)
                except PdfError as exc:
                    content = exc
                except Exception as exc:  # (a bug here is this page's error, never a hang)
                    self.reader.close()
                    content = PdfError(f"the PDF reader failed: {type(exc).__name__}: {exc}")
                try:
                    self.finish(page, content)
                finally:
                    with self._lock:
                        self._pending -= 1
        finally:
            self.reader.close()

    def summary(self) -> dict[str, Any]:
        return self.reader.summary()


# ------------------------------------------------------------------ the child
def _read_blocking(stream: IO[bytes], size: int) -> bytes | None:
    """``size`` bytes, or None at the end of the stream (the worker is gone)."""
    data = stream.read(size)
    return data if data is not None and len(data) == size else None


def serve(source: IO[bytes], sink: IO[bytes], retire_mb: float = RETIRE_MB) -> None:
    """The child: read each PDF that comes on ``source``, answer on ``sink``,
    until ``source`` ends or the child has grown past ``retire_mb``.  It
    says it is ready first, once pypdf is imported."""
    import pypdf  # noqa: F401 - imported before the first PDF's clock starts

    sink.write(_READY)
    sink.flush()
    spent = time.process_time()
    while (header := _read_blocking(source, _FRAME.size)) is not None:
        (size,) = _FRAME.unpack(header)
        body = _read_blocking(source, size)
        if body is None:
            return
        answer: dict[str, Any]
        try:
            content = read_pdf(body)
            answer = {
                "text": content.text,
                "pages": content.pages,
                "title": content.title,
                "links": content.links,
            }
        except PdfError as exc:
            answer = {"error": str(exc)}
        del body
        usage = process_usage()
        answer["cpu"], spent = time.process_time() - spent, time.process_time()
        answer["max_rss_mb"] = usage["max_rss_mb"]
        answer["retire"] = usage["rss_mb"] > retire_mb
        data = json.dumps(answer).encode("ascii")  # (a lone surrogate too, escaped)
        sink.write(_FRAME.pack(len(data)) + data)
        sink.flush()
        if answer["retire"]:
            return


def main() -> None:
    """Entry point of the child (its argument: the RSS in MB past which it
    retires): the master decides when the crawl stops, not a signal."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    serve(
        sys.stdin.buffer, sys.stdout.buffer, float(sys.argv[1]) if len(sys.argv) > 1 else RETIRE_MB
    )


if __name__ == "__main__":
    main()
