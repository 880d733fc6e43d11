"""The start of a run: its outputs opened (and recounted after a kill),
its budgets and revisits set, its seeds admitted, and what it fetches
again (the seeds of a job that fetched nothing, ``--retry-failed``)."""

from __future__ import annotations

import logging

from ..frontier import LocalFrontier
from ..frontier.base import Admission
from ..output.pipelines import Pipelines
from ..revisits.decisions import Revisits, schedule_from_records
from ..settings import Settings
from .ends import retryable
from .engine import Engine
from .job import Job
from .ruleset import CrawlRules

__all__ = ["open_run", "start"]

log = logging.getLogger(__name__)


def open_run(settings: Settings, job: Job, engine: Engine) -> None:
    """The outputs open (after a kill: the counts and the URLs recorded read
    back from them), the page budgets and the revisits set."""
    frontier, counters, settling = engine.frontier, engine.counters, engine.settling
    pipelines = settling.pipelines
    pipelines.open()
    if job.unclean:
        counters.recount(pipelines.output.records(), job.state.pass_start_pages)
        settling.recorded = {
            url
            for record, _, _ in pipelines.output.lines_from(job.state.out_offset)
            if isinstance(url := record.get("url"), str)
        }
    frontier.set_budget(
        settings.limits.max_pages,
        settings.limits.max_pages_per_host,
        done=job.pass_pages(counters.page_records),  # --max-pages: a pass's
        host_pages=job.state.host_pages,  # an older job's: the frontier keeps them now
    )
    job.state.host_pages = {}
    _start_revisits(settings, job, engine)


def _start_revisits(settings: Settings, job: Job, engine: Engine) -> None:
    """Turn revisits on in the frontier; a job that kept no schedule so far
    (crawled without revisits), or whose schedule file is gone, gets one
    built from its records."""
    frontier = engine.frontier
    revisits = Revisits.from_settings(settings)
    if not revisits.enabled:
        job.state.revisits_kept = False  # what this run records is not scheduled
        return
    lost = isinstance(frontier, LocalFrontier) and frontier.revisits is None  # moved away
    if job.state.pages and (lost or not job.state.revisits_kept):
        job.forget_schedule()  # a kill while it is built leaves no count to miss
        records = engine.settling.pipelines.output.records()
        imported = schedule_from_records(records, revisits)
        for start_at in range(0, len(imported), 1000):
            frontier.schedule(imported[start_at : start_at + 1000])
        frontier.sync()
        log.info("revisits: a schedule of %d pages built from the records", len(imported))
    job.state.revisits_kept = True
    frontier.set_revisits(revisits.lag, revisits.before(job.state.pass_started_at))


def start(settings: Settings, rules: CrawlRules, job: Job, engine: Engine) -> None:
    """Admit the seeds (and what a repair found again), checkpoint, say so."""
    s, settling = settings, engine.settling
    priorities = s.seed_priorities
    ahead = (
        s.startup.workers * s.startup.threads
    )  # a shared frontier leases that many in the same call
    seeds = {u: priorities.get(u, 0) for u in s.seeds} | job.state.added_seeds
    settling.admit([(u, 0, p, "page", None) for u, p in seeds.items()], ahead)
    frontier = engine.frontier
    if isinstance(frontier, LocalFrontier):
        again = _again(settings, job, seeds, settling.pipelines)
        if again:
            frontier.retry(again)
            log.info("fetching again %d pages that failed before", len(again))
    job.state.fetched_nothing = False
    if job.repaired is not None:  # what was queued once and lost, found again
        settling.admit(
            [(u, d, 0, "page", None) for u, d in job.repaired.links if rules.rules.allows(u)],
            ahead,
        )
    engine.checkpoint()
    log.info(
        "crawl started (run %d): seeds %s, %d workers x %d slots, job dir %s, output %s",
        job.state.runs,
        ", ".join(s.seeds),
        s.startup.workers,
        s.startup.threads,
        job.path or "(temporary)",
        job.out,
    )
    if s.requests.insecure:
        log.warning("TLS certificates are not verified (--insecure)")
    if s.archive.warc_dir:  # a killed worker may have left a torn last record
        from ..archive.warc import repair

        repair(s.archive.warc_dir)
        if (
            s.archive.cdxj or s.archive.wacz
        ):  # the files an earlier run left unindexed are indexed now
            from ..archive.cdxj import CdxjIndex

            engine.pool.index = CdxjIndex(s.archive.warc_dir)


def _again(
    settings: Settings, job: Job, seeds: dict[str, int], pipelines: Pipelines
) -> list[Admission]:
    """What this run fetches again, seen or not: the seeds, if no page of
    the job was answered before; with --retry-failed, of a finished job
    (an unfinished one may hold them in its queue already), every page
    whose last record failed for want of an answer (``ends.retryable``)."""
    again: dict[str, Admission] = {}
    if job.state.fetched_nothing:
        again = {u: (u, 0, p, "page", None) for u, p in seeds.items()}
    if settings.limits.retry_failed and not job.was_finished:
        log.warning(
            "--retry-failed: the job is not finished; its failed pages are fetched again "
            "by a run with --retry-failed once it is"
        )
    elif settings.limits.retry_failed:
        failed: dict[str, Admission] = {}
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
