"""The end of a run: the workers stopped, the job closed with its outcome
and stats, and a finished crawl's deliveries (the WACZ, the upload).

``shutdown`` is the one rule for how a run ends, whatever ended it (the
crawl done, a budget, a stop signal, a failure): the workers' last results
count, every part is closed, and the job says what happened; a failure
met while stopping is kept if none came before.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import SinkError, is_disk_full
from ..frontier import LocalFrontier
from ..output.sinks import kind_of
from ..output.sinks.delivery import Deliveries
from ..settings import Settings
from .counters import crawl_stats
from .ends import fetched_nothing
from .engine import Engine
from .job import FINISHED_AT_BUDGET, Job

__all__ = ["deliver_finished", "package", "shutdown"]

log = logging.getLogger(__name__)


def shutdown(
    settings: Settings,
    deliveries: Deliveries,
    job: Job,
    engine: Engine,
    failure: BaseException | None,
) -> tuple[dict[str, Any], BaseException | None]:
    """Stop the workers (their last results count), then close the job:
    the stats, and what failed (``failure``, or the stop itself)."""
    failure, disk_full = _stop_parts(engine, failure)
    engine.progress.close(engine.counters.page_records, engine.states)
    engine.report()  # the last figures, which the frontier's close leaves for status
    # The sinks deliver what they hold before the outcome is known: one that
    # cannot fails the run (a job "finished" would never deliver it again).
    sinks_failed = engine.settling.pipelines.close_sinks()
    failure = failure or sinks_failed
    outcome, message, nothing = _outcome(engine, failure, disk_full)
    job.state.fetched_nothing = nothing
    stats = job.close(
        engine.settling.pipelines,
        engine.frontier,
        engine.counters,
        restarts=engine.pool.restarts,
        outcome=outcome,
        message=message,
        disk_full=disk_full,
        stats=lambda: _stats(settings, job, engine),
    )
    if settings.archive.wacz and failure is None and outcome == "finished":
        failure = package(settings, job)
    if failure is None and outcome == "finished":
        failure = _upload(deliveries, job, stats)
    return stats, failure


def _stop_parts(engine: Engine, failure: BaseException | None) -> tuple[BaseException | None, bool]:
    """The workers drained and every part closed; (the failure, a disk full)."""
    pool = engine.pool
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
    return failure, disk_full


def _outcome(
    engine: Engine, failure: BaseException | None, disk_full: bool
) -> tuple[str, str | None, bool]:
    """(The run's outcome, its message, whether no page was answered)."""
    frontier = engine.frontier
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
    outcome = (
        "failed"
        if failure is not None or nothing
        else "finished"
        if engine.finished
        else "interrupted"
    )
    return outcome, message, nothing


def deliver_finished(settings: Settings, job: Job) -> None:
    """A job that finished before: its sinks and upload get what they
    lack (a sink new to the job, or one that failed at its end)."""
    s = settings
    if not (s.outputs.upload or any(kind_of(spec) != "jsonl" for spec in s.outputs.out)):
        return
    deliveries = Deliveries(s, job.state_dir, job.ensure_id())
    deliveries.catch_up(job.out)
    deliveries.finish(job.out, job.stats_path, {"job": job.state.job_id})


def _upload(deliveries: Deliveries, job: Job, stats: dict[str, Any]) -> BaseException | None:
    """--upload: the finished job's files, then the manifest; what failed."""
    try:
        deliveries.finish(
            job.out, job.stats_path, {"job": job.state.job_id, "pages": stats["pages"]}
        )
    except SinkError as exc:
        log.error("%s", exc)
        return exc
    return None


def package(settings: Settings, job: Job) -> BaseException | None:
    """--wacz: the finished crawl's WARC files, index and pages as one
    WACZ file; what failed, if it could not be written."""
    from ..archive.cdxj import CdxjIndex
    from ..archive.wacz import write_wacz
    from ..output.pipelines import JsonLinesPipeline

    s = settings
    assert s.archive.wacz is not None and s.archive.warc_dir is not None
    try:
        CdxjIndex(s.archive.warc_dir).close()  # whole already, unless a kill came first
        path = write_wacz(
            s.archive.wacz,
            s.archive.warc_dir,
            JsonLinesPipeline(str(job.out)).records(),
            main_page=s.seeds[0] if s.seeds else None,
        )
    except OSError as exc:
        log.error("cannot write the WACZ %s: %s", s.archive.wacz, exc)
        return exc
    log.info("packaged %s", path)
    return None


def _stats(settings: Settings, job: Job, engine: Engine) -> dict[str, Any]:
    s = settings
    state = job.snapshot(engine.counters, engine.pool.restarts)
    return crawl_stats(
        engine.counters,
        state,
        states=engine.states(),
        frontier=engine.frontier.stats(),
        modules=engine.settling.pipelines.summaries(),
        worker_summaries=list(engine.pool.summaries.values()),
        extra={
            "workers": s.startup.workers,
            "threads": s.startup.threads,
            "worker_restarts": state.worker_restarts,
            "pace_changes": engine.scheduler.pace_changes,
            "hosts": engine.scheduler.host_counts(),
            "tls_verification": not s.requests.insecure,
            "out": str(job.out),
        },
    )
