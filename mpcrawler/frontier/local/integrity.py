"""Is a job directory whole?  The checks behind ``verify``, ``status`` and a resume.

A crawl resumes from three stores that must agree: the frontier
(``frontier/state.json``, its files and its journal), the seen set
(``seen/cache.db``) and the records (``pages.jsonl``), with ``job.json``
counting what the last checkpoint saw.  A store that is gone or cut short
does not fail loudly by itself: the frontier starts empty, the seen set
forgets, a journal's replay stops at a bad frame, and the crawl "finishes"
having lost or repeated pages.  :func:`damage` reads all of them (writing
nothing) and says, one line each, what does not add up:

* ``frontier/state.json`` is missing, though a crawl ran in the directory;
* a file ``state.json`` names is missing;
* a journal frame is corrupt with more frames after it (a torn *last* frame
  is what a kill leaves, and is fine);
* the journal holds fewer acks than the pages recorded since the last
  checkpoint, by more than a kill can explain (it was emptied or cut);
* the seen set is missing, unreadable, or holds fewer URLs than the pages
  the last checkpoint counted (it flushed the seen set first, and every
  recorded page was seen before it was fetched), with the digests of its
  batch file (``seen/batch``) not yet moved into ``cache.db``;
* the per-host page counts (``host-pages.db``) are unreadable;
* a file the frontier's log or blocks read URLs from (``waiting-*.seg``,
  ``finding-*.seg``) is missing or shorter than the checkpoint reads it to;
* the frontier's snapshot (the URLs in memory at its last checkpoint)
  holds another number of URLs than ``state.json`` counts in it (it is
  written whole before ``state.json`` names it: it was cut or replaced);
* the frontier's frozen hosts (``frontier/cold-hosts.db``) are missing
  though the checkpoint counts URLs in them, unreadable, or list another
  number of URLs than it counts;
* the revisit schedule (``revisits.db``) is unreadable, or holds fewer URLs
  than the last checkpoint counted in it (it was emptied or cut: its rows
  are never deleted).  A schedule that is missing is not damage: the next
  run that revisits builds it again from the records.

Used by :mod:`mpcrawler.master.crawler` (a damaged job is refused, exit 1), by
``status`` (``damaged: ...``) and by ``verify``.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .cold import CHECKPOINT_ROWS, COLD_FILE, lane_blocks, lane_urls
from .files import waiting_name
from .hostcounts import FILE as COUNTS_FILE
from .journal import ACK, BLOCK, STATE_FILE, parse_journal
from .revisits import FILE as REVISITS_FILE
from .seen import BATCH_FILE as SEEN_BATCH_FILE
from .seen import DIGEST_SIZE
from .storage import HEADER, MAX_RECORD, split_frames

__all__ = [
    "damage",
    "frozen_damage",
    "journal_damage",
    "queue_files_damage",
    "snapshot_damage",
]

T = TypeVar("T")


def journal_damage(data: bytes, used: int, corrupt: bool) -> str | None:
    """Why the journal bytes ``data`` are damaged, or None, given what
    ``split_frames`` made of them (``used`` bytes read, ``corrupt``): a
    corrupt frame with more data after it than one torn frame can explain."""
    if not corrupt:
        return None
    length, _ = HEADER.unpack_from(data, used)
    frame_end = used + HEADER.size + (length if length <= MAX_RECORD else 0)
    if length <= MAX_RECORD and frame_end >= len(data):
        return None  # the last frame, torn by a kill
    return f"a corrupt frame at byte {used} with {len(data) - used} bytes after it"


def _count_lines(path: Path) -> int:
    count = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            count += chunk.count(b"\n")
    return count


def _seen_count(seen_dir: Path) -> int | str:
    """URLs in the seen set, or why it cannot be read: its rows, and the
    digests of a checkpoint's batch not yet all moved into them (some may
    be in both: at most that many more)."""
    db = seen_dir / "cache.db"
    if not db.exists():
        return f"{db} is missing"
    rows = _rows(db, "Cache")
    batch = seen_dir / SEEN_BATCH_FILE
    if isinstance(rows, int) and batch.exists():
        rows += batch.stat().st_size // DIGEST_SIZE
    return rows


def _rows(db: Path, table: str) -> int | str:
    """Rows of ``table`` in the SQLite file ``db``, or why it cannot be read."""
    return _read(db, f"SELECT COUNT(*) FROM {table}", {}, lambda rows: int(rows[0][0]))


def _read(db: Path, query: str, args: dict[str, Any], result: Callable[[list[Any]], T]) -> T | str:
    """``result`` of the rows ``query`` reads from the SQLite file ``db``, or
    why it cannot be read."""
    # With no write-ahead log beside it (a store closed cleanly) the file is
    # read as immutable: nothing is created or changed, not even -shm.
    wal = db.with_name(db.name + "-wal").exists()
    uri = f"file:{db}?mode=ro" if wal else f"file:{db}?mode=ro&immutable=1"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            return result(conn.execute(query, args).fetchall())
    except (sqlite3.Error, ValueError) as exc:
        return f"{db} is unreadable ({exc})"


def damage(
    job_dir: Path,
    pages: int,
    runs: int,
    out: Path,
    slack: int,
    distinct: int | None = None,
    scheduled: int = 0,
) -> list[str]:
    """What is damaged in ``job_dir`` (empty: nothing), for a job whose
    ``job.json`` counts ``pages`` records (``distinct`` of them the first of
    their URL: revisits repeat URLs), ``runs`` runs and ``scheduled`` URLs
    in its revisit schedule, with its records in ``out``.  ``slack``: the
    records a kill can leave written and not yet acked in the journal (the
    results of the master's last turn)."""
    if runs < 1:
        return []  # nothing was crawled here yet
    reasons: list[str] = []
    frontier = job_dir / "frontier"
    state = _state(frontier, reasons)
    journal = state.get("journal")
    acks = _journal_acks(frontier, journal, reasons)
    recorded = _count_lines(out) if out.exists() else 0
    since = recorded - pages  # records written after the last checkpoint
    if acks is not None and since - acks > slack:
        reasons.append(
            f"{frontier / str(journal)} holds {acks} acks, but {since} pages were recorded "
            "since the last checkpoint: it was emptied or cut short"
        )
    seen = _seen_count(job_dir / "seen")
    if isinstance(seen, str):
        reasons.append(f"the seen set: {seen}")
    # Flushed by then; each run ended by a kill may have left up to ``slack``
    # pages recorded and not acked, recorded again (as new) by the next run.
    elif seen + (runs - 1) * slack < (distinct := pages if distinct is None else distinct):
        reasons.append(
            f"the seen set holds {seen} URLs, fewer than the {distinct} pages recorded: "
            "it was removed or replaced"
        )
    frozen_why, frozen_rows = _frozen(frontier, state)
    if why := queue_files_damage(frontier, state, frozen_rows):
        reasons.append(why)
    if why := snapshot_damage(frontier, state):
        reasons.append(why)
    if frozen_why:
        reasons.append(frozen_why)
    counts = job_dir / COUNTS_FILE
    if counts.exists() and isinstance(why := _rows(counts, "host_pages"), str):
        reasons.append(f"the per-host page counts: {why}")
    if why := schedule_damage(job_dir / REVISITS_FILE, scheduled):
        reasons.append(why)
    return reasons


def _state(frontier: Path, reasons: list[str]) -> dict[str, Any]:
    """The frontier's ``state.json`` (empty if it cannot be read), and in
    ``reasons`` what is wrong with it and the files it names."""
    state_path = frontier / STATE_FILE
    try:
        state: dict[str, Any] = json.loads(state_path.read_text("utf-8"))
    except FileNotFoundError:
        reasons.append(f"{state_path} is missing (the queue of URLs still to fetch)")
        state = {}
    except (OSError, ValueError) as exc:
        reasons.append(f"{state_path} is unreadable ({exc})")
        state = {}
    for key in ("snapshot", "journal"):
        name = state.get(key)
        if isinstance(name, str) and not (frontier / name).exists():
            reasons.append(f"{frontier / name} is missing ({key} of the frontier)")
    return state


def _journal_acks(frontier: Path, journal: Any, reasons: list[str]) -> int | None:
    """The acks the frontier's journal holds (None: no journal, or one
    that cannot be read), and in ``reasons`` how it is damaged."""
    if not (isinstance(journal, str) and (frontier / journal).exists()):
        return None
    data = (frontier / journal).read_bytes()
    payloads, used, corrupt = split_frames(data, 1 << 62, journal, quiet=True)
    if why := journal_damage(data, used, corrupt):
        reasons.append(f"{frontier / journal} is damaged: {why}")
    try:
        return sum(1 for op, _ in parse_journal(payloads, journal) if op == ACK)
    except (ValueError, struct.error, UnicodeDecodeError):
        return None  # reported above


def schedule_damage(path: Path, scheduled: int) -> str | None:
    """Why the revisit schedule ``path`` does not hold the ``scheduled``
    URLs the last checkpoint counted in it, or None (a missing one is built
    again from the records)."""
    if not path.exists():
        return None
    rows = _rows(path, "revisits")
    if isinstance(rows, str):
        return f"the revisit schedule: {rows}"
    if rows < scheduled:
        return (
            f"the revisit schedule {path} holds {rows} URLs, fewer than the {scheduled} the "
            "last checkpoint counted: it was emptied or cut (--repair moves it aside; the "
            "next run that revisits builds it again from the records)"
        )
    return None


def queue_files_damage(
    frontier: Path, state: dict[str, Any], frozen: list[bytes] | None = None
) -> str | None:
    """Why the files the checkpoint ``state``'s log and blocks read URLs
    from are not all there, each at least as long as it is read to, or None.
    The blocks are those ``state.json`` lists and those of the frozen hosts'
    rows, ``frozen`` (default: read here; ``frozen_damage`` says if they
    cannot be).  Sizes only: a frontier of millions of URLs is checked at
    once; appended to after the checkpoint, a file only grows."""
    if frozen is None:
        frozen = _frozen(frontier, state)[1]
    needed: dict[str, int] = {}
    try:
        for name, _kind, _offset, end, _count, _priority in state.get("segments", []):
            needed[str(name)] = max(needed.get(str(name), 0), int(end))
        lanes = [flat for runs in state.get("runs", {}).values() for _, flat in runs]
        lanes += map(lane_blocks, frozen)
        for flat in lanes:
            for at in range(0, len(flat), BLOCK):
                name = waiting_name(int(flat[at]))
                needed[name] = max(needed.get(name, 0), int(flat[at + 2]))
    except (AttributeError, TypeError, ValueError, IndexError) as exc:
        return f"{frontier / STATE_FILE} lists the queue's files unreadably ({exc})"
    problems = []
    for name, end in sorted(needed.items()):
        try:
            size = (frontier / name).stat().st_size
        except OSError:
            problems.append(f"{frontier / name} is missing")
            continue
        if size < end:
            problems.append(f"{frontier / name} holds {size} bytes of the {end} the queue reads")
    if not problems:
        return None
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"the queue's files: {problems[0]}{more}; the URLs queued there cannot be read"


def snapshot_damage(frontier: Path, state: dict[str, Any]) -> str | None:
    """Why the frontier's snapshot does not hold the URLs its checkpoint
    ``state`` counts in it, or None (no snapshot named, or none there: a
    missing one is told apart)."""
    name, counts = state.get("snapshot"), state.get("snapshot_counts", [])
    if not isinstance(name, str) or not (frontier / name).exists():
        return None
    try:
        counted = sum(int(n) for n in counts)
    except (TypeError, ValueError):
        return f"{frontier / STATE_FILE} counts its snapshot unreadably ({counts!r})"
    try:
        data = (frontier / name).read_bytes()
    except OSError as exc:
        return f"{frontier / name} is unreadable ({exc})"
    payloads, used, corrupt = split_frames(data, 1 << 62, name, quiet=True)
    if len(payloads) != counted or corrupt or used != len(data):
        return (
            f"{frontier / name} holds {len(payloads)} whole URLs where the frontier's "
            f"checkpoint counted {counted} (it was cut, damaged or replaced)"
        )
    return None


def frozen_damage(frontier: Path, state: dict[str, Any]) -> str | None:
    """Why the frontier's frozen hosts (``cold-hosts.db``) do not hold what
    its checkpoint ``state`` counts there, or None."""
    return _frozen(frontier, state)[0]


def _frozen(frontier: Path, state: dict[str, Any]) -> tuple[str | None, list[bytes]]:
    """``frozen_damage``'s answer, and the frozen hosts' rows it read (each
    row's blocks, flat; none if they cannot be read), which
    ``queue_files_damage`` checks too: one read of the file for both."""
    cold = state.get("cold")
    try:
        gen, urls = (int(cold["gen"]), int(cold["urls"])) if isinstance(cold, dict) else (0, 0)
    except (KeyError, TypeError, ValueError):
        return f"{frontier / STATE_FILE} counts its frozen hosts unreadably ({cold!r})", []
    path = frontier / COLD_FILE
    if not path.exists():
        return (f"{path} is missing (it lists {urls} queued URLs)" if urls else None), []
    rows = _read(
        path,
        f"SELECT flat FROM blocks WHERE {CHECKPOINT_ROWS}",
        {"gen": gen},
        lambda rows: [flat for (flat,) in rows],
    )
    if isinstance(rows, str):
        return f"the frontier's frozen hosts: {rows}", []
    found = sum(map(lane_urls, rows))
    if found != urls:
        return (
            f"the frontier's frozen hosts: {path} lists {found} queued URLs where the "
            f"checkpoint counted {urls} (it was replaced or damaged)"
        ), rows
    return None, rows
