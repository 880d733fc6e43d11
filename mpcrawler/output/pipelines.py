"""Pipelines: where finished page records go.

Pipelines run in the master, one after another, for every record: user
pipelines first (each may change the record, or drop it by returning None),
then the JSON Lines writer, which is the one writer of the output file, so
lines never interleave.  ``flush()`` is called at every checkpoint, before
the frontier is checkpointed, so a record acked in the frontier is on disk.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from ..modules import Module, load_object
from ..settings import Settings
from ..testing import faults

__all__ = ["JsonLinesPipeline", "Pipeline", "Pipelines"]

log = logging.getLogger(__name__)


class Pipeline(Module):
    """Interface: ``process(record) -> record | None``; ``open``, ``flush``,
    ``close`` are optional hooks."""

    type_letter = "P"

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__()
        self.settings = settings

    def open(self) -> None:
        """Called once in the master before the first record."""

    def process(self, record: dict[str, Any]) -> dict[str, Any] | None:
        return record

    def flush(self) -> None:
        """Make everything processed so far durable."""

    def close(self) -> None:
        self.flush()


class JsonLinesPipeline(Pipeline):
    """Appends one JSON object a line to ``path``; never truncates.  It is
    the job's journal: ``offset`` is the file's size after the last line
    (a record's place, for the sinks' cursors) and ``last_line`` that line."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = Path(path)
        self._file: IO[bytes] | None = None
        self.written = 0
        self.offset = 0
        self.last_line = b""

    def open(self) -> None:
        """Open for appending, unbuffered: each record reaches the OS in one
        write as it is written.  A torn last line (the disk filled up, the
        process was killed mid-write) is cut off first; that page is fetched
        again."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()
        self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115
        try:
            self.offset = self._file.seek(0, os.SEEK_END)
        except OSError:  # a pipe or a device: no place to name
            self.offset = 0

    def _drop_torn_tail(self) -> None:
        try:
            with open(self.path, "rb+") as f:
                size = f.seek(0, os.SEEK_END)
                if size == 0:
                    return
                f.seek(size - 1)
                if f.read(1) == b"\n":
                    return
                pos = size
                while pos > 0:
                    step = min(65536, pos)
                    f.seek(pos - step)
                    block = f.read(step)
                    newline = block.rfind(b"\n")
                    if newline >= 0:
                        f.truncate(pos - step + newline + 1)
                        return
                    pos -= step
                f.truncate(0)
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.ESPIPE:  # a pipe or a device: nothing to mend
                raise

    def lines_from(self, offset: int) -> Iterator[tuple[dict[str, Any], bytes, int]]:
        """The records past byte ``offset``, each with its line and the
        offset after it (a line that is not a JSON object is passed over)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(offset)
                for line in f:
                    offset += len(line)
                    if not line.endswith(b"\n"):
                        return  # a torn last line is not a record yet
                    try:
                        record = json.loads(line.decode("utf-8"))
                    except ValueError:
                        continue
                    if isinstance(record, dict):
                        yield record, line, offset
        except FileNotFoundError:
            return

    def records(self) -> Iterator[dict[str, Any]]:
        """Read back the JSON objects this file holds, skipping lines that are
        not one (not UTF-8, not JSON, or another JSON value)."""
        try:
            with open(self.path, "rb") as f:
                for line in f:
                    try:
                        record = json.loads(line.decode("utf-8"))
                    except ValueError:
                        continue
                    if isinstance(record, dict):
                        yield record
        except OSError:
            return

    def process(self, record: dict[str, Any]) -> dict[str, Any] | None:
        with self.track():
            assert self._file is not None, "open() first"
            line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
            view, done = memoryview(line), 0
            while done < len(line):  # one write, but for a pipe taking part of it
                done += self._file.write(view[done:]) or 0
            self.written += 1
            self.offset += len(line)
            self.last_line = line
            faults.reach("record-written")
            return record

    def flush(self) -> None:
        if self._file is not None:
            try:
                os.fsync(self._file.fileno())
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOTSUP):  # pipes, devices
                    raise

    def close(self) -> None:
        if self._file is not None:
            self.flush()
            self._file.close()
            self._file = None


class Bound(Protocol):
    """What the chain needs of a sink after the journal
    (:class:`mpcrawler.output.sinks.base.Sink`): a pipeline told the
    journal it follows (its cursor is a place in it), with a pipeline's hooks."""

    id: str

    def bind(self, journal: JsonLinesPipeline) -> None: ...

    def open(self) -> None: ...

    def process(self, record: dict[str, Any]) -> dict[str, Any] | None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    def summary(self) -> dict[str, Any]: ...


class Pipelines:
    """The chain a record goes through: the user pipelines made from
    ``specs`` (instances, classes or ``pkg.mod:Class`` paths, constructed
    with the settings), then the JSON Lines writer of ``out`` (the job's
    journal), then the ``--out`` sinks (:mod:`mpcrawler.output.sinks`)."""

    def __init__(
        self,
        specs: Sequence[Pipeline | type | str],
        settings: Settings,
        out: Path,
        sinks: Sequence[Bound] = (),
    ) -> None:
        self.output = JsonLinesPipeline(out)
        self.sinks = list(sinks)
        for sink in self.sinks:
            sink.bind(self.output)
        self.chain = [self._make(spec, settings) for spec in specs] + [self.output, *self.sinks]
        self._user = len(self.chain) - 1 - len(self.sinks)  # the first that must not fail

    @staticmethod
    def _make(spec: Pipeline | type | str, settings: Settings) -> Pipeline:
        if isinstance(spec, Pipeline):
            return spec
        cls = load_object(spec) if isinstance(spec, str) else spec
        pipeline: Pipeline = cls(settings)
        return pipeline

    def open(self) -> None:
        for pipeline in self.chain:
            pipeline.open()

    def emit(self, record: dict[str, Any]) -> None:
        """Through every pipeline: a user pipeline that fails adds its error
        to the record (kind ``pipeline``), which goes on; one that returns
        None drops it; the journal's own failure (a full disk) and a sink's are raised."""
        for k, pipeline in enumerate(self.chain):
            try:
                result = pipeline.process(record)
            except Exception as exc:
                if k >= self._user:  # the journal's or a sink's: the crawl stops
                    raise
                message = f"pipeline {pipeline.id}: {type(exc).__name__}: {exc}"
                log.warning("%s (%s)", message, record["url"])
                record["error"] = (record["error"] + "; " if record["error"] else "") + message
                record["error_kind"] = record["error_kind"] or "pipeline"
                continue
            if result is None:
                return  # dropped on purpose by a user pipeline
            record = result

    def flush(self) -> None:
        for pipeline in self.chain:
            pipeline.flush()

    def close_sinks(self) -> BaseException | None:
        """Deliver what each sink holds and close it (before the job's
        outcome is decided: a sink that cannot is a failure); the first
        failure, if any (every sink is closed)."""
        failure: BaseException | None = None
        for sink in self.sinks:
            try:
                sink.close()
            except Exception as exc:
                failure = failure or exc
        return failure

    def closers(self) -> list[Any]:
        """Each pipeline's ``close``, to call one by one (one failing does not
        keep the others open)."""
        return [pipeline.close for pipeline in self.chain]

    def summaries(self) -> list[dict[str, Any]]:
        return [pipeline.summary() for pipeline in self.chain]
