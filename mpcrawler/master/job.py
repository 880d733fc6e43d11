"""A run of a job: its directory, lock, resume, checkpoints and last words.

``Job.open()`` takes the job dir (a temporary one without ``--job-dir``),
locks it for the run (one crawl per job dir), reads job.json and decides
how this run starts: a job that finished is not run again unless its page
budget was raised or it revisits (``--revisit-after``, ``--continuous``:
a new pass over the job begins), a damaged one is refused unless ``--repair`` mends it,
and one that stopped uncleanly has its records counted again.

Durability, in order: the JSON Lines output is line-buffered, so a record
is in the OS once written; the frontier's journal is synced to the OS every
turn of the loop (``Frontier.tick``); every ``checkpoint_interval`` seconds
``checkpoint()`` makes the pipelines durable, then the frontier (its queue,
then its seen set), and then replaces ``job.json``.  ``close()`` is the
shutdown order: the job's final state, a last checkpoint (after a full
disk, with the room the reserve gave back), ``stats.json``, then the
pipelines and the frontier closed, each failure logged and none skipping
the rest.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..control.inbox import Inbox
from ..control.steering import (
    Answer,
    CommandInbox,
    answer_waiting,
    apply_overrides,
    checked_overrides,
    deliver,
)
from ..errors import FrontierUnavailable, JobDamaged
from ..frontier import Frontier, LocalFrontier
from ..frontier.local import Repair
from ..output.jobdir import JobDir, JobState, write_atomically
from ..output.pipelines import Pipelines
from ..revisits.decisions import Revisits
from ..settings import Settings
from ..testing import faults
from ..web.patterns import compile_pattern
from .counters import Counters

__all__ = ["FINISHED_AT_BUDGET", "Job"]

log = logging.getLogger(__name__)

FINISHED_AT_BUDGET = "max-pages reached"


class Job:
    """One run of a crawl's job dir (or of a temporary one)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.temp_dir = None if settings.startup.job_dir else tempfile.mkdtemp(prefix="mpcrawler-")
        self.path = Path(settings.startup.job_dir) if settings.startup.job_dir else None
        self.state_dir = self.path or Path(self.temp_dir or ".")
        self.out = settings.output_path() or self.state_dir / "pages.jsonl"
        self.stats_path = (
            self.path / "stats.json" if self.path else self.out.with_name("stats.json")
        )
        self.dir = JobDir(self.state_dir)
        self.state = JobState()
        self.repaired: Repair | None = None
        self.unclean = False
        self.was_finished = False  # the job was finished when this run opened it
        self.waiting_applied: list[str] = []  # control commands applied at the start
        self.unanswered: list[tuple[CommandInbox, list[Answer]]] = []  # until a checkpoint
        self._lock: int | None = None
        self.stored: dict[str, Any] | None = None  # the settings job.json held

    def open(self, shared: bool) -> bool:
        """Lock the job dir and read its state; False if there is nothing to
        run (the job finished before).  Raises JobConflict, JobDamaged."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._lock = self.dir.lock()  # until close(): one crawl per job dir
        if self.path:
            self.dir.reserve()
        s = self.settings
        if self.path and self.dir.exists():
            stored, self.state = self.dir.read()
            self.stored = stored
            # commands sent while it was not running, answered after the first checkpoint
            inbox = Inbox(self.path)
            self.hold(inbox, answer_waiting(inbox, self.state))
            self.apply_overrides()  # a control `set`, kept for resumes
            self.dir.check_compatible(stored, s.to_dict())
            if self.state.state == "finished":
                if Revisits.from_settings(s).enabled:
                    self.new_pass()
                elif not shared and not self._budget_raised() and not s.limits.retry_failed:
                    self._answer_waiting(stored)  # for the run that takes it up again
                    return False
            if not shared and (reasons := self.dir.damage(self.state, self.out)):
                if not s.startup.repair:
                    raise JobDamaged(damage_message(self.path, reasons))
                self.repaired = self._repair(reasons)
        self.unclean = self.state.state == "running"
        self.state.job_id = self.state.job_id or uuid.uuid4().hex
        self.was_finished = self.state.state == "finished"  # (--retry-failed takes such a job)
        self.state.runs += 1
        self.state.run_starts.append(round(time.time(), 3))
        self.state.pass_started_at = self.state.pass_started_at or self.state.run_starts[0]
        self.state.state = "running"
        return True

    def ensure_id(self) -> str:
        """The job's id; one made now for a job of an older version (a
        finished one, whose sinks catch up) is saved at once."""
        if self.state.job_id is None:
            self.state.job_id = uuid.uuid4().hex
            if self.path and self.stored is not None:
                self.dir.write(self.stored, self.state)
        return self.state.job_id

    def forget_schedule(self) -> None:
        """The revisit schedule is about to be built from the records: the
        job says it keeps none until the next checkpoint counts it."""
        self.state.revisits_kept, self.state.scheduled = False, 0
        if self.path:
            self.dir.write(self.settings.to_dict(), self.state)

    def hold(self, inbox: CommandInbox, answers: list[Answer]) -> None:
        """Commands applied to the state at the start: answered once the
        state is durable (the first checkpoint)."""
        self.waiting_applied += [a.applied for a in answers]
        self.unanswered.append((inbox, answers))

    def _answer_waiting(self, stored: dict[str, Any]) -> None:
        """A job that does not run now: what the commands that waited
        changed is saved, then they are answered."""
        if any(a.applied for _, answers in self.unanswered for a in answers):
            self.dir.write(stored, self.state)
        for inbox, answers in self.unanswered:
            deliver(inbox, answers)
        self.unanswered.clear()

    def apply_overrides(self) -> None:
        """The settings ``control set`` left in the job, over the command
        line's; JobDamaged (exit 1) if one is not allowed, or if an
        ``exclude`` pattern cannot be matched in linear time (job.json edited,
        or written by an older version that did not check)."""
        for pattern in self.state.excluded:
            try:
                compile_pattern(pattern, "exclude")
            except ValueError as exc:
                raise JobDamaged(
                    f"{self.dir.file}: {exc}; remove it from excluded in job.json to go on"
                ) from None
        if problems := checked_overrides(self.state.overrides):
            raise JobDamaged(
                f"{self.dir.file}: the settings a control set left are not allowed: "
                + "; ".join(problems)
                + f"; send mpcrawler control {self.path} set NAME=VALUE with an allowed value "
                "(applied at the next start), or remove it from overrides in job.json"
            )
        apply_overrides(self.settings, self.state.overrides)

    def unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def new_pass(self) -> None:
        """A finished job run again to revisit: its changes and page budget
        count from here."""
        self.state.passes += 1
        self.state.pass_start_pages = self.state.pages
        self.state.pass_start_embeds = self.state.embed_records
        self.state.pass_started_at = time.time()
        self.state.changes, self.state.bytes_saved = {}, 0
        self.state.message = None

    def _budget_raised(self) -> bool:
        """A job that stopped at --max-pages goes on if the limit was raised."""
        limit = self.settings.limits.max_pages
        return self.state.message == FINISHED_AT_BUDGET and (
            limit is None or limit > self.pass_pages(self.state.pages - self.state.embed_records)
        )

    def pass_pages(self, page_records: int) -> int:
        """Of ``page_records`` (records of pages and sitemaps, not embeds),
        those of this pass: what --max-pages counts."""
        return page_records - (self.state.pass_start_pages - self.state.pass_start_embeds)

    def _repair(self, reasons: list[str]) -> Repair:
        """--repair: the damage, and what the repair did and lost, said on stderr."""
        from ..frontier.local import repair

        for reason in reasons:
            log.warning("repair: %s is damaged: %s", self.path, reason)
        assert self.path is not None
        s = self.settings
        repaired = repair(self.path, self.out, s.startup.cache_size, s.limits.max_depth)
        self.state.revisits_kept = False  # the schedule went aside: built again from the records
        self.state.scheduled = 0
        for line in repaired.report:
            log.warning("repair: %s", line)
        return repaired

    def stats_before(self) -> dict[str, Any]:
        """The stats of the run that finished the job."""
        try:
            stats: dict[str, Any] = json.loads(self.stats_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            stats = {"pages": self.state.pages, "errors": sum(self.state.errors.values())}
        return stats

    def checkpoint(
        self, pipelines: Pipelines, frontier: Frontier, counters: Counters, restarts: int
    ) -> None:
        """Make everything so far durable, in order (see the module's docstring)."""
        pipelines.flush()
        self.state.out_offset = pipelines.output.offset
        faults.reach("checkpoint")
        frontier.checkpoint()
        if isinstance(frontier, LocalFrontier):  # what the schedule holds now, on disk
            self.state.scheduled = frontier.schedule_rows()
        if self.path:
            self.dir.write(self.settings.to_dict(), self.snapshot(counters, restarts))
        while self.unanswered:  # the commands applied at the start are durable now
            inbox, answers = self.unanswered[0]
            try:
                deliver(inbox, answers)
            except FrontierUnavailable as exc:  # a shared crawl's Redis: the next checkpoint
                log.debug("control: %s", exc)
                return
            self.unanswered.pop(0)

    def snapshot(self, counters: Counters, restarts: int) -> JobState:
        """The job's state now, for job.json (``restarts``: of workers, this run)."""
        counters.save(self.state, restarts)
        return self.state

    def close(
        self,
        pipelines: Pipelines | None,
        frontier: Frontier | None,
        counters: Counters,
        *,
        restarts: int,
        outcome: str,
        message: str | None,
        disk_full: bool,
        stats: Callable[[], dict[str, Any]],
    ) -> dict[str, Any]:
        """The shutdown order (see the module's docstring); returns the stats.
        ``outcome``: finished, interrupted or failed; ``stats()`` builds them
        once the state is final."""
        self.state.state = outcome
        self.state.message = message
        # After a full disk what fails next is its echo: to the log file, not stderr.
        level = logging.INFO if disk_full else logging.ERROR
        if disk_full and self.path and frontier is not None:  # the reserve makes room
            self.dir.free_reserve()
            with contextlib.suppress(OSError):
                self.dir.write(self.settings.to_dict(), self.snapshot(counters, restarts))
        if pipelines is not None and frontier is not None:
            try:
                self.checkpoint(pipelines, frontier, counters, restarts)
            except Exception as exc:
                log.log(
                    level,
                    "the final checkpoint failed (%s); the job resumes from the previous one",
                    exc,
                )
        final: dict[str, Any] = stats()
        log.info(
            "crawl %s: %d pages, %d errors, %.1f pages/s",
            self.state.state,
            counters.pages,
            final["errors"],
            final["pages_per_s"],
        )
        try:
            self.stats_path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.stats_path, json.dumps(final, indent=2) + "\n")
        except OSError as exc:  # the last stats.json, if any, stays whole
            log.log(level, "cannot write %s: %s", self.stats_path, exc)
        closers = [
            *(pipelines.closers() if pipelines is not None else []),
            *([frontier.close] if frontier is not None else []),  # (an empty one is falsy)
        ]
        for closer in closers:
            try:
                closer()
            except Exception as exc:
                log.log(level, "while closing: %s", exc)
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        return final


def damage_message(path: Path, reasons: list[str]) -> str:
    """Why a damaged job dir is refused, and what to do."""
    more = f" (and {len(reasons) - 1} more: mpcrawler verify)" if reasons[1:] else ""
    return (
        f"{path} is damaged: {reasons[0]}{more}; resuming it as it is would lose or repeat "
        "pages: rerun with --repair to go on with what can be trusted (the records, what the "
        "queue still holds), or start a new --job-dir"
    )
