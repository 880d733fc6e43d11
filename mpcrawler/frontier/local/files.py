"""QueueFiles: the queue directory's files, their names and their lives.

Every file the queue writes is named ``KIND-NUMBER.EXT`` with one counter
(``new_name``); a file written since the last checkpoint is *dirty* until
``sync_dirty`` fsyncs it; a file no longer needed is *garbage* until
``sweep`` deletes it, after the checkpoint that stopped referencing it.
On opening, ``remove_unreferenced`` deletes what the checkpoint does not
name (a crash may leave such files behind).  Used by the queue, its log
(:mod:`.segments`) and its journal (:mod:`.journal`); no order of its own.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from .storage import fsync_path, write_file

__all__ = ["QueueFiles", "waiting_name"]

_FILE_NAME = re.compile(r"^(waiting|finding|snapshot|journal)-(\d+)\.(seg|log)$")


def waiting_name(number: int) -> str:
    return f"waiting-{number:08d}.seg"


class QueueFiles:
    """Names, dirty files and garbage in ``directory``."""

    def __init__(self, directory: Path, fsync: bool) -> None:
        self.directory = directory
        self.fsync = fsync
        self.number = 0  # of the last file named
        self.dirty: set[str] = set()
        self.garbage: list[str] = []

    def new_name(self, kind: str, ext: str = "seg") -> str:
        self.number += 1
        return f"{kind}-{self.number:08d}.{ext}"

    def path(self, name: str) -> Path:
        return self.directory / name

    def write(self, name: str, data: bytes) -> None:
        """A whole new file (synced to the OS; fsynced at the next checkpoint)."""
        write_file(self.directory / name, data)
        self.dirty.add(name)

    def sync_dirty(self) -> None:
        if self.fsync:
            for name in self.dirty.difference(self.garbage):
                fsync_path(self.directory / name)
        self.dirty.clear()

    def sweep(self) -> None:
        """Delete the garbage (once a checkpoint no longer references it)."""
        for name in self.garbage:
            with contextlib.suppress(FileNotFoundError):
                (self.directory / name).unlink()
        self.garbage.clear()

    def remove_unreferenced(self, referenced: set[str]) -> None:
        """Delete the queue's files not in ``referenced``, and temporary files;
        the name counter goes past every file seen."""
        for path in self.directory.iterdir():
            match = _FILE_NAME.match(path.name)
            if match:
                self.number = max(self.number, int(match.group(2)))
                if path.name not in referenced:
                    path.unlink()
            elif path.name.endswith(".tmp"):
                path.unlink()
