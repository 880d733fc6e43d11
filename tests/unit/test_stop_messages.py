"""What the master says on a stop signal reaches stderr even when the signal
came in the middle of a write to stderr (a progress line, or the first
signal's own message when a second follows at once).

A handler runs between two bytecodes of whatever the main thread did; here
the raw stream under ``sys.stderr`` runs it during its write, the moment a
real signal may land.  A ``print`` to ``sys.stderr`` there fails with
``RuntimeError: reentrant call`` (the crawl exited 1, not 130: seen in a
full run of the suite, in test_batch's second-SIGINT test)."""

from __future__ import annotations

import io
import os
import signal
import sys
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import pytest

from mpcrawler import stopsignals
from mpcrawler.master.crawler import Crawler


class Interrupted(io.RawIOBase):
    """A file descriptor's raw stream that runs ``handler`` inside its first write."""

    def __init__(self, fd: int, handler: Callable[[], None]) -> None:
        self.fd = fd
        self.handler: Callable[[], None] | None = handler

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def write(self, data: bytes) -> int:  # type: ignore[override]
        handler, self.handler = self.handler, None
        if handler is not None:
            handler()
        return os.write(self.fd, data)


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    os.close(read)
    os.close(write)


def stderr_interrupted_by(
    handler: Callable[[], None], write: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.TextIOWrapper(io.BufferedWriter(Interrupted(write, handler)), line_buffering=True)
    monkeypatch.setattr(sys, "stderr", stream)
    print("12 pages 3.1/s", file=sys.stderr, flush=True)  # the handler runs in here
    stream.detach()


def test_a_second_signal_during_the_first_message_stops_at_once(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    read, write = pipe
    crawler = SimpleNamespace(settings=SimpleNamespace(startup=SimpleNamespace(grace=60.0)))
    stops: list[bool] = []
    engine = SimpleNamespace(request_stop=lambda: bool(stops.append(True)) or len(stops) > 1)

    def on_signal() -> None:
        Crawler._on_signal(crawler, engine, signal.SIGINT)  # type: ignore[arg-type]

    stderr_interrupted_by(lambda: (on_signal(), on_signal()), write, monkeypatch)
    said = os.read(read, 4096).decode()
    assert (
        said.index("SIGINT: finishing in-flight requests (up to 60 s")
        < said.index("mpcrawler: stopping now")
        < said.index("12 pages 3.1/s")
    )
    assert len(stops) == 2


def test_say_needs_no_descriptor_of_sys_stderr(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stderr replaced by one without a file descriptor: fd 2 gets it."""
    read, write = pipe
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    saved = os.dup(2)
    os.dup2(write, 2)
    try:
        stopsignals.say("mpcrawler: stopping now")
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    assert os.read(read, 4096) == b"mpcrawler: stopping now\n"
