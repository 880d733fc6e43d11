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
from typing import IO, Any

from ..modules import Module, load_object
from ..settings import Settings

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
    """Appends one JSON object a line to ``path``; never truncates."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = Path(path)
        self._file: IO[str] | None = None
        self.written = 0

    def open(self) -> None:
        """Open for appending, line-buffered: each record reaches the OS as it
        is written.  A torn last line (the disk filled up, the process was
        killed mid-write) is cut off first; that page is fetched again."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()
        self._file = open(self.path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115

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
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self.written += 1
            return record

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()
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


class Pipelines:
    """The chain a record goes through: the user pipelines made from
    ``specs`` (instances, classes or ``pkg.mod:Class`` paths, constructed
    with the settings), then the JSON Lines writer of ``out``."""

    def __init__(
        self, specs: Sequence[Pipeline | type | str], settings: Settings, out: Path
    ) -> None:
        self.output = JsonLinesPipeline(out)
        self.chain = [self._make(spec, settings) for spec in specs] + [self.output]

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
        None drops it; the output's own failure (a full disk) is raised."""
        for pipeline in self.chain:
            try:
                result = pipeline.process(record)
            except Exception as exc:
                if pipeline is self.output:
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

    def closers(self) -> list[Any]:
        """Each pipeline's ``close``, to call one by one (one failing does not
        keep the others open)."""
        return [pipeline.close for pipeline in self.chain]

    def summaries(self) -> list[dict[str, Any]]:
        return [pipeline.summary() for pipeline in self.chain]
