"""The CDXJ index of a crawl's WARC files (``--cdxj``): ``WARC_DIR/index.cdxj``.

A replay tool (pywb, ReplayWeb.page) finds a capture through a sorted CDXJ
index.  This one is, line for line, what the reference indexer writes for
the same files (``cdxj-indexer --sort``): its own code makes each line.

- A worker indexes each fetch it archives as it writes it
  (:func:`record_lines`, on the records' bytes: no second read of the file)
  and sends the lines with the result; it counts them per file and says the
  counts in its ``Bye``.
- The master (:class:`CdxjIndex`, the only writer of the index) merges the
  lines it got into the index at a checkpoint, never spending more than a
  tenth of the run's time on it, and at the end.  A file is *complete* once
  the index holds every one of its lines: its worker said Bye with as many
  lines as arrived.  Files that are not (a worker lost, a run killed: lines
  that never arrived, records whose result never came) are indexed whole,
  from the file, at the end of the run and when the next run opens the
  index (after :func:`mpcrawler.archive.warc.repair`), so a kill loses no
  capture from the index.  Lines indexed twice are one: the merge drops a
  line equal to the one before it, as the reference indexer's sort does.

``index.cdxj.json`` names the complete files; both files are replaced
atomically, the index first.
"""

from __future__ import annotations

import heapq
import io
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from cdxj_indexer.main import CDXJIndexer

from ..output.jobdir import write_atomically

__all__ = ["INDEX", "CdxjIndex", "file_lines", "record_lines"]

log = logging.getLogger(__name__)

INDEX = "index.cdxj"
STATE = "index.cdxj.json"
WARC_SUFFIX = ".warc.gz"
MERGE_SHARE = 0.1  # of the run's time, at most, spent merging at checkpoints


def _lines(source: io.BytesIO | str, filename: str) -> list[str]:
    out = io.StringIO()
    CDXJIndexer(out, [source], filename=filename).process_all()
    return out.getvalue().splitlines(keepends=True)


def record_lines(members: bytes, filename: str, offset: int) -> list[str]:
    """The index lines of whole records (gzip members) written to
    ``filename`` at ``offset``, as the reference indexer writes them."""
    lines = []
    for line in _lines(io.BytesIO(members), filename):
        key, stamp, fields = line.split(" ", 2)
        index = json.loads(fields)
        if "offset" in index:
            index["offset"] = str(int(index["offset"]) + offset)
        lines.append(f"{key} {stamp} {json.dumps(index)}\n")
    return lines


def file_lines(path: Path) -> list[str]:
    """The index lines of a whole WARC file."""
    return _lines(str(path), path.name)


def _merged(*runs: Iterable[str]) -> Iterator[str]:
    """Sorted runs merged, a line equal to the one before dropped."""
    last = None
    for line in heapq.merge(*runs):
        if line != last:
            yield line
        last = line


class CdxjIndex:
    """The index of the WARC files in ``directory``, kept by the master."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / INDEX
        self.state_path = self.directory / STATE
        self.pending: list[str] = []
        self.arrived: dict[str, int] = {}  # lines received this run, by file
        self.complete = self._read_state()
        self._merged_at = time.monotonic()
        self._merge_cost = 0.0
        self.index_incomplete()  # left by an earlier run (repaired before this)

    def _read_state(self) -> set[str]:
        try:
            names = json.loads(self.state_path.read_text(encoding="utf-8"))["complete"]
        except FileNotFoundError:
            return set()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning(
                "%s unreadable (%s): every WARC file is indexed again", self.state_path, exc
            )
            return set()
        if not self.path.exists():
            return set()  # the index went: so did what the state says of it
        return {n for n in names if isinstance(n, str)}

    def add(self, filename: str, lines: list[str]) -> None:
        """Lines a worker sent for records it wrote to ``filename``."""
        self.pending.extend(lines)
        self.arrived[filename] = self.arrived.get(filename, 0) + len(lines)

    def worker_done(self, counts: dict[str, int]) -> None:
        """A worker said Bye: ``counts`` are the lines it sent, by file; a
        file whose lines all arrived is complete (the next merge says so)."""
        for name, count in counts.items():
            if self.arrived.get(name, 0) == count:
                self.complete.add(name)

    def index_incomplete(self) -> int:
        """Index whole every WARC file that is not complete (no process may
        be writing one: before the workers start, or after they are gone),
        then merge; how many files."""
        todo = [
            p for p in sorted(self.directory.glob("*" + WARC_SUFFIX)) if p.name not in self.complete
        ]
        for path in todo:
            self.pending.extend(file_lines(path))
            self.complete.add(path.name)
        if todo or not self.path.exists():
            self.merge()
        return len(todo)

    def checkpoint(self) -> None:
        """Merge what arrived, unless merging would take more than
        MERGE_SHARE of the time since the last merge."""
        now = time.monotonic()
        if self.pending and now - self._merged_at >= self._merge_cost / MERGE_SHARE:
            self.merge()

    def merge(self) -> None:
        """Write the index with every line that arrived, and the state."""
        started = time.monotonic()
        new = sorted(self.pending)
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as out:
                if self.path.exists():
                    with open(self.path, encoding="utf-8") as old:
                        out.writelines(_merged(old, new))
                else:
                    out.writelines(_merged(new))
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)
        state = json.dumps({"complete": sorted(self.complete)}, indent=1) + "\n"
        write_atomically(self.state_path, state)
        self.pending = []
        self._merged_at = time.monotonic()
        self._merge_cost = self._merged_at - started

    def close(self) -> None:
        """The run's end (every worker gone): index whole the files whose
        lines did not all arrive, and merge the rest."""
        if not self.index_incomplete() and self.pending:
            self.merge()
