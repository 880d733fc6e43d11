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
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..modules import Module
from ..settings import Settings

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
