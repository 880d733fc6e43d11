"""Pipelines: where finished page records go.

Pipelines run in the master, one after another, for every record: user
pipelines first (each may change the record, or drop it by returning None),
then the JSON Lines writer, which is the one writer of the output file, so
lines never interleave.  ``flush()`` is called at every checkpoint, before
the frontier is checkpointed, so a record acked in the frontier is on disk.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from .modules import Module
from .settings import Settings

__all__ = ["JsonLinesPipeline", "Pipeline"]


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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def process(self, record: dict[str, Any]) -> dict[str, Any] | None:
        with self.track():
            assert self._file is not None, "open() first"
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self.written += 1
            return record

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self.flush()
            self._file.close()
            self._file = None
