"""A Parquet dataset: ``--out PATH.parquet`` or ``--out parquet:DIR``.

The dataset is a directory of part files, ``part-<offset>.parquet``, each
named by the journal offset of its first record, so one written again
after a kill has the same name.  A part is written as ``.tmp`` in row
groups of ROW_GROUP records, zstd-compressed, then closed and renamed into
place once it holds ``--sink-batch`` records (or at the end): a reader
never sees half of one.  Then the cursor moves past it (:mod:`.base`);
after a kill, parts past the cursor and ``.tmp`` files are removed and
rewritten from the journal.  Every part has the schema of
:mod:`.columns`, so ``pyarrow.dataset``, pandas and DuckDB read the
directory as one table, without options.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .base import Sink, file_identity
from .columns import COLUMNS, FETCHED_AT, split

__all__ = ["ROW_GROUP", "SCHEMA", "ParquetSink"]

ROW_GROUP = 2_000  # records a row group at most: what is held in memory
_TYPES = {
    "str": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "timestamp": pa.timestamp("ms", tz="UTC"),
}
SCHEMA = pa.schema(
    [pa.field(name, _TYPES[kind]) for name, kind in COLUMNS.items()]
    + [pa.field("extra", pa.string())],
    metadata={"mpcrawler": "records; extra: the JSON of a record's other fields"},
)


def part_name(offset: int) -> str:
    return f"part-{offset:016d}.parquet"


class ParquetSink(Sink):
    """Records as a directory of Parquet parts."""

    kind = "parquet"

    def __init__(self, spec: str, state_dir: Path, batch: int) -> None:
        where = spec[len("parquet:") :] if spec.lower().startswith("parquet:") else spec
        super().__init__(spec, state_dir, file_identity(where))
        self.dir = Path(where)
        self.batch = batch
        self.rows: list[list[Any]] = [[] for _ in range(len(SCHEMA))]
        self.held = 0  # in ``rows``
        self.in_part = 0  # records in the open part (written or held)
        self.part_start = 0
        self.writer: pq.ParquetWriter | None = None

    def restore(self, cursor: dict[str, Any]) -> None:
        """Remove the parts that start at or past the cursor, and .tmp files."""
        self.dir.mkdir(parents=True, exist_ok=True)
        start = cursor.get("offset", 0)
        for path in self.dir.iterdir():
            if path.name.endswith(".parquet.tmp"):
                path.unlink()
            elif path.name.startswith("part-") and path.name.endswith(".parquet"):
                try:
                    first = int(path.name[5:-8])
                except ValueError:
                    continue
                if first >= start:
                    path.unlink()

    def take(self, record: dict[str, Any], line: bytes, end: int) -> None:
        if self.in_part == 0:
            self.part_start = end - len(line)
        values, extra = split(record)
        for column, value in zip(self.rows, [*values, extra], strict=True):
            column.append(value)
        if (fetched := self.rows[FETCHED_AT][-1]) is not None:
            self.rows[FETCHED_AT][-1] = int(fetched * 1000)  # (milliseconds)
        self.held += 1
        self.in_part += 1
        if self.held >= ROW_GROUP:
            self._write_group()

    def _take(self, record: dict[str, Any], line: bytes, end: int) -> None:
        """A part is delivered as soon as it is full, replayed or not (a
        failure while crawling waits for the checkpoint: Sink.process)."""
        super()._take(record, line, end)
        if self.in_part >= self.batch:
            Sink.flush(self)

    def _tmp(self) -> Path:
        return self.dir / (part_name(self.part_start) + ".tmp")

    def _write_group(self) -> None:
        if not self.held:
            return
        arrays = [
            pa.array(column, type=field.type)
            for column, field in zip(self.rows, SCHEMA, strict=True)
        ]
        table = pa.Table.from_arrays(arrays, schema=SCHEMA)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self._tmp(), SCHEMA, compression="zstd")
        self.writer.write_table(table)
        self.rows = [[] for _ in range(len(SCHEMA))]
        self.held = 0

    def flush(self) -> None:
        """A part is delivered once it is full (``--sink-batch``) or at the
        end, not at every checkpoint: parts stay large."""
        if self.in_part >= self.batch or self.failure is not None:
            super().flush()

    def deliver(self) -> dict[str, Any] | None:
        if not self.in_part:
            return None
        self._write_group()
        assert self.writer is not None
        self.writer.close()
        self.writer = None
        tmp, final = self._tmp(), self.dir / part_name(self.part_start)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, final)
        self.in_part = 0
        if self.on_file is not None:
            self.on_file(final, f"{self.dir.name}/{final.name}")
        return {}

    def close(self) -> None:
        try:
            Sink.flush(self)  # the last part, however small
        finally:
            self.closed = True
            self.release()

    def files(self) -> list[tuple[Path, str]]:
        """The dataset's complete parts."""
        if not self.dir.is_dir():
            return []
        return [
            (path, f"{self.dir.name}/{path.name}")
            for path in sorted(self.dir.iterdir())
            if path.name.startswith("part-") and path.name.endswith(".parquet")
        ]

    def release(self) -> None:
        if self.writer is not None:  # a failure left it open: the .tmp goes next run
            self.writer.close()
            self.writer = None
