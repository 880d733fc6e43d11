"""Compressed JSON Lines: ``--out PATH.jsonl.gz`` and ``--out PATH.jsonl.zst``.

The journal's own lines, compressed: each delivery (a checkpoint, the
end) appends one gzip member or one zstd frame.  Concatenated members and
frames are one stream to every reader (``gzip -dc``, ``zstdcat``, Python's
``gzip``, pandas, DuckDB), and the file's size at each delivery is in the
cursor, so a member a kill cut short is cut off before the next run
appends (:mod:`.base`).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

from .base import Sink, file_identity

__all__ = ["CompressedJsonLines"]


class CompressedJsonLines(Sink):
    """The journal's lines, gzip- or zstd-compressed, one member a delivery."""

    kind = "jsonl-compressed"

    def __init__(self, spec: str, state_dir: Path) -> None:
        super().__init__(spec, state_dir, file_identity(spec))
        self.path = Path(spec)
        self.zstd = spec.lower().endswith(".zst")
        self.held: list[bytes] = []

    def restore(self, cursor: dict[str, Any]) -> None:
        """Cut the file back to its size at the cursor (a kill may have left
        a member, whole or torn, past it); a file the cursor does not know is
        another's, and is refused rather than appended to."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        size = cursor.get("size", 0)
        try:
            now = self.path.stat().st_size
        except FileNotFoundError:
            if size:
                raise ValueError(
                    f"it was {size} bytes and is gone; remove {self.cursor_file} "
                    "to write every record again"
                ) from None
            return
        if now < size:
            raise ValueError(
                f"it is {now} bytes, shorter than the {size} delivered; remove "
                f"{self.cursor_file} and the file to write every record again"
            )
        if now > size:
            os.truncate(self.path, size)

    def take(self, record: dict[str, Any], line: bytes, end: int) -> None:
        self.held.append(line)

    def deliver(self) -> dict[str, Any] | None:
        data = b"".join(self.held)
        if self.zstd:
            import zstandard

            packed = zstandard.ZstdCompressor(level=3).compress(data)
        else:
            packed = gzip.compress(data, compresslevel=3, mtime=0)  # a third of 6's CPU
        with open(self.path, "ab") as f:
            f.write(packed)
            f.flush()
            os.fsync(f.fileno())
            size = f.tell()
        self.held = []
        return {"size": size}

    def files(self) -> list[tuple[Path, str]]:
        return [(self.path, self.path.name)]
