"""A sink's cursor, its catching up from the journal, and its one failure rule.

A :class:`Sink` is a pipeline after the job's journal.  It holds what it
was given until it delivers it (a Parquet part, a PostgreSQL transaction,
a compressed member), then saves its cursor: the journal's offset up to
which it now holds every record, and what it needs to undo a delivery the
cursor does not cover (a file's size).  The cursor is saved after the
delivery, so a kill between the two leaves the sink with records past its
cursor: ``restore()`` removes them (a file cut back, a part deleted) or
the sink's unique key ignores them (PostgreSQL); then ``open()`` hands the
sink the journal's lines past its cursor again.

Any failure to deliver (a database down, a bucket refusing, a full disk)
is a :class:`~mpcrawler.errors.SinkError`: the crawl stops, and the rerun
delivers what was held back.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import SinkError
from ...testing import faults
from ...web.redact import redact_url
from ..jobdir import write_atomically
from ..pipelines import JsonLinesPipeline, Pipeline

__all__ = ["CURSORS_DIR", "Sink", "file_identity", "one_line", "read_state"]

CURSORS_DIR = "sinks"  # in the job dir: a cursor file a sink


class Sink(Pipeline):
    """A sink of records after the journal, with a cursor in the job dir."""

    kind = "sink"

    def __init__(self, spec: str, state_dir: Path, identity: str | None = None) -> None:
        super().__init__()
        self.spec = spec  # as given, secrets and all: never printed
        self.name = redact_url(spec)
        key = identity or self.name
        digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]
        self.cursor_file = state_dir / CURSORS_DIR / f"{self.kind}-{digest}.json"
        self.journal: JsonLinesPipeline | None = None
        self.delivered = 0  # the journal's offset up to which the sink holds every record
        self.end = 0  # the offset after the last record given
        self.replaying = False  # open() gives the journal's lines past the cursor
        self.failure: SinkError | None = None  # raised at the next checkpoint
        self.closed = False
        # Told of each file the sink completes, with its name (--upload).
        self.on_file: Callable[[Path, str], None] | None = None

    # -- what a kind does ----------------------------------------------------
    def restore(self, cursor: dict[str, Any]) -> None:
        """Undo what was delivered past ``cursor`` (a kill before it was saved)."""

    def take(self, record: dict[str, Any], line: bytes, end: int) -> None:
        """Hold (or write) one record; ``line`` is its journal line, ``end``
        the journal's offset after it."""
        raise NotImplementedError

    def deliver(self) -> dict[str, Any] | None:
        """Make what was taken durable in the sink; what the cursor must keep
        besides the offset (None: nothing delivered, the cursor stays)."""
        raise NotImplementedError

    def release(self) -> None:
        """Let go of connections and files (after the last deliver)."""

    def files(self) -> list[tuple[Path, str]]:
        """The complete files the sink wrote (path, name to upload as)."""
        return []

    # -- the mechanism -------------------------------------------------------
    def bind(self, journal: JsonLinesPipeline) -> None:
        self.journal = journal

    def open(self) -> None:
        """Read the cursor, undo what is past it, and catch up from the
        journal (a sink new to the job gets every record so far)."""
        assert self.journal is not None, "bind() first"
        cursor = self._read_cursor()
        start = cursor.get("offset", 0)
        if start > self.journal.offset:
            raise SinkError(
                f"--out {self.name}: it holds the records up to byte {start} of "
                f"{self.journal.path}, which has only {self.journal.offset}: the journal was "
                f"cut or replaced; remove {self.cursor_file} to deliver every record again"
            )
        self.delivered = self.end = start
        self._guard(self.restore, cursor)
        self.cursor_file.parent.mkdir(parents=True, exist_ok=True)
        self.replaying = True  # what is taken now may be in the sink already
        for record, line, end in self.journal.lines_from(start):
            if end > self.journal.offset:
                break  # (a line written since open: given again by process())
            self._take(record, line, end)
        self.flush()
        self.replaying = False

    def process(self, record: dict[str, Any]) -> dict[str, Any] | None:
        """Take the record the journal just wrote.  A failure is kept for
        the next checkpoint (``flush``) to raise: the record's ack, which
        follows, is not lost to it."""
        with self.track():
            assert self.journal is not None
            if self.failure is None:
                try:
                    self._take(record, self.journal.last_line, self.journal.offset)
                except SinkError as exc:
                    self.failure = exc
            return record

    def _take(self, record: dict[str, Any], line: bytes, end: int) -> None:
        self._guard(self.take, record, line, end)
        self.end = end

    def flush(self) -> None:
        """At a checkpoint: deliver what is held and move the cursor (a
        closed sink has nothing more to deliver, a failed one says why)."""
        if self.closed:
            return
        if self.failure is not None:
            raise self.failure
        if self.end == self.delivered:
            return
        if self.journal is not None:
            self.journal.flush()  # the cursor never passes what the journal holds
        try:
            state = self._guard(self.deliver)
        except SinkError as exc:
            self.failure = exc  # said once: not tried again at the end
            raise
        if state is not None:
            faults.reach(f"{self.kind}-delivered")
            self.advance(state)
            faults.reach(f"{self.kind}-advanced")

    def advance(self, state: dict[str, Any]) -> None:
        """Save the cursor: everything taken is delivered; ``state`` is the
        kind's own part of it."""
        self.delivered = self.end
        cursor = {"sink": self.name, "offset": self.delivered, **state}
        self._guard(write_atomically, self.cursor_file, json.dumps(cursor))

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.closed = True
            self.release()

    def _read_cursor(self) -> dict[str, Any]:
        cursor = read_state(self.cursor_file, f"--out {self.name}: its cursor", "deliver")
        if cursor and not isinstance(cursor.get("offset"), int):
            raise SinkError(
                f"--out {self.name}: its cursor {self.cursor_file} is damaged; "
                "remove it to deliver every record again"
            )
        return cursor

    def _guard(self, step: Any, *args: Any) -> Any:
        """``step(*args)``, any failure of it a SinkError of one line."""
        try:
            return step(*args)
        except SinkError:
            raise
        except Exception as exc:
            raise SinkError(
                f"--out {self.name}: {one_line(exc)}; what it did not take is kept in the journal, "
                "and the same command delivers it"
            ) from exc

    def summary(self) -> dict[str, Any]:
        return {**super().summary(), "sink": self.name, "delivered": self.delivered}


def read_state(path: Path, what: str, verb: str) -> dict[str, Any]:
    """The JSON object a sink keeps in ``path`` ({} if there is none);
    a SinkError that says what to do if it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SinkError(
            f"{what} {path} cannot be read ({exc}); remove it to {verb} everything again"
        ) from None
    if not isinstance(data, dict):
        raise SinkError(f"{what} {path} is damaged; remove it to {verb} everything again")
    return data


def one_line(exc: BaseException) -> str:
    """What ``exc`` says, on one line and not too long."""
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def file_identity(path: str | os.PathLike[str]) -> str:
    """A file sink's identity for its cursor: its absolute path."""
    return str(Path(path).resolve())
