"""The Crawler: one crawl, from settings to stats, on the master's parts.

``Crawler`` checks the settings and the plug-ins (in the master, before
anything is written), opens the shared frontier if there is one, and runs
the job: it builds the parts, each owning its own state, and hands them to
the engine::

    Job (job dir, lock, resume, checkpoints)      Counters (what was done)
    Frontier (LocalFrontier, or RedisFrontier with --redis)
    Scheduler (politeness, over the frontier)     WorkerPool (the workers)
    ResultHandling (retry, redirect, crash)       Settling (links, records, acks)
    Engine (the turn that routes between them)

A stop signal (SIGINT, SIGTERM, SIGHUP; see :mod:`mpcrawler.stopsignals`)
stops the dispatching, lets in-flight requests finish for ``grace`` seconds,
checkpoints and returns ``interrupted``; a second signal stops at once.
Running out of disk stops the same way and raises CrawlError.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import socket
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import stopsignals
from ..control import Inbox, first_few
from ..errors import (
    ArchiveError,
    CrawlError,
    FrontierError,
    FrontierUnavailable,
    JobConflict,
    SinkError,
    UsageError,
    is_disk_full,
)
from ..frontier import Frontier, LocalFrontier
from ..frontier.redis import PartitionedFrontier, RedisFrontier, open_shared
from ..frontier.redis.commands import SharedInbox
from ..modules import (
    BUILTIN_ANALYZERS,
    BUILTIN_DOWNLOADERS,
    BUILTIN_MODULES,
    load_object,
    object_path,
)
from ..output.jobdir import JobDir, JobState
from ..output.metrics import MetricsServer
from ..output.pipelines import Pipeline, Pipelines
from ..output.progress import Progress
from ..output.rejected import RejectedLog
from ..output.robotscache import RobotsCache
from ..output.sinks import kind_of
from ..output.sinks.delivery import Deliveries
from ..settings import Settings
from ..watch.live import LiveFile
from ..watch.live import Parts as LiveParts
from ..web.filters import UrlRules, rule_flag
from ..web.redact import hide_userinfo
from ..web.urls import InvalidURL, Scope, host_key, split_credentials
from .counters import Counters, crawl_stats
from .ends import fetched_nothing, retryable
from .engine import Engine
from .job import FINISHED_AT_BUDGET, Job
from .parked import FILE as PARKED_FILE
from .parked import ParkedHosts
from .pool import PoolError, WorkerPool
from .results import ResultHandling
from .revisit import Revisits, schedule_from_records
from .scheduler import Scheduler
from .settle import Settling
from .steering import CommandInbox, Steering, answer_waiting

__all__ = ["CrawlError", "CrawlResult", "Crawler", "is_disk_full"]

log = logging.getLogger(__name__)


@dataclass
class CrawlResult:
    """What ``Crawler.run()`` returns: the summary, and where things went."""

    stats: dict[str, Any]
    out: Path
    job_dir: Path | None
    interrupted: bool = False
    already_finished: bool = False
    budget: str | None = None  # the run's budget that stopped it ("--max-duration 2h")
    fetched_nothing: str | None = None  # no page was answered: the first error, or ""


def _refusals(refused: dict[str, str]) -> str:
    """Seeds the rules refused (URL -> rule), a few of them, in one line."""
    return first_few([f"{url} ({rule})" for url, rule in refused.items()], ", ")


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
        # The crawler's own copy, which it completes here (plug-in paths,
        # canonical seeds, credentials, scope defaults, node id); from then
        # on only steering's ``set`` changes it.  The caller's stays as given.
        settings = dataclasses.replace(
            settings,
            seeds=list(settings.seeds),
            seed_priorities=dict(settings.seed_priorities),
            credentials={host: list(pair) for host, pair in settings.credentials.items()},
        )
        self.settings = settings
        self.metrics: MetricsServer | None = None
        if analyzer is not None:
            settings.analyzer = object_path(analyzer)
        settings.analyzer = BUILTIN_ANALYZERS.get(settings.analyzer, settings.analyzer)
        if downloader is not None:
            settings.downloader = object_path(downloader)
        settings.downloader = BUILTIN_DOWNLOADERS.get(settings.downloader, settings.downloader)
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
        self._build_rules()
        settings.seeds = list(dict.fromkeys(self.rules.clean(url) for url in settings.seeds))
        settings.seed_priorities = {
            self.rules.clean(url): p for url, p in settings.seed_priorities.items()
        }
        for url in settings.seeds:
            if (rule := self.rules.refusal(url)) is not None:
                raise ValueError(f"seed {url} is refused by {rule_flag(rule)}")

    # ------------------------------------------------------------------ run
    def run(self) -> CrawlResult:
        shared = self._open_shared_frontier()  # before anything is written: it may fail
        try:
            self.metrics = self._metrics_server()  # its port, too
        except BaseException:
            if shared is not None:
                shared.close()
            raise
        web = None
        try:
            job = Job(self.settings)
            if self.settings.web_port is not None:  # a usage error: nothing written yet
                from ..cli.web import start_web_child

                s = self.settings
                web = start_web_child(job.state_dir, s.web_bind, s.web_port, s.web_token_file)
            try:
                if not job.open(shared=shared is not None):
                    wacz = self.settings.wacz
                    if wacz and not Path(wacz).exists():  # a kill while packaging, or removed
                        failure = self._package(job)
                        if failure is not None:
                            raise failure
                    self._deliver_finished(job)
                    return CrawlResult(job.stats_before(), job.out, job.path, already_finished=True)
                return self._run(job, shared)
            finally:
                job.unlock()
        finally:
            if web is not None:  # its page has the run's end: it goes with the crawl
                web.terminate()
                web.wait()
            if self.metrics is not None:
                self.metrics.close()
            if shared is not None:  # left even if the job dir refused the crawl
                shared.close()  # (a no-op once the crawl closed it)

    def _build_rules(self, state: JobState | None = None) -> None:
        """The scope and URL rules of the seeds, and of what ``add-seeds``
        and ``exclude`` gave (kept in the job's ``state``)."""
        s = self.settings
        added, excluded = (state.added_seeds, state.excluded) if state else ({}, [])
        self.scope = Scope.from_seeds([*s.seeds, *added], s.allow_domains, s.scope, s.deny_domains)
        self.rules = UrlRules.from_settings(s, self.scope, excluded)

    def _run(self, job: Job, shared: RedisFrontier | PartitionedFrontier | None) -> CrawlResult:
        """Assemble the crawl's parts, run its engine, and shut down."""
        engine, rejected = self._assemble(job, shared)
        return self._execute(job, engine, rejected)

    def _assemble(
        self, job: Job, shared: RedisFrontier | PartitionedFrontier | None
    ) -> tuple[Engine, RejectedLog | None]:
        """The crawl's parts, built and joined: the engine (and the
        --rejected-log it writes through its settling, to close at the end)."""
        s = self.settings
        inbox = self._inbox(job, shared)
        self._build_rules(job.state)
        if "add-seeds" in job.waiting_applied:
            self._settle_added_seeds(job.state)
        frontier: Frontier = (
            shared
            if shared is not None
            else job.repaired.frontier
            if job.repaired is not None
            else LocalFrontier(job.state_dir, cache_size=s.cache_size)
        )
        counters = Counters.from_job(job.state)
        self.deliveries = Deliveries(s, job.state_dir, job.ensure_id())
        pipelines = Pipelines(self._pipeline_specs, s, job.out, self.deliveries.sinks)
        pool = WorkerPool(
            s.workers, (s.to_dict(secrets=True), self.scope.to_dict(), list(job.state.excluded))
        )
        results = ResultHandling(s, self.rules, frontier.is_seen)
        rejected = RejectedLog(s.rejected_log) if s.rejected_log else None
        parked = ParkedHosts(job.state_dir / PARKED_FILE)
        scheduler = Scheduler.from_settings(s, frontier, parked=parked)
        for host in job.state.paused_hosts:  # control pause-host, kept across runs
            scheduler.pause_host(host)
        settling = Settling(
            s,
            frontier,
            pipelines,
            counters,
            results.chains,
            node=shared.node if shared is not None else None,
            rejected=rejected,
            host_wait=scheduler.wait_before if shared is not None else None,
            content=frontier.content_index() if s.dedup else None,
            unsend=pool.unsend,
            soft_404_of=scheduler.soft_404_of if scheduler.probe else None,
        )
        engine = Engine(
            s,
            frontier=frontier,
            scheduler=scheduler,
            pool=pool,
            results=results,
            settling=settling,
            counters=counters,
            progress=Progress(disabled=s.quiet, total=s.max_pages, initial=counters.page_records),
            checkpoint=lambda: self._checkpoint(job, pipelines, frontier, counters, pool, settling),
            robots_cache=RobotsCache(job.path) if job.path else None,
            metrics=self.metrics,
            live=LiveFile(
                job.state_dir,
                LiveParts(s, counters, scheduler, pool, frontier, job.state, job.out),
            ),
        )
        if inbox is not None:  # commands reach a job dir one can name, or a shared crawl
            engine.steering = self._steering(job, inbox, engine)
        if job.state.excluded:  # dropped once more only if an exclude came while it was stopped
            frontier.exclude(self.rules.excluded, drop_queued="exclude" in job.waiting_applied)
        if self.metrics is not None:
            state_dir = job.state_dir
            self.metrics.status = lambda: JobDir(state_dir).status()
            self.metrics.start()
        return engine, rejected

    def _inbox(
        self, job: Job, shared: RedisFrontier | PartitionedFrontier | None
    ) -> CommandInbox | None:
        """Where the crawl's control commands arrive (the job dir's, or the
        shared crawl's in Redis), with those sent before the start applied
        and held for their answers."""
        if shared is None:
            return Inbox(job.path) if job.path else None
        job.state.crawl_id = shared.crawl_id  # a resume finds out if Redis lost it
        inbox = SharedInbox(shared.r, shared.prefix, shared.node, job.state)
        # The crawl's commands this node has not read: sent before it started.
        job.hold(inbox, answer_waiting(inbox, job.state))  # FrontierUnavailable: exit 1
        job.apply_overrides()
        return inbox

    def _steering(self, job: Job, inbox: CommandInbox, engine: Engine) -> Steering:
        """The steering of ``engine`` by the commands of ``inbox``."""
        results, pool, settling = engine.results, engine.pool, engine.settling
        frontier = engine.frontier
        return Steering(
            inbox,
            self.settings,
            engine.scheduler,
            frontier,
            job.state,
            engine.request_stop,
            changed=engine.checkpoint,
            add_seeds=lambda urls, priority: self._add_seeds(
                job, results, pool, settling, urls, priority
            ),
            exclude=lambda regex: self._exclude(
                job, results, pool, engine.scheduler, frontier, regex
            ),
        )

    def _execute(self, job: Job, engine: Engine, rejected: RejectedLog | None) -> CrawlResult:
        """Open the outputs, set the budgets and revisits, start the workers,
        run the engine, and shut down whatever happened."""
        s = self.settings
        frontier, counters = engine.frontier, engine.counters
        pipelines, pool, settling = engine.settling.pipelines, engine.pool, engine.settling
        failure: BaseException | None = None
        owns_signals = stopsignals.install()
        stopsignals.listen(lambda signum: self._on_signal(engine, signum))
        try:
            pipelines.open()
            if job.unclean:
                counters.recount(pipelines.output.records(), job.state.pass_start_pages)
                settling.recorded = {
                    url
                    for record, _, _ in pipelines.output.lines_from(job.state.out_offset)
                    if isinstance(url := record.get("url"), str)
                }
            frontier.set_budget(
                s.max_pages,
                s.max_pages_per_host,
                done=job.pass_pages(counters.page_records),  # --max-pages: a pass's
                host_pages=job.state.host_pages,  # an older job's: the frontier keeps them now
            )
            job.state.host_pages = {}
            self._start_revisits(job, frontier, pipelines)
            self._start(job, engine, settling)
            if not engine.stop_requested:  # a signal during start-up starts nothing
                pool.start(lambda: engine.stop_requested)  # a signal stops the forking
                engine.run()
        except (OSError, sqlite3.OperationalError) as exc:
            if not is_disk_full(exc):
                raise
            failure = exc  # said once, on stderr, by the command; the log has it too
            log.info("out of disk space: %s; stopping (the job can be resumed)", exc)
        except (PoolError, ArchiveError, FrontierError, SinkError) as exc:
            failure = exc
        finally:
            stats, failure = self._shutdown(job, engine, failure)
            if engine.live is not None:
                engine.live.ended(engine.states(), job.state.state)
            if rejected is not None:
                rejected.close()
            stopsignals.listen(None)
            if owns_signals:
                stopsignals.uninstall()
        if failure is not None:
            raise CrawlError(
                f"out of disk space ({failure}); free some and rerun the same command to resume"
                if is_disk_full(failure)
                else str(failure)
            ) from failure
        return CrawlResult(
            stats,
            job.out,
            job.path,
            interrupted=not engine.finished,
            budget=engine.budget_spent if not engine.finished else None,
            fetched_nothing=job.state.message if job.state.fetched_nothing else None,
        )

    def _add_seeds(
        self,
        job: Job,
        results: ResultHandling,
        pool: WorkerPool,
        settling: Settling,
        urls: list[str],
        priority: int,
    ) -> str:
        """``control add-seeds``: the scope grows to take their hosts (here,
        in the workers and in the job, for its resumes), and those the rules
        allow are queued at ``priority``.  The answer."""
        found: dict[str, int] = {}
        for text in urls:
            try:
                found[self.rules.canonical(text)] = priority
            except InvalidURL as exc:
                return f"malformed URL {hide_userinfo(text)[:200]!r}: {exc.reason}"
        kept, refused = self._admit_seeds(job.state, found)
        results.rules = self.rules
        pool.set_rules(self.scope.to_dict(), job.state.excluded)
        wanted = [(url, 0, priority, "page", None) for url in kept]
        queued = sum(settling.admit(wanted)) if wanted else 0
        answer = f"applied: {queued} queued, {len(wanted) - queued} seen before"
        if refused:
            answer += ", refused: " + first_few(
                list(refused.items()), ", ", "{0[0]} ({0[1]})".format
            )
        return answer

    def _admit_seeds(
        self, state: JobState, found: dict[str, int]
    ) -> tuple[dict[str, int], dict[str, str]]:
        """Seeds ``add-seeds`` gave (canonical URL -> priority): the scope
        grows to take their hosts, to see which the other rules refuse; the
        job keeps the others only, and the rules are built with those.
        (kept, refused: URL -> rule)."""
        self._build_rules(
            JobState(added_seeds={**state.added_seeds, **found}, excluded=state.excluded)
        )
        refused = {url: rule for url in found if (rule := self.rules.refusal(url))}
        kept = {url: p for url, p in found.items() if url not in refused}
        state.added_seeds = {**state.added_seeds, **kept}
        self._build_rules(state)
        return kept, refused

    def _settle_added_seeds(self, state: JobState) -> None:
        """The seeds ``add-seeds`` gave while the crawl was not running, as
        a running crawl takes them: a malformed or refused one is said in
        the log and not kept."""
        found: dict[str, int] = {}
        for text, priority in state.added_seeds.items():
            try:
                found[self.rules.canonical(text)] = priority
            except InvalidURL as exc:
                log.warning("control: add-seeds %s: %s", hide_userinfo(text)[:200], exc.reason)
        state.added_seeds = {}
        _, refused = self._admit_seeds(state, found)
        if refused:
            log.warning("control: add-seeds refused: %s", _refusals(refused))

    def _exclude(
        self,
        job: Job,
        results: ResultHandling,
        pool: WorkerPool,
        scheduler: Scheduler,
        frontier: Frontier,
        regex: str,
    ) -> str:
        """``control exclude``: links ``regex`` matches are refused (here, in
        the workers, and in the job for its resumes), and the queued URLs it
        matches dropped (a shared frontier's crawl-wide), with those leased
        and held for their hosts here.  The answer."""
        if regex not in job.state.excluded:
            job.state.excluded = [*job.state.excluded, regex]
        self._build_rules(job.state)
        results.rules = self.rules
        pool.set_rules(self.scope.to_dict(), job.state.excluded)
        for request in scheduler.take_back(self.rules.excluded):  # leased, not sent: dropped too
            if request.info is not None:
                frontier.release(request.info)
        try:
            dropped = frontier.exclude(self.rules.excluded)
        except FrontierUnavailable as exc:  # kept: its URLs are dropped when leased
            return f"applied: queued URLs not dropped now ({exc}); each is dropped when met"
        return f"applied: {dropped} queued URLs dropped"

    def _start_revisits(self, job: Job, frontier: Frontier, pipelines: Pipelines) -> None:
        """Turn revisits on in the frontier; a job that kept no schedule so far
        (crawled without revisits), or whose schedule file is gone, gets one
        built from its records."""
        revisits = Revisits.from_settings(self.settings)
        if not revisits.enabled:
            job.state.revisits_kept = False  # what this run records is not scheduled
            return
        lost = isinstance(frontier, LocalFrontier) and frontier.revisits is None  # moved away
        if job.state.pages and (lost or not job.state.revisits_kept):
            job.forget_schedule()  # a kill while it is built leaves no count to miss
            imported = schedule_from_records(pipelines.output.records(), revisits)
            for start in range(0, len(imported), 1000):
                frontier.schedule(imported[start : start + 1000])
            frontier.sync()
            log.info("revisits: a schedule of %d pages built from the records", len(imported))
        job.state.revisits_kept = True
        frontier.set_revisits(revisits.lag, revisits.before(job.state.pass_started_at))

    def _start(self, job: Job, engine: Engine, settling: Settling) -> None:
        """Admit the seeds (and what a repair found again), checkpoint, say so."""
        s = self.settings
        priorities = s.seed_priorities
        ahead = s.workers * s.threads  # a shared frontier leases that many in the same call
        seeds = {u: priorities.get(u, 0) for u in s.seeds} | job.state.added_seeds
        settling.admit([(u, 0, p, "page", None) for u, p in seeds.items()], ahead)
        frontier = engine.frontier
        if isinstance(frontier, LocalFrontier):
            again = self._again(job, seeds, settling.pipelines)
            if again:
                frontier.retry(again)
                log.info("fetching again %d pages that failed before", len(again))
        job.state.fetched_nothing = False
        if job.repaired is not None:  # what was queued once and lost, found again
            settling.admit(
                [(u, d, 0, "page", None) for u, d in job.repaired.links if self.rules.allows(u)],
                ahead,
            )
        engine.checkpoint()
        log.info(
            "crawl started (run %d): seeds %s, %d workers x %d slots, job dir %s, output %s",
            job.state.runs,
            ", ".join(s.seeds),
            s.workers,
            s.threads,
            job.path or "(temporary)",
            job.out,
        )
        if s.insecure:
            log.warning("TLS certificates are not verified (--insecure)")
        if s.warc_dir:  # a killed worker may have left a torn last record
            from ..worker.warc import repair

            repair(s.warc_dir)
            if s.cdxj or s.wacz:  # the files an earlier run left unindexed are indexed now
                from ..output.cdxj import CdxjIndex

                engine.pool.index = CdxjIndex(s.warc_dir)

    def _again(
        self, job: Job, seeds: dict[str, int], pipelines: Pipelines
    ) -> list[tuple[str, int, int, str, str | None]]:
        """What this run fetches again, seen or not: the seeds, if no page of
        the job was answered before; with --retry-failed, of a finished job
        (an unfinished one may hold them in its queue already), every page
        whose last record failed for want of an answer (``ends.retryable``)."""
        again: dict[str, tuple[str, int, int, str, str | None]] = {}
        if job.state.fetched_nothing:
            again = {u: (u, 0, p, "page", None) for u, p in seeds.items()}
        if self.settings.retry_failed and not job.was_finished:
            log.warning(
                "--retry-failed: the job is not finished; its failed pages are fetched again "
                "by a run with --retry-failed once it is"
            )
        elif self.settings.retry_failed:
            failed: dict[str, tuple[str, int, int, str, str | None]] = {}
            for record in pipelines.output.records():  # once a run: the failed ones kept
                url = record.get("url")
                if not isinstance(url, str):
                    continue
                if retryable(record):
                    depth, priority = record.get("depth"), record.get("priority")
                    failed[url] = (
                        url,
                        depth if isinstance(depth, int) else 0,
                        priority if isinstance(priority, int) else 0,
                        "page",
                        None,
                    )
                else:
                    failed.pop(url, None)  # a later record of it did not fail
            again |= failed
        return list(again.values())

    @staticmethod
    def _checkpoint(
        job: Job,
        pipelines: Pipelines,
        frontier: Frontier,
        counters: Counters,
        pool: WorkerPool,
        settling: Settling,
    ) -> None:
        job.checkpoint(pipelines, frontier, counters, pool.restarts)
        if settling.content is not None:
            settling.content.checkpoint()
        if pool.index is not None:  # --cdxj: what arrived since, merged (within its share)
            pool.index.checkpoint()

    def _shutdown(
        self, job: Job, engine: Engine, failure: BaseException | None
    ) -> tuple[dict[str, Any], BaseException | None]:
        """Stop the workers (their last results count), then close the job:
        the stats, and what failed (``failure``, or the stop itself)."""
        pool, frontier = engine.pool, engine.frontier
        quick = failure is not None or engine.abort or (engine.stop_requested and pool.in_flight)
        disk_full = failure is not None and is_disk_full(failure)
        try:
            engine.drain(0.0 if quick else 10.0)
        except Exception as exc:  # it must not lose the checkpoint, nor go unsaid
            log.info("while stopping: %s", exc, exc_info=True)  # the log file
            if failure is None:
                failure, disk_full = exc, is_disk_full(exc)
        finally:
            pool.close()
            if pool.index is not None and failure is None:  # every worker gone: made whole
                try:
                    pool.index.close()
                except OSError as exc:
                    failure, disk_full = exc, is_disk_full(exc)
            engine.scheduler.parked.close()
            if engine.settling.content is not None:
                engine.settling.content.close()
            if engine.robots_cache is not None:
                engine.robots_cache.close()
        engine.progress.close(engine.counters.page_records, engine.states)
        engine.report()  # the last figures, which the frontier's close leaves for status
        # The sinks deliver what they hold before the outcome is known: one that
        # cannot fails the run (a job "finished" would never deliver it again).
        sinks_failed = engine.settling.pipelines.close_sinks()
        failure = failure or sinks_failed
        message = str(failure) if failure is not None else None
        if disk_full:
            message = f"out of disk space ({failure})"
        if failure is None and engine.finished and len(frontier):
            message = FINISHED_AT_BUDGET
        if failure is None and engine.budget_spent and not engine.finished:
            message = f"{engine.budget_spent} reached; rerun the same command to go on"
        nothing = (
            failure is None
            and engine.finished
            and isinstance(frontier, LocalFrontier)
            and fetched_nothing(engine.counters.statuses)
        )
        if nothing:
            message = f"no page could be fetched ({engine.counters.first_error or 'no record'})"
        job.state.fetched_nothing = nothing
        outcome = (
            "failed"
            if failure is not None or nothing
            else "finished"
            if engine.finished
            else "interrupted"
        )
        settling = engine.settling
        stats = job.close(
            settling.pipelines,
            frontier,
            engine.counters,
            restarts=pool.restarts,
            outcome=outcome,
            message=message,
            disk_full=disk_full,
            stats=lambda: self._stats(job, engine),
        )
        if self.settings.wacz and failure is None and outcome == "finished":
            failure = self._package(job)
        if failure is None and outcome == "finished":
            failure = self._upload(job, stats)
        return stats, failure

    def _deliver_finished(self, job: Job) -> None:
        """A job that finished before: its sinks and upload get what they
        lack (a sink new to the job, or one that failed at its end)."""
        s = self.settings
        if not (s.upload or any(kind_of(spec) != "jsonl" for spec in s.out)):
            return
        deliveries = Deliveries(s, job.state_dir, job.ensure_id())
        deliveries.catch_up(job.out)
        deliveries.finish(job.out, job.stats_path, {"job": job.state.job_id})

    def _upload(self, job: Job, stats: dict[str, Any]) -> BaseException | None:
        """--upload: the finished job's files, then the manifest; what failed."""
        try:
            self.deliveries.finish(
                job.out, job.stats_path, {"job": job.state.job_id, "pages": stats["pages"]}
            )
        except SinkError as exc:
            log.error("%s", exc)
            return exc
        return None

    def _package(self, job: Job) -> BaseException | None:
        """--wacz: the finished crawl's WARC files, index and pages as one
        WACZ file; what failed, if it could not be written."""
        from ..output.cdxj import CdxjIndex
        from ..output.pipelines import JsonLinesPipeline
        from ..output.wacz import write_wacz

        s = self.settings
        assert s.wacz is not None and s.warc_dir is not None
        try:
            CdxjIndex(s.warc_dir).close()  # whole already, unless a kill came first
            path = write_wacz(
                s.wacz,
                s.warc_dir,
                JsonLinesPipeline(str(job.out)).records(),
                main_page=s.seeds[0] if s.seeds else None,
            )
        except OSError as exc:
            log.error("cannot write the WACZ %s: %s", s.wacz, exc)
            return exc
        log.info("packaged %s", path)
        return None

    def _stats(self, job: Job, engine: Engine) -> dict[str, Any]:
        s = self.settings
        state = job.snapshot(engine.counters, engine.pool.restarts)
        return crawl_stats(
            engine.counters,
            state,
            states=engine.states(),
            frontier=engine.frontier.stats(),
            modules=engine.settling.pipelines.summaries(),
            worker_summaries=list(engine.pool.summaries.values()),
            extra={
                "workers": s.workers,
                "threads": s.threads,
                "worker_restarts": state.worker_restarts,
                "pace_changes": engine.scheduler.pace_changes,
                "hosts": engine.scheduler.host_counts(),
                "tls_verification": not s.insecure,
                "out": str(job.out),
            },
        )

    def _metrics_server(self) -> MetricsServer | None:
        """The --metrics-port server, listening (not yet serving); UsageError
        if the port cannot be had."""
        s = self.settings
        if s.metrics_port is None:
            return None
        labels = {"node": s.node} if s.redis and s.node else {}
        try:
            return MetricsServer(s.metrics_bind, s.metrics_port, dict, labels)
        except OSError as exc:
            raise UsageError(
                f"--metrics-port: cannot listen on {s.metrics_bind}:{s.metrics_port}: "
                f"{exc.strerror or exc}"
            ) from None

    def _open_shared_frontier(self) -> RedisFrontier | PartitionedFrontier | None:
        """The crawl's shared frontier with --redis (FrontierError if unreachable)."""
        s = self.settings
        if s.redis is None or s.crawl is None:
            return None
        s.node = s.node or f"{socket.gethostname()}-{os.getpid()}"
        crawl_id = None  # the id this job dir knew the crawl by, if any
        if s.job_dir and (job := JobDir(s.job_dir)).exists():
            with contextlib.suppress(JobConflict):  # Job.open refuses the job dir with the reason
                crawl_id = job.read()[1].crawl_id
        try:
            frontier = open_shared(
                s.redis,
                s.crawl,
                s.node,
                partitions=s.redis_partitions,
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

    def _on_signal(self, engine: Engine, signum: int) -> None:
        """The first stop signal stops dispatching and lets in-flight requests
        finish; a second stops at once."""
        if engine.request_stop():
            message = "\nmpcrawler: stopping now"
        else:
            message = (
                f"\nmpcrawler: {signal.Signals(signum).name}: finishing in-flight requests "
                f"(up to {self.settings.grace:g} s; again to stop now)"
            )
        with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
            print(message, file=sys.stderr, flush=True)


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
