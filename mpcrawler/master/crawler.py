"""The master: owns the crawl state and runs the loop that drives the workers.

Data flow (the master is the only writer of crawl state)::

    Frontier --lease (hosts not blocked)--> Scheduler --dispatch--> WorkerPool --> workers
       ^  ^                                  |  ^ free slots                      |
       |  +--block(host, until)--------------+  +--------- Results <--------------+
       +-- admit links (dedup) --- Crawler._on_result (outcome.py decides) --> pipelines

Each frontier item becomes exactly one record: fetched, failed, refused by
robots.txt, or dropped after crashing workers.  Redirects and retries stay in
the master's memory until the chain ends; then ``_settle`` admits its links
(with those of every chain that ended in the frontier's ``batch_window``: one
call), writes its record and acks its item with its hops marked seen, in that
order.  The frontier is a LocalFrontier, or a RedisFrontier shared with the
other nodes of the crawl (``--redis``); then the crawl ends only when no node
holds a lease.  A shared frontier's node that was declared dead (paused past
its lease) no longer ``holds`` what it leased before: the master then sends
none of those requests, records none of their results (``discarded``), and
starts no fetch and writes no record while the frontier is not
``available``.  What to do with a result (retry, follow, record) is decided by the
pure functions of :mod:`mpcrawler.master.outcome`; this module carries it out.

Durability, in order: the JSON Lines output is line-buffered, so a record is
in the OS once written; the frontier's journal is synced to the OS after
every turn of the loop, so a killed master loses at most the pages of the
batch it was handling; every ``checkpoint_interval`` seconds the pipelines,
then the frontier (its queue, then its seen set) are made durable and
``job.json`` is replaced.

A stop signal (SIGINT, SIGTERM, SIGHUP; see :mod:`mpcrawler.stopsignals`)
stops the dispatching, lets in-flight requests finish for ``grace`` seconds,
checkpoints and returns ``interrupted``; a second signal stops at once.
Running out of disk stops the same way and raises CrawlError.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import json
import logging
import os
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import stopsignals
from ..errors import (
    ArchiveError,
    CrawlError,
    FrontierError,
    FrontierUnavailable,
    JobConflict,
    JobDamaged,
)
from ..frontier import Frontier, LocalFrontier
from ..frontier.base import Admission
from ..frontier.redis.frontier import RedisFrontier
from ..messages import EXPIRED, WARC_FAILED, PageResult
from ..modules import BUILTIN_ANALYZERS, BUILTIN_MODULES, load_object, object_path, process_usage
from ..output.jobdir import JobDir, JobState, count_record, recount, write_atomically
from ..output.pipelines import JsonLinesPipeline, Pipeline
from ..output.progress import Progress
from ..output.repair import Repair
from ..settings import Settings
from ..web import sitemaps
from ..web.urls import InvalidURL, Scope, canonicalize, host_key, split_credentials
from . import outcome
from .pool import PoolError, WorkerPool
from .scheduler import Request, Scheduler

__all__ = ["CrawlError", "CrawlResult", "Crawler", "is_disk_full"]

log = logging.getLogger(__name__)

MAX_ROBOTS_SITEMAPS = 50  # Sitemap: lines read from one robots.txt

_DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


@dataclass
class CrawlResult:
    """What ``Crawler.run()`` returns: the summary, and where things went."""

    stats: dict[str, Any]
    out: Path
    job_dir: Path | None
    interrupted: bool = False
    already_finished: bool = False


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in _DISK_FULL
    return isinstance(exc, sqlite3.OperationalError) and "full" in str(exc)


class Crawler:
    """Crawl from ``settings.seeds`` with a pool of worker processes.

    ``analyzer`` and ``downloader`` may be classes or ``pkg.mod:Class`` paths
    (they are imported again in every worker); ``pipelines`` are Pipeline
    instances or classes (constructed with the settings) that run in the
    master before the JSON Lines output.  Call ``run()`` under
    ``if __name__ == "__main__":`` in a script, as with any multiprocessing.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        analyzer: type | str | None = None,
        downloader: type | str | None = None,
        pipelines: list[Pipeline | type | str] | None = None,
    ) -> None:
        self.settings = settings
        if analyzer is not None:
            settings.analyzer = object_path(analyzer)
        settings.analyzer = BUILTIN_ANALYZERS.get(settings.analyzer, settings.analyzer)
        if downloader is not None:
            settings.downloader = object_path(downloader)
        self._pipeline_specs: list[Pipeline | type | str] = [
            *settings.pipelines,
            *(pipelines or []),
        ]
        settings.validate()
        settings.apply_scope_defaults()
        # Fail now, in the master, with a clear message (ValueError); the
        # built-in modules are known to load (and are not imported here).
        for spec in (settings.analyzer, settings.downloader, *self._pipeline_specs):
            if isinstance(spec, str) and spec not in BUILTIN_MODULES:
                loaded = load_object(spec)
                if not isinstance(loaded, type):
                    raise ValueError(f"{spec} is a {type(loaded).__name__}, not a class")
        for spec in self._pipeline_specs:
            cls = load_object(spec) if isinstance(spec, str) else spec
            if isinstance(cls, type) and not issubclass(cls, Pipeline):
                raise ValueError(f"--pipeline {object_path(cls)} is not a Pipeline subclass")
        seeds = [split_credentials(s) for s in settings.seeds]  # credentials at the door
        settings.seeds = [url for url, _ in seeds]
        for url, creds in seeds:
            if creds is not None:
                settings.credentials.setdefault(host_key(url), list(creds))
        self.redirect_limits = outcome.Redirect(settings.max_redirects, settings.max_url_length)
        self.scope = Scope.from_seeds(
            settings.seeds, settings.allow_domains, settings.scope, settings.deny_domains
        )

    # ------------------------------------------------------------------ run
    def run(self) -> CrawlResult:
        shared = self._open_shared_frontier()  # before anything is written: it may fail
        try:
            return self._run(shared)
        finally:
            if shared is not None:  # left even if the job dir refused the crawl
                shared.close()  # (a no-op once the crawl closed it)

    def _run(self, shared: RedisFrontier | None) -> CrawlResult:
        s = self.settings
        self.shared = shared
        self._temp_dir = None if s.job_dir else tempfile.mkdtemp(prefix="mpcrawler-")
        self.job_dir = Path(s.job_dir) if s.job_dir else None
        state_dir = self.job_dir or Path(self._temp_dir or ".")
        state_dir.mkdir(parents=True, exist_ok=True)
        self.jobdir = JobDir(state_dir)
        lock = self.jobdir.lock()  # until the end of the run: one crawl per job dir
        if self.job_dir:
            self.jobdir.reserve()
        try:
            return self._run_locked(shared, state_dir)
        finally:
            os.close(lock)

    def _run_locked(self, shared: RedisFrontier | None, state_dir: Path) -> CrawlResult:
        s = self.settings
        self.out = s.output_path()
        self.stats_path = (
            self.job_dir / "stats.json" if self.job_dir else self.out.with_name("stats.json")
        )
        self.job = JobState()
        repaired: Repair | None = None
        if self.job_dir and self.jobdir.exists():
            stored, self.job = self.jobdir.read()
            self.jobdir.check_compatible(stored, s.to_dict())
            if self.job.state == "finished" and not self._budget_raised() and shared is None:
                return self._finished_before()
            if shared is None and (reasons := self.jobdir.damage(self.job, self.out)):
                if not s.repair:
                    raise JobDamaged(
                        f"{self.job_dir} is damaged: {reasons[0]}"
                        + (
                            f" (and {len(reasons) - 1} more: mpcrawler verify)"
                            if reasons[1:]
                            else ""
                        )
                        + "; resuming it as it is would lose or repeat pages: rerun with --repair "
                        "to go on with what can be trusted (the records, what the queue still "
                        "holds), or start a new --job-dir"
                    )
                repaired = self._repair(reasons)
        unclean = self.job.state == "running"
        if shared is not None:
            self.job.crawl_id = shared.crawl_id  # a resume finds out if Redis lost it
        self.job.runs += 1
        self.job.run_starts.append(round(time.time(), 3))
        self.job.state = "running"
        self.frontier: Frontier = (
            shared
            if shared is not None
            else repaired.frontier
            if repaired is not None
            else LocalFrontier(state_dir, cache_size=s.cache_size)
        )
        self.pipelines = [self._make_pipeline(p) for p in self._pipeline_specs]
        self.output = JsonLinesPipeline(self.out)
        self.pipelines.append(self.output)
        self.scheduler = Scheduler(
            host_concurrency=s.host_concurrency,
            delay=s.delay,
            robots=s.robots,
            user_agent=s.user_agent,
            robots_retry_delay=s.robots_retry_delay,
            retries=s.retries,
            retry_delay=s.retry_delay,
            max_hosts=s.max_active_hosts,
            max_pace=s.max_retry_after,
            block=self.frontier.block,
        )
        self.pool = WorkerPool(
            s.workers,
            (s.to_dict(secrets=True), self.scope.to_dict()),
            on_slots=self.scheduler.add_slots,
            on_downloaded=self.scheduler.finished,
            on_result=self._on_result,
            on_lost=self._on_lost,
            on_gone=self.scheduler.remove_worker,
            on_summaries=self._record_summaries,
        )
        self.chain_urls: set[str] = set()
        self._settling: list[tuple[Request, PageResult, dict[str, Any] | None]] = []
        self._settling_since = 0.0
        self._loose_links: list[Admission] = []  # to admit with no record (robots' sitemaps)
        self.errors = collections.Counter(self.job.errors)
        self.statuses = collections.Counter(self.job.statuses)
        self.host_pages = collections.Counter(self.job.host_pages)
        self.links_dropped = collections.Counter(self.job.links_dropped)
        self.pages_done = self.job.pages
        self._restarts_before, self._elapsed_before = self.job.worker_restarts, self.job.elapsed_s
        self.module_summaries: dict[str, dict[str, Any]] = {}
        self.discarded = 0  # results of leases that had passed to another node
        self._stop_requested = self._abort = self._finished = False
        self.loop_turns = 0  # turns of the master loop: a spinning loop shows here
        self._started = self._last_checkpoint = self._last_hang_check = time.monotonic()
        self.progress = Progress(disabled=s.quiet, total=s.max_pages, initial=self.pages_done)
        self._pages_at_start = self.pages_done  # after a recount, set again below
        if shared is not None:
            shared.node_info = self._node_info  # its heartbeats carry them from now on
        failure: BaseException | None = None
        owns_signals = stopsignals.install()
        stopsignals.listen(self._on_signal)
        try:
            for pipeline in self.pipelines:
                pipeline.open()
            if unclean:
                self._recount_from_output()
            self.pages_started = self._pages_at_start = self.pages_done
            priorities = s.seed_priorities
            self._admit_all([(u, 0, priorities.get(u, 0), "page", None) for u in s.seeds])
            if repaired is not None:  # what was queued once and lost, found again
                self._admit_all(
                    [(u, d, 0, "page", None) for u, d in repaired.links if self.scope.allows(u)]
                )
            self._checkpoint()
            log.info(
                "crawl started (run %d): seeds %s, %d workers x %d slots, job dir %s, output %s",
                self.job.runs,
                ", ".join(s.seeds),
                s.workers,
                s.threads,
                self.job_dir or "(temporary)",
                self.out,
            )
            if s.insecure:
                log.warning("TLS certificates are not verified (--insecure)")
            if s.warc_dir:  # a killed worker may have left a torn last record
                from ..worker.warc import repair

                repair(s.warc_dir)
            if not self._stop_requested:  # a signal during start-up starts nothing
                self.pool.start(lambda: self._stop_requested)  # a signal stops the forking
                self._loop()
        except (OSError, sqlite3.OperationalError) as exc:
            if not is_disk_full(exc):
                raise
            failure = exc  # said once, on stderr, by the command; the log has it too
            log.info("out of disk space: %s; stopping (the job can be resumed)", exc)
        except (PoolError, ArchiveError, FrontierError) as exc:
            failure = exc
        finally:
            self._shutdown(failure)
            stopsignals.listen(None)
            if owns_signals:
                stopsignals.uninstall()
        if failure is not None:
            raise CrawlError(
                f"out of disk space ({failure}); free some and rerun the same command to resume"
                if is_disk_full(failure)
                else str(failure)
            ) from failure
        interrupted = not self._finished
        return CrawlResult(self.final_stats, self.out, self.job_dir, interrupted=interrupted)

    def _repair(self, reasons: list[str]) -> Repair:
        """--repair: the damage, and what the repair did and lost, said on stderr."""
        from ..output.repair import repair

        for reason in reasons:
            log.warning("repair: %s is damaged: %s", self.job_dir, reason)
        assert self.job_dir is not None
        repaired = repair(self.job_dir, self.out, self.settings.cache_size, self.settings.max_depth)
        for line in repaired.report:
            log.warning("repair: %s", line)
        return repaired

    def _open_shared_frontier(self) -> RedisFrontier | None:
        """The crawl's RedisFrontier with --redis (FrontierError if unreachable)."""
        s = self.settings
        if s.redis is None or s.crawl is None:
            return None
        s.node = s.node or f"{socket.gethostname()}-{os.getpid()}"
        crawl_id = None  # the id this job dir knew the crawl by, if any
        if s.job_dir and (job := JobDir(s.job_dir)).exists():
            with contextlib.suppress(JobConflict):  # _run refuses the job dir with the reason
                crawl_id = job.read()[1].crawl_id
        try:
            frontier = RedisFrontier(
                s.redis,
                s.crawl,
                s.node,
                lease_timeout=s.lease_timeout,
                redis_timeout=s.redis_timeout,
                max_pages=s.max_pages,
                max_pages_per_host=s.max_pages_per_host,
                per_host=s.host_concurrency,
                crawl_id=crawl_id,
            )
        except FrontierError as exc:  # not the job directory's fault: exit 1
            raise CrawlError(str(exc)) from None
        return frontier

    def _node_info(self) -> dict[str, Any]:
        """This node's figures, for ``status --redis``."""
        elapsed = time.monotonic() - self._started
        run_pages = self.pages_done - self._pages_at_start
        return {
            "pages": self.pages_done,
            "errors": sum(self.errors.values()),
            "pages_per_s": round(run_pages / elapsed, 2) if elapsed > 0 else 0.0,
            "discarded": self.discarded,
            "job_dir": str(self.settings.job_dir) if self.settings.job_dir else None,
        }

    def _budget_raised(self) -> bool:
        """A job that stopped at --max-pages goes on if the limit was raised."""
        limit = self.settings.max_pages
        return self.job.message == "max-pages reached" and (limit is None or limit > self.job.pages)

    def _finished_before(self) -> CrawlResult:
        try:
            stats = json.loads(self.stats_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            stats = {"pages": self.job.pages, "errors": sum(self.job.errors.values())}
        return CrawlResult(stats, self.out, self.job_dir, already_finished=True)

    # ----------------------------------------------------------------- loop
    def _loop(self) -> None:
        grace_deadline: float | None = None
        hang_limit = self.settings.hang_timeout or 4 * self.settings.timeout + 10
        while not self._abort:
            self.loop_turns += 1
            now = time.monotonic()
            if self._stop_requested:
                if grace_deadline is None:
                    self.pool.stopping = True  # from now on a worker that exits is not replaced
                    grace_deadline = now + self.settings.grace
                    log.warning(
                        "stopping: waiting for %d downloads and %d pages being parsed "
                        "(up to %.0f s)",
                        *self.pool.in_flight_states(),
                        self.settings.grace,
                    )
                if not self.pool.in_flight or now >= grace_deadline:
                    return
            elif self.frontier.available():  # a shared frontier's Redis may be down
                self._settle(now)  # first: its call to the frontier also leases for the slots
                assigned, refused = self.scheduler.dispatch(self._lease)
                for request, reason, kind in refused:
                    if not self._lease_lost(request):
                        self._finish(request, self._failure(request, reason, kind))
                self.pool.send(self._unsent_if_lost(assigned), self.frontier.fetch_deadline())
                if self._all_done():
                    self._finished = True
                    return
            held = self.scheduler.next_event()
            wait = min(0.5 if held is None else held, self._frontier_wait(), self._settle_wait())
            self.pool.wait(wait)
            self._settle(time.monotonic())
            self.frontier.tick()
            now = time.monotonic()
            if now - self._last_hang_check >= 1.0:
                self._last_hang_check = now
                self.pool.kill_hung(hang_limit)
            if now - self._last_checkpoint >= self.settings.checkpoint_interval:
                self._checkpoint()
            self.progress.update(self.pages_done, self._progress_fields)

    def _all_done(self) -> bool:
        """Nothing in flight, held or settling here, nothing this node may
        lease, and (a shared crawl) nothing leased by other nodes."""
        return (
            not self.pool.in_flight
            and not self.scheduler.queued
            and not self._settling
            and not self._loose_links
            and not self._can_pull()
            and not self.frontier.leased_elsewhere()
        )

    def _lease_lost(self, request: Request) -> bool:
        """The lease of ``request`` passed to another node (this one was
        declared dead): the request is dropped, and counted."""
        if request.info is None or self.frontier.holds(request.info):
            return False
        self.discarded += 1
        for hop in request.hops:
            self.chain_urls.discard(hop)
        return True

    def _unsent_if_lost(self, assigned: list[tuple[int, Request]]) -> list[tuple[int, Request]]:
        """The dispatched requests still this node's; the slots of the others go back."""
        kept = []
        for worker, request in assigned:
            if self._lease_lost(request):
                self.scheduler.add_slots(worker)
                self.scheduler.finished(request)
            else:
                kept.append((worker, request))
        return kept

    def _can_pull(self) -> bool:
        return bool(len(self.frontier)) and self._budget_left()

    def _budget_left(self) -> bool:
        limit = self.settings.max_pages
        if not self.frontier.budget_left():  # a shared crawl's budget is crawl-wide
            return False
        return limit is None or self.shared is not None or self.pages_started < limit

    def _lease(self, now: float) -> Request | None:
        """The frontier's best URL of a host that may be fetched now, as a
        request (None when there is none, or the page budget is spent)."""
        if not self._budget_left():  # an empty frontier answers None itself
            return None
        item = self.frontier.lease(now, 2 * len(self.scheduler.slots))  # and for the next turn
        if item is None:
            return None
        self.pages_started += 1
        return self.scheduler.new_request(
            item.url,
            depth=item.depth,
            priority=item.priority,
            kind=item.kind,
            lastmod=item.lastmod,
            info=item,
        )

    def _frontier_wait(self) -> float:
        """Seconds until a host blocked in the frontier may be ready (0.5 at most)."""
        if not self.scheduler.slots or not self._can_pull():
            return 0.5
        now = time.monotonic()
        when = self.frontier.next_ready(now)
        return 0.5 if when is None else max(0.0, when - now)

    # -------------------------------------------------------------- results
    def _on_lost(self, request: Request) -> None:
        """A request died with its worker: try again, up to a limit."""
        if not request.downloaded:
            self.scheduler.finished(request)
        request.downloaded = False
        if self._lease_lost(request):
            return
        if request.kind == "robots":  # a failed robots.txt fetch; the scheduler counts those
            self.scheduler.robots_result(request, None, None, True)
            return
        request.crashes += 1
        error = outcome.lost_verdict(request.crashes)
        if error is None:
            self.scheduler.submit(request)
        else:
            self._finish(request, self._failure(request, error, "worker_crash"))

    @staticmethod
    def _failure(request: Request, error: str, kind: str) -> PageResult:
        return PageResult(request.id, request.url, error=error, error_kind=kind)

    def _on_result(self, request: Request, result: PageResult) -> None:
        request.downloaded = False  # a retry or a redirect hop downloads again
        if self._lease_lost(request):
            return
        if result.error_kind == WARC_FAILED:  # a page recorded without its archive is lost
            error = result.warc_errno or errno.EIO
            if error in _DISK_FULL:
                raise OSError(error, result.error)  # as a full job dir: exit 1, resumable
            raise ArchiveError(
                f"{result.error} (for {result.url}); nothing of that page was recorded: "
                "mend the cause and rerun the same command to resume"
            )
        if result.error_kind == EXPIRED:  # not started in time (see fetch_deadline): again
            self.scheduler.submit(request)
            return
        if request.kind == "robots":
            failed = outcome.robots_failed(result)
            self.scheduler.robots_result(
                request, result.status, result.body, failed, result.error, result.error_kind
            )
            self._admit_sitemaps(request.host)
            return
        retry_after = outcome.parse_retry_after(result.retry_after, time.time())
        timed_out = result.error_kind == "timeout"
        self.scheduler.answered(request, result.status, timed_out, retry_after)
        s = self.settings
        if outcome.should_retry(result, request.attempts, s.retries, self._stop_requested):
            request.attempts += 1
            delay = outcome.backoff(request.attempts, s.retry_delay, retry_after, s.max_retry_after)
            self.scheduler.retry_later(request, time.monotonic() + delay)
            return
        extra: dict[str, Any] = {}
        if result.location:
            target, reason = self._follow_redirect(request, result.location)
            if reason is None:
                return
            extra["redirect_to"] = target
            if reason == "already seen":
                extra["note"] = "redirect target already seen"
            else:
                result.error, result.error_kind = f"redirect not followed: {reason}", "redirect"
        self._finish(request, result, extra)

    def _follow_redirect(self, request: Request, location: str) -> tuple[str, str | None]:
        """Queue the next hop of a chain, ``location`` resolved against the URL
        that answered with it: (the target, None if followed else why not)."""
        try:
            target = canonicalize(location, request.url)
        except InvalidURL as exc:
            return location, exc.reason
        try:
            seen = target in self.chain_urls or self.frontier.is_seen(target)
        except FrontierUnavailable:  # fetch this hop again once Redis is back
            self.scheduler.retry_later(request, time.monotonic() + 1.0)
            return target, None
        reason = outcome.redirect_refusal(
            target, request, self.redirect_limits, self.scope.allows(target), seen
        )
        if reason is not None:
            return target, reason
        self.chain_urls.add(target)
        hop = self.scheduler.new_request(
            target,
            depth=request.depth,
            priority=request.priority,
            kind=request.kind,
            lastmod=request.lastmod,
            info=request.info,
            origin=request.first_url,
            hops=[*request.hops, target],
        )
        self.scheduler.submit(hop)
        return target, None

    def _finish(
        self, request: Request, result: PageResult, extra: dict[str, Any] | None = None
    ) -> None:
        """The chain of ``request`` is over; its record waits for ``_settle``."""
        if not self._settling:
            self._settling_since = time.monotonic()
        self._settling.append((request, result, extra))

    def _settle_wait(self) -> float:
        """Seconds until the chains waiting to settle are due (0.5 if none)."""
        if not self._settling:
            return 0.5
        due = self._settling_since + self.frontier.batch_window
        return max(0.0, due - time.monotonic())

    def _settle(self, now: float | None = None) -> None:
        """For the chains that ended (gathered for the frontier's
        ``batch_window`` when ``now`` is given), in one step of the frontier:
        admit their links, then write their records, then ack them with their
        hops marked seen.  If a shared frontier is unreachable, the chains
        wait for the next turn (nothing is recorded that was not admitted)."""
        if not self._settling and not self._loose_links:
            return
        if not self.frontier.available():  # no record without a lease still this node's
            return
        self._settling = [entry for entry in self._settling if not self._lease_lost(entry[0])]
        window = self.frontier.batch_window
        if now is not None and window and now - self._settling_since < window:
            return
        batch = self._settling
        links: list[Admission] = list(self._loose_links)
        spans: list[int] = []
        too_deep = 0
        for request, result, _ in batch:
            found, dropped = self._links_of(request, result)
            spans.append(len(found))
            links.extend(found)
            too_deep += dropped
        try:
            admitted = self._admit_all(links)
        except FrontierUnavailable:
            return  # tried again next turn; nothing is dispatched meanwhile
        if too_deep:
            self.links_dropped["sitemap_depth"] += too_deep
        start, self._settling, self._loose_links = len(self._loose_links), [], []
        for (request, result, extra), span in zip(batch, spans, strict=True):
            new_links = sum(admitted[start : start + span])
            start += span
            self._record(request, result, new_links, extra)

    def _links_of(self, request: Request, result: PageResult) -> tuple[list[Admission], int]:
        """What a finished chain's page asks to admit: its links (within
        --max-depth, not in a redirect chain in progress) and, for a
        sitemap index, its sitemaps (MAX_DEPTH levels deep at most); and how
        many sitemaps were too deep."""
        if not outcome.is_ok(result):
            return [], 0
        sitemap = request.kind == "sitemap"  # its pages are depth 1 from their root
        depth = 1 if sitemap else request.depth + 1
        found: list[Admission] = []
        max_depth = self.settings.max_depth
        if max_depth is None or depth <= max_depth:
            chain, lastmods = self.chain_urls, result.lastmods or {}
            found = [
                (url, depth, priority, "page", lastmods.get(url))
                for url, priority in result.outlinks
                if url not in chain
            ]
        if sitemap and result.sitemaps:
            level = request.depth + 1
            if level > sitemaps.MAX_DEPTH:
                return found, len(result.sitemaps)
            found += [(url, level, 0, "sitemap", None) for url in result.sitemaps]
        return found, 0

    def _record(
        self, request: Request, result: PageResult, new_links: int, extra: dict[str, Any] | None
    ) -> None:
        extra = {**(extra or {}), **outcome.kind_fields(request)}
        if self.shared is not None:
            extra["node"] = self.shared.node
        record = outcome.build_record(
            request,
            result,
            new_links=new_links,
            fetched_at=time.time(),
            record_links=self.settings.record_links,
            extra=extra,
        )
        self._emit(record)
        for hop in request.hops:
            self.chain_urls.discard(hop)
        if request.info is not None:
            self.frontier.ack(request.info, seen=request.hops, error=bool(record["error"]))
        self.pages_done += 1
        count_record(record, self.statuses, self.errors)

    def _emit(self, record: dict[str, Any]) -> None:
        for pipeline in self.pipelines:
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

    def _admit_sitemaps(self, host: str) -> None:
        """Queue the in-scope sitemaps a host's robots.txt names (once: the seen set)."""
        known = self.scheduler.hosts.get(host)
        rules = known.robots if known is not None else None
        if not self.settings.sitemaps or rules is None:
            return
        for text in rules.sitemaps[:MAX_ROBOTS_SITEMAPS]:
            try:
                url = canonicalize(text)
            except InvalidURL:
                continue
            if self.scope.allows(url):
                self._loose_links.append((url, 0, 0, "sitemap", None))

    def _admit(
        self,
        url: str,
        depth: int,
        priority: int,
        kind: str = "page",
        lastmod: str | None = None,
    ) -> bool:
        return self._admit_all([(url, depth, priority, kind, lastmod)])[0]

    def _admit_all(self, items: list[Admission]) -> list[bool]:
        """Queue each URL unless it was seen or its host's page budget is
        spent; True for each one queued.  One step of the frontier, which
        also leases for the slots free now."""
        depth_priority = self.settings.depth_priority
        items = [
            (url, depth, outcome.link_priority(priority, depth, depth_priority), kind, lastmod)
            for url, depth, priority, kind, lastmod in items
        ]
        budget = self.settings.max_pages_per_host
        shared = self.shared  # it keeps the budget crawl-wide
        if budget is None or shared is not None:  # lease ahead: the free slots and as many more
            want = len(self.scheduler.slots) + self.settings.workers * self.settings.threads
            admitted = self.frontier.admit_many(items, want=want)
            if shared is not None:
                self.links_dropped["host_budget"] += shared.over_budget
                shared.over_budget = 0
            return admitted
        admitted = []
        for item in items:  # the budget needs each answer before the next URL
            host = host_key(item[0])
            if self.host_pages[host] >= budget:
                if not self.frontier.is_seen(item[0]):
                    self.links_dropped["host_budget"] += 1
                admitted.append(False)
                continue
            new = self.frontier.admit(*item)
            if new:
                self.host_pages[host] += 1
            admitted.append(new)
        return admitted

    def _record_summaries(self, summaries: list[dict[str, Any]]) -> None:
        for summary in summaries:
            self.module_summaries[summary["id"]] = summary

    # ----------------------------------------------------- state and stop
    def _checkpoint(self) -> None:
        for pipeline in self.pipelines:
            pipeline.flush()
        self.frontier.checkpoint()
        if self.job_dir:
            self.jobdir.write(self.settings.to_dict(), self._job_state())
        self._last_checkpoint = time.monotonic()

    def _job_state(self) -> JobState:
        job = self.job
        job.pages = self.pages_done
        job.errors, job.statuses = dict(self.errors), dict(self.statuses)
        job.host_pages, job.links_dropped = dict(self.host_pages), dict(self.links_dropped)
        job.worker_restarts = self._restarts_before + self.pool.restarts
        job.elapsed_s = self._elapsed_before + (time.monotonic() - self._started)
        return job

    def _recount_from_output(self) -> None:
        """After an unclean stop, job.json lags the output: count the records."""
        tally = recount(self.output.records())
        self.pages_done = tally.pages
        self.statuses, self.errors = tally.statuses, tally.errors

    def _shutdown(self, failure: BaseException | None) -> None:
        if hasattr(self, "_settling"):
            self._settle()  # chains that ended in the last turn
        in_flight = bool(getattr(self, "pool", None) and self.pool.in_flight)
        quick = failure is not None or self._abort or (self._stop_requested and in_flight)
        if hasattr(self, "pool"):
            try:
                self.pool.stop(wait=0.0 if quick else 10.0)
            except Exception:  # never let a worker problem lose the checkpoint
                log.exception("while stopping workers")
        self.progress.close(self.pages_done, self._progress_fields)
        self.job.state = (
            "failed" if failure is not None else "finished" if self._finished else "interrupted"
        )
        disk_full = failure is not None and is_disk_full(failure)
        self.job.message = str(failure) if failure is not None else None
        if disk_full:
            self.job.message = f"out of disk space ({failure})"
        if self._finished and len(self.frontier):
            self.job.message = "max-pages reached"
        # After a full disk what fails next is its echo: to the log file, not stderr.
        level = logging.INFO if disk_full else logging.ERROR
        if disk_full and self.job_dir:  # the reserve makes room for job.json
            self.jobdir.free_reserve()
            with contextlib.suppress(OSError):
                self.jobdir.write(self.settings.to_dict(), self._job_state())
        try:
            self._checkpoint()
        except Exception as exc:
            log.log(
                level,
                "the final checkpoint failed (%s); the job resumes from the previous one",
                exc,
            )
        self.final_stats = self._stats()
        log.info(
            "crawl %s: %d pages, %d errors, %.1f pages/s",
            self.job.state,
            self.pages_done,
            self.final_stats["errors"],
            self.final_stats["pages_per_s"],
        )
        try:
            self.stats_path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.stats_path, json.dumps(self.final_stats, indent=2) + "\n")
        except OSError as exc:  # the last stats.json, if any, stays whole
            log.log(level, "cannot write %s: %s", self.stats_path, exc)
        for closer in [*(p.close for p in self.pipelines), self.frontier.close]:
            try:
                closer()
            except Exception as exc:
                log.log(level, "while closing: %s", exc)
        if self._temp_dir:
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    def _on_signal(self, signum: int) -> None:
        """The first stop signal stops dispatching and lets in-flight requests
        finish; a second stops at once."""
        if self._stop_requested:
            self._abort = True
            message = "\nmpcrawler: stopping now"
        else:
            self._stop_requested = True
            message = (
                f"\nmpcrawler: {signal.Signals(signum).name}: finishing in-flight requests "
                f"(up to {self.settings.grace:g} s; again to stop now)"
            )
        with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
            print(message, file=sys.stderr, flush=True)

    # --------------------------------------------------------------- report
    def _progress_fields(self) -> dict[str, Any]:
        """The states of the URLs of this crawl, most important first; the
        same names in the progress line, the summary, status and stats.json:
        queued (in the frontier), buffered (taken, waiting for a slot or
        their host), downloading, parsing."""
        downloading, parsing = self.pool.in_flight_states()
        fields = {
            "errors": sum(self.errors.values()),
            "queued": len(self.frontier),
            "buffered": self.scheduler.queued,
            "downloading": downloading,
            "parsing": parsing,
        }
        if waiting := self.scheduler.hosts_waiting():
            fields["hosts_waiting"] = waiting
        if paced := self.scheduler.hosts_paced():
            fields["hosts_paced"] = paced
        return fields

    def _stats(self) -> dict[str, Any]:
        job = self._job_state()
        run_elapsed = time.monotonic() - self._started
        run_pages = self.pages_done - self._pages_at_start
        summaries = sorted(self.module_summaries.values(), key=lambda m: m["id"])
        frontier_stats = self.frontier.stats()
        modules = [m for m in summaries if m["type"] != "Worker"]
        modules += [p.summary() for p in self.pipelines]
        processes = {
            "master": {
                "id": f"master|pid-{os.getpid()}",
                "loop_turns": self.loop_turns,
                **process_usage(),
            },
            "workers": [m for m in summaries if m["type"] == "Worker"],
        }
        return {
            "state": job.state,
            "pages": self.pages_done,
            "errors": sum(self.errors.values()),
            "errors_by_kind": dict(sorted(self.errors.items())),
            "statuses": dict(sorted(self.statuses.items())),
            "elapsed_s": round(run_elapsed, 3),
            "pages_per_s": round(run_pages / run_elapsed, 2) if run_elapsed > 0 else 0.0,
            "total_elapsed_s": round(job.elapsed_s, 3),
            "runs": job.runs,
            "frontier": {k: v for k, v in frontier_stats.items() if k != "seen"},
            **{k: v for k, v in self._progress_fields().items() if k != "errors"},
            "seen": frontier_stats["seen"],
            "links_dropped": dict(self.links_dropped),
            "workers": self.settings.workers,
            "threads": self.settings.threads,
            "worker_restarts": job.worker_restarts,
            "discarded": self.discarded,
            "pace_changes": self.scheduler.pace_changes,
            "tls_verification": not self.settings.insecure,
            "modules": modules,
            "processes": processes,
            "out": str(self.out),
        }

    def _make_pipeline(self, spec: Pipeline | type | str) -> Pipeline:
        if isinstance(spec, Pipeline):
            return spec
        cls = load_object(spec) if isinstance(spec, str) else spec
        pipeline: Pipeline = cls(self.settings)
        return pipeline


def configure_logging(log_file: str | None) -> None:
    """Warnings to stderr; everything to ``log_file`` if given."""
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if log_file else logging.WARNING)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.WARNING)
    stderr.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(stderr)
    if log_file:
        handler = logging.FileHandler(log_file, encoding="utf-8")
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
