"""The job directory: everything a crawl needs to stop and go on later.

Layout::

    DIR/job.json      format version, settings, state, counters (this module)
    DIR/lock          held (flock) by the crawl running on it; its pid inside
    DIR/reserve       RESERVE bytes, freed when the disk is full to make room for job.json
    DIR/frontier/     the UrlQueueManager (state.json, segments, journal)
    DIR/seen/         the SeenSet (diskcache)
    DIR/parked-hosts.db  idle hosts' politeness out of memory (this run's only)
    DIR/pages.jsonl   the output, unless --out points elsewhere (appended to)
    DIR/stats.json    the last summary

``job.json`` is replaced atomically at every checkpoint.  A rerun with the
same directory resumes; settings that change what is crawled must match.
Only the master writes here; ``status`` only reads.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..__version__ import __version__
from ..errors import JobConflict, JobDamaged, UsageError
from ..frontier import LocalFrontier

__all__ = [
    "JOB_FORMAT",
    "SCOPE_SETTINGS",
    "JobConflict",
    "JobDir",
    "JobState",
    "Tally",
    "count_record",
    "recount",
    "write_atomically",
]

# 2: URLs canonical by the WHATWG URL Standard (the seen set holds their digests).
JOB_FORMAT = 3
JOB_FILE = "job.json"
RESERVE = 256 << 10  # bytes kept for the last job.json and stats.json of a full disk
# Settings that decide what gets crawled: a resume must not change them.
SCOPE_SETTINGS = (
    "seeds",
    "scope",
    "allow_domains",
    "deny_domains",
    "allow_private_networks",
    "max_depth",
    "robots",
    "max_pages_per_host",
    "crawl",
    "accept_regex",
    "reject_regex",
    "reject_ext",
    "max_path_repeats",
    "max_path_segments",
    "strip_query",
    "sort_query",
    "keep_session_ids",
)


@dataclass
class JobState:
    """What ``job.json`` holds besides the settings."""

    state: str = "new"  # new | running | interrupted | finished | failed
    pages: int = 0  # records (embed_records of them are embeds')
    embed_records: int = 0
    embeds: dict[str, int] = field(default_factory=dict)  # --page-requisites: see EMBED_OUTCOMES
    embed_kinds: dict[str, int] = field(default_factory=dict)  # requisites found, by kind
    pass_start_embeds: int = 0  # embed records before this pass
    elapsed_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    host_pages: dict[str, int] = field(default_factory=dict)
    links_dropped: dict[str, int] = field(default_factory=dict)
    duplicates: dict[str, int] = field(default_factory=dict)  # records that met their text
    worker_restarts: int = 0
    runs: int = 0
    run_starts: list[float] = field(default_factory=list)  # wall-clock start of each run
    message: str | None = None
    updated_at: float = 0.0
    crawl_id: str | None = None  # --redis: the shared crawl's id (a crawl lost in Redis shows)
    changes: dict[str, int] = field(default_factory=dict)  # this pass's records by change
    new_pages: int = -1  # records of a URL's first fetch (-1: all of them, an older job)
    bytes_saved: int = 0  # body bytes that 304 answers did not send
    revisits_kept: bool = False  # every page recorded since the first is in the revisit schedule
    passes: int = 1  # revisits: passes over the job (a finished job run again starts one)
    pass_start_pages: int = 0  # pages recorded before this pass (--max-pages counts a pass)
    pass_started_at: float = 0.0  # Unix time this pass began (a page fetched since is not due)
    paused: bool = False  # a control command paused the crawl (a resume starts paused)
    overrides: dict[str, float] = field(default_factory=dict)  # settings a control `set` changed
    added_seeds: dict[str, int] = field(default_factory=dict)  # `add-seeds`: URL -> priority
    excluded: list[str] = field(default_factory=list)  # `exclude`: the patterns, in order
    paused_hosts: list[str] = field(default_factory=list)  # `pause-host`: host names
    control_read: int = 0  # --redis: the crawl's control commands this node has read
    scheduled: int = 0  # URLs in the revisit schedule (revisits.db) at the last checkpoint
    fetched_nothing: bool = False  # no page of the job was answered: the next run retries its seeds
    job_id: str | None = None  # this job's id, made at its first run (a sink's rows say it)
    out_offset: int = 0  # the journal's size at the last checkpoint (what a kill cannot take)


def _same_kind(value: Any, default: Any) -> bool:
    """``value`` may stand where ``default`` (a JobState default) stands."""
    if default is None:  # message, crawl_id: a string or nothing
        return value is None or isinstance(value, str)
    if isinstance(default, bool) or isinstance(value, bool):
        return type(value) is type(default)
    if isinstance(default, (int, float)):
        return isinstance(value, int if isinstance(default, int) else (int, float))
    if isinstance(default, dict):
        return isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
            for k, v in value.items()
        )
    if isinstance(default, list):
        return isinstance(value, list) and all(isinstance(v, (int, float)) for v in value)
    return isinstance(value, type(default))


def _kind_name(default: Any) -> str:
    if default is None:
        return "a string or null"
    return {int: "an integer", float: "a number", dict: "an object of counts"}.get(
        type(default), f"a {type(default).__name__}"
    )


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` whole, or leave it as it was."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


class JobDir:
    """A job directory: its job.json, lock, state and the checks of its stores."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.file = self.path / JOB_FILE

    def exists(self) -> bool:
        return self.file.exists()

    def started(self) -> bool:
        """A crawl began here, even if its first job.json was never written
        (a disk already full): it holds a lock or a frontier."""
        return (self.path / "lock").exists() or (self.path / "frontier").is_dir()

    def lock(self) -> int:
        """Hold the job dir for this process until the returned descriptor
        is closed (or the process ends, however it ends).  A job dir held
        by another crawl is a usage error that names its process."""
        path = self.path / "lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise UsageError(
                f"job dir {self.path} is in use by another crawl (pid {holder}); "
                "wait for it to end, or use another --job-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    def read(self) -> tuple[dict[str, Any], JobState]:
        """Settings and state; raises JobConflict if unreadable or of another format."""
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise JobConflict(f"cannot read {self.file}: {exc}") from None
        except ValueError as exc:
            raise JobDamaged(f"{self.file} is damaged: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise JobDamaged(f"{self.file} is damaged: a {type(data).__name__}, not an object")
        if data.get("format") != JOB_FORMAT:
            found = data.get("format")
            raise JobConflict(
                f"{self.path} was written by mpcrawler {data.get('mpcrawler', '?')} "
                f"in job format {found}; this is mpcrawler {__version__} (job format "
                f"{JOB_FORMAT}); use a new --job-dir"
            )
        job, settings = data.get("job", {}), data.get("settings", {})
        if not isinstance(job, dict) or not isinstance(settings, dict):
            raise JobDamaged(f"{self.file} is damaged: 'job' and 'settings' must be objects")
        defaults = JobState()
        for name, value in job.items():
            if name == "overrides":  # settings: numbers, not counts
                good = isinstance(value, dict) and all(
                    isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()
                )
            elif name in ("excluded", "paused_hosts"):  # patterns, host names
                good = isinstance(value, list) and all(isinstance(v, str) for v in value)
            else:
                good = name not in JobState.__dataclass_fields__ or _same_kind(
                    value, getattr(defaults, name)
                )
            if not good:
                raise JobDamaged(
                    f"{self.file} is damaged: job.{name} is {value!r}, "
                    f"not {_kind_name(getattr(defaults, name))}"
                )
        known = JobState.__dataclass_fields__
        return settings, JobState(**{k: v for k, v in job.items() if k in known})

    def reserve(self) -> None:
        """Keep RESERVE bytes on this disk for the end of a run that fills it."""
        path = self.path / "reserve"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.posix_fallocate(fd, 0, RESERVE)
            finally:
                os.close(fd)
        except OSError:  # already full: the run stops soon, with what room there is
            pass

    def free_reserve(self) -> None:
        with contextlib.suppress(OSError):
            (self.path / "reserve").unlink()

    def damage(
        self, state: JobState, out: Path | None = None, in_flight: int | None = None
    ) -> list[str]:
        """What is damaged here (see :mod:`mpcrawler.frontier.local.integrity`); reads
        only.  ``in_flight``: the requests the crawl had at once (workers x
        threads), the most a kill can leave recorded and not acked; by
        default as job.json's settings say."""
        from ..frontier.local import damage

        if in_flight is None:
            with contextlib.suppress(JobConflict, JobDamaged, TypeError, ValueError):
                settings = self.read()[0]
                in_flight = int(settings.get("workers", 0)) * int(settings.get("threads", 0))
        slack = 2 * (in_flight or 128) + 16  # two turns' results
        out = out or self.path / "pages.jsonl"
        distinct = state.new_pages if state.new_pages >= 0 else None
        scheduled = state.scheduled if state.revisits_kept else 0  # else built again
        return damage(self.path, state.pages, state.runs, out, slack, distinct, scheduled)

    def running_pid(self) -> int | None:
        """The pid of the crawl holding this job dir, if that process lives
        (read from the lock file; no lock is taken)."""
        try:
            pid = int((self.path / "lock").read_text().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def check_compatible(self, stored: dict[str, Any], settings: dict[str, Any]) -> None:
        """JobConflict unless ``settings`` crawl what ``stored`` did (a
        setting a job dir of an older version lacks had its default)."""
        defaults: dict[str, Any] | None = None
        for name in SCOPE_SETTINGS:
            old, new = stored.get(name), settings.get(name)
            if name not in stored:
                if defaults is None:
                    from ..settings import Settings

                    defaults = Settings(workers=1).to_dict()
                old = defaults.get(name)
            if isinstance(old, list) and isinstance(new, list):
                old, new = sorted(old), sorted(new)
            if old != new:
                raise JobConflict(
                    f"{self.path} holds a crawl with {name.replace('_', '-')}={old!r}, "
                    f"not {new!r}; use the same settings to resume, or a new --job-dir"
                )

    def write(self, settings: dict[str, Any], state: JobState) -> None:
        state.updated_at = time.time()
        data = {
            "format": JOB_FORMAT,
            "mpcrawler": __version__,
            "settings": settings,
            "job": state.__dict__,
        }
        write_atomically(self.file, json.dumps(data, indent=1))

    def status(self) -> dict[str, Any]:
        """A read-only view for ``mpcrawler status``; never writes."""
        if not self.exists():  # started, but its first job.json was never written
            running = self.running_pid() is not None
            return {
                "job_dir": str(self.path),
                "state": "running (no job.json yet)"
                if running
                else "stopped before its first checkpoint: job.json was never written (a full "
                "disk?); rerun the same command to resume",
                "pages": 0,
                **LocalFrontier.inspect(self.path),
            }
        settings, state = self.read()
        counts = LocalFrontier.inspect(self.path)
        shown = state.state
        reasons = self.damage(state, Path(settings["out"]) if settings.get("out") else None)
        if reasons:
            shown = "damaged: " + "; ".join(reasons)
        elif state.state == "running" and self.running_pid() is None:
            shown = "stopped: not running (killed?); rerun the same command to resume"
        elif state.state == "failed" and (state.message or "").startswith("out of disk space"):
            shown = "stopped: out of disk space; free some and rerun the same command"
        return {
            "job_dir": str(self.path),
            "state": shown,
            "pages": state.pages,
            "errors": sum(state.errors.values()),
            "errors_by_kind": state.errors,
            "queued": counts["queued"],
            "taken": counts["taken"],
            "runs": state.runs,
            "last_activity": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(state.updated_at))
            if state.updated_at
            else None,
            "seeds": settings.get("seeds", []),
            "message": state.message,
            **revisit_status(self.path, settings, state),
            **control_status(self.path, state),
        }


def control_status(path: Path, state: JobState) -> dict[str, Any]:
    """What ``status`` says of control commands: paused, settings changed,
    the last answers."""
    from ..control.inbox import answers

    shown: dict[str, Any] = {}
    if state.paused:
        shown["paused"] = True
    if state.overrides:
        shown["settings_set"] = state.overrides
    if state.excluded:
        shown["excluded"] = state.excluded
    if state.paused_hosts:
        shown["paused_hosts"] = state.paused_hosts
    if last := answers(path, 5):
        shown["commands"] = [
            " ".join(
                [str(a.get("command")), *(f"{k}={v}" for k, v in (a.get("args") or {}).items())]
            )
            + f" -> {a.get('answer')}"
            for a in last
        ]
    return shown


def revisit_status(path: Path, settings: dict[str, Any], state: JobState) -> dict[str, Any]:
    """What ``status`` says of revisits: this pass's changes, the bytes 304s
    saved, the pages scheduled and when the next is due (local time)."""
    from ..frontier.local.revisits import RevisitStore

    shown: dict[str, Any] = {}
    if state.changes:
        shown["changes"] = state.changes
        shown["bytes_saved"] = state.bytes_saved
    schedule = RevisitStore.inspect(path)
    if not schedule:
        return shown
    shown["scheduled"] = schedule["scheduled"]
    first, after = schedule["next_due"], settings.get("revisit_after")
    lag = 0.0 if settings.get("continuous") else after
    if first is not None and isinstance(lag, (int, float)):
        when = time.localtime(float(first) + lag)
        shown["next_due"] = time.strftime("%Y-%m-%d %H:%M:%S %Z", when)
    return shown


@dataclass
class Tally:
    """The counters that the records themselves give."""

    pages: int = 0
    embed_records: int = 0
    embeds: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    changes: Counter[str] = field(default_factory=Counter)
    bytes_saved: int = 0
    new_pages: int = 0
    duplicates: Counter[str] = field(default_factory=Counter)  # see DUPLICATE_FIELDS


# A record that met its text before says so: stats.json's ``duplicates``
# counts them by kind.
DUPLICATE_FIELDS = {
    "duplicate_of": "exact",
    "near_duplicate_of": "near",
    "soft_404": "soft_404",
}


def count_duplicate(record: dict[str, Any], duplicates: Counter[str]) -> None:
    for name, kind in DUPLICATE_FIELDS.items():
        if record.get(name):
            duplicates[kind] += 1


# What became of embeds (stats.json's ``embeds``): requisites found on the
# pages, queued, and by their records fetched, failed or refused (robots.txt);
# skipped past --max-embed-hops or --max-embeds.
EMBED_OUTCOMES = ("fetched", "failed", "refused")


def embed_outcome(record: dict[str, Any]) -> str:
    """Which of EMBED_OUTCOMES an embed's record is."""
    if not record.get("error"):
        return "fetched"
    return "refused" if record.get("error_kind") == "robots" else "failed"


def count_record(
    record: dict[str, Any],
    statuses: Counter[str],
    errors: Counter[str],
    changes: Counter[str] | None = None,
) -> int:
    """Count one record's status by its text (``none`` if it has none), its
    error by its ``error_kind`` (``other`` if that is not a name) and its
    ``change``; returns the body bytes it saved (a 304)."""
    status = record.get("status")
    statuses["none" if status is None else str(status)] += 1
    if record.get("error"):
        kind = record.get("error_kind")
        errors[kind if isinstance(kind, str) and kind else "other"] += 1
    change = record.get("change")
    if changes is not None and isinstance(change, str):
        changes[change] += 1
    saved = record.get("bytes_saved")
    return saved if isinstance(saved, int) else 0


def recount(records: Iterable[dict[str, Any]], pass_start: int = 0) -> Tally:
    """Count records (after an unclean stop, job.json lags the output); the
    changes and bytes saved are those of the pass that starts at record
    number ``pass_start``."""
    tally = Tally()
    ignored: Counter[str] = Counter()
    for n, record in enumerate(records):
        tally.pages += 1
        if record.get("kind") == "embed":
            tally.embed_records += 1
            tally.embeds[embed_outcome(record)] += 1
        tally.new_pages += record.get("change", "new") == "new"
        count_duplicate(record, tally.duplicates)
        changes = tally.changes if n >= pass_start else ignored
        saved = count_record(record, tally.statuses, tally.errors, changes)
        tally.bytes_saved += saved if n >= pass_start else 0
    return tally
