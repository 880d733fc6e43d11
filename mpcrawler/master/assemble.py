"""The crawl's parts, built from its settings and joined: what the
``Crawler`` runs.

- ``prepare``: the settings completed and checked, in the master, before
  anything is written (plug-in paths, canonical seeds, credentials, the
  scope's defaults; a plug-in that does not load is a ValueError now);
- ``open_shared_frontier`` and ``metrics_server``: what may fail before
  the job dir is touched (Redis, the metrics port);
- ``assemble``: every part of one run, each owning its own state::

    Job (job dir, lock, resume, checkpoints)      Counters (what was done)
    Frontier (LocalFrontier, or RedisFrontier with --redis)
    Scheduler (politeness, over the frontier)     WorkerPool (the workers)
    ResultHandling (retry, redirect, crash)       Settling (links, records, acks)
    Steering (control commands)                   LiveFile (the web page's figures)
    Engine (the turn that routes between them)
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from ..control.inbox import Inbox
from ..control.rulecommands import RuleCommands
from ..control.shared import SharedInbox
from ..control.steering import CommandInbox, Steering, answer_waiting
from ..errors import CrawlError, FrontierError, JobConflict, UsageError
from ..frontier import Frontier, LocalFrontier
from ..modules import (
    BUILTIN_ANALYZERS,
    BUILTIN_DOWNLOADERS,
    BUILTIN_MODULES,
    load_object,
    object_path,
)
from ..output.jobdir import JobDir
from ..output.metrics import MetricsServer
from ..output.pipelines import Pipeline, Pipelines
from ..output.progress import Progress
from ..output.rejected import RejectedLog
from ..output.sinks.delivery import Deliveries
from ..robots.cache import RobotsCache
from ..settings import Settings
from ..settings.worker import WorkerConfig
from ..watch.live import LiveFile
from ..watch.live import Parts as LiveParts
from ..web.filters import rule_flag
from ..web.urls import host_key, split_credentials
from .counters import Counters
from .engine import Engine
from .job import Job
from .parked import FILE as PARKED_FILE
from .parked import ParkedHosts
from .pool import WorkerPool
from .results import ResultHandling
from .ruleset import CrawlRules
from .scheduler import Scheduler
from .settle import Settling

__all__ = ["Assembly", "Specs", "assemble", "metrics_server", "open_shared_frontier", "prepare"]

if TYPE_CHECKING:  # imported where --redis opens one: a local crawl imports none of Redis
    from ..frontier.redis import PartitionedFrontier, RedisFrontier

    Shared = RedisFrontier | PartitionedFrontier
Specs = list[Pipeline | type | str]  # the pipelines: instances, classes or pkg.mod:Class paths


class Assembly(NamedTuple):
    """One run's parts: its engine, and what it writes apart and closes at the end."""

    engine: Engine
    rejected: RejectedLog | None  # --rejected-log
    deliveries: Deliveries  # the --out sinks and --upload


def prepare(
    settings: Settings,
    analyzer: type | str | None,
    downloader: type | str | None,
    pipelines: Specs | None,
) -> tuple[Settings, Specs, CrawlRules]:
    """The crawler's own copy of ``settings``, completed (plug-in paths,
    canonical seeds, credentials, scope defaults) and checked; the
    pipelines; the rules.  From then on only steering's ``set`` changes the
    settings.  The caller's stay as given."""
    settings = dataclasses.replace(
        settings,
        seeds=list(settings.seeds),
        seed_priorities=dict(settings.seed_priorities),
        credentials={host: list(pair) for host, pair in settings.credentials.items()},
    )
    named_analyzer = settings.startup.analyzer if analyzer is None else object_path(analyzer)
    settings.set("analyzer", BUILTIN_ANALYZERS.get(named_analyzer, named_analyzer))
    named_downloader = (
        settings.startup.downloader if downloader is None else object_path(downloader)
    )
    settings.set("downloader", BUILTIN_DOWNLOADERS.get(named_downloader, named_downloader))
    specs: Specs = [*settings.startup.pipelines, *(pipelines or [])]
    settings.validate()
    settings.apply_scope_defaults()
    _check_plugins(settings, specs)
    seeds = [split_credentials(s) for s in settings.seeds]  # credentials at the door
    settings.seeds = [url for url, _ in seeds]
    for url, creds in seeds:
        if creds is not None:
            settings.credentials.setdefault(host_key(url), list(creds))
    rules = CrawlRules(settings)
    settings.seeds = list(dict.fromkeys(rules.rules.clean(url) for url in settings.seeds))
    settings.seed_priorities = {
        rules.rules.clean(url): p for url, p in settings.seed_priorities.items()
    }
    for url in settings.seeds:
        if (rule := rules.rules.refusal(url)) is not None:
            raise ValueError(f"seed {url} is refused by {rule_flag(rule)}")
    return settings, specs, rules


def _check_plugins(settings: Settings, specs: Specs) -> None:
    """Fail now, in the master, with a clear message (ValueError); the
    built-in modules are known to load (and are not imported here)."""
    for spec in (settings.startup.analyzer, settings.startup.downloader, *specs):
        if isinstance(spec, str) and spec not in BUILTIN_MODULES:
            loaded = load_object(spec)
            if not isinstance(loaded, type):
                raise ValueError(f"{spec} is a {type(loaded).__name__}, not a class")
    for spec in specs:
        cls = load_object(spec) if isinstance(spec, str) else spec
        if isinstance(cls, type) and not issubclass(cls, Pipeline):
            raise ValueError(f"--pipeline {object_path(cls)} is not a Pipeline subclass")


def open_shared_frontier(settings: Settings) -> Shared | None:
    """The crawl's shared frontier with --redis (CrawlError if unreachable)."""
    s = settings
    if s.shared.redis is None or s.shared.crawl is None:
        return None
    s.set("node", s.shared.node or f"{socket.gethostname()}-{os.getpid()}")
    crawl_id = None  # the id this job dir knew the crawl by, if any
    if s.startup.job_dir and (job := JobDir(s.startup.job_dir)).exists():
        with contextlib.suppress(JobConflict):  # Job.open refuses the job dir with the reason
            crawl_id = job.read()[1].crawl_id
    from ..frontier.redis import open_shared

    try:
        return open_shared(
            s.shared.redis,
            s.shared.crawl,
            s.shared.node,
            partitions=s.shared.redis_partitions,
            lease_timeout=s.shared.lease_timeout,
            redis_timeout=s.shared.redis_timeout,
            max_pages=s.limits.max_pages,
            max_pages_per_host=s.limits.max_pages_per_host,
            per_host=s.politeness.host_concurrency,
            crawl_id=crawl_id,
        )
    except FrontierError as exc:  # not the job directory's fault: exit 1
        raise CrawlError(str(exc)) from None


def metrics_server(settings: Settings) -> MetricsServer | None:
    """The --metrics-port server, listening (not yet serving); UsageError
    if the port cannot be had."""
    s = settings
    if s.watch.metrics_port is None:
        return None
    labels = {"node": s.shared.node} if s.shared.redis and s.shared.node else {}
    try:
        return MetricsServer(s.watch.metrics_bind, s.watch.metrics_port, dict, labels)
    except OSError as exc:
        raise UsageError(
            f"--metrics-port: cannot listen on {s.watch.metrics_bind}:{s.watch.metrics_port}: "
            f"{exc.strerror or exc}"
        ) from None


def assemble(
    settings: Settings,
    specs: Specs,
    rules: CrawlRules,
    job: Job,
    shared: Shared | None,
    metrics: MetricsServer | None,
) -> Assembly:
    """The parts of one run of ``job``, built and joined."""
    s = settings
    inbox = _inbox(job, shared)
    rules.rebuild(job.state)
    if "add-seeds" in job.waiting_applied:
        rules.settle_added_seeds(job.state)
    frontier = _frontier(s, job, shared)
    counters = Counters.from_job(job.state)
    deliveries = Deliveries(s, job.state_dir, job.ensure_id())
    pipelines = Pipelines(specs, s, job.out, deliveries.sinks)
    pool = WorkerPool(
        s.startup.workers,
        (WorkerConfig.of(s).to_dict(), rules.scope.to_dict(), list(job.state.excluded)),
    )
    results = ResultHandling(s, rules.rules, frontier.is_seen)
    rejected = RejectedLog(s.filters.rejected_log) if s.filters.rejected_log else None
    scheduler = scheduler_of(s, frontier, parked=ParkedHosts(job.state_dir / PARKED_FILE))
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
        content=frontier.content_index() if s.content.dedup else None,
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
        progress=Progress(
            disabled=s.startup.quiet, total=s.limits.max_pages, initial=counters.page_records
        ),
        checkpoint=lambda: _checkpoint(job, engine),
        robots_cache=RobotsCache(job.path) if job.path else None,
        metrics=metrics,
        live=LiveFile(
            job.state_dir, LiveParts(s, counters, scheduler, pool, frontier, job.state, job.out)
        ),
    )
    _join(s, job, engine, rules, inbox, metrics)
    return Assembly(engine, rejected, deliveries)


def _frontier(settings: Settings, job: Job, shared: Shared | None) -> Frontier:
    """The shared crawl's frontier, a repair's, or the job dir's."""
    if shared is not None:
        return shared
    if job.repaired is not None:
        return job.repaired.frontier
    return LocalFrontier(job.state_dir, cache_size=settings.startup.cache_size)


def _join(
    settings: Settings,
    job: Job,
    engine: Engine,
    rules: CrawlRules,
    inbox: CommandInbox | None,
    metrics: MetricsServer | None,
) -> None:
    """What reaches the engine from outside: the control commands, an
    exclusion sent while the crawl was stopped, the metrics' status."""
    if inbox is not None:  # commands reach a job dir one can name, or a shared crawl
        engine.steering = _steering(settings, job, inbox, engine, rules)
    if job.state.excluded:  # dropped once more only if an exclude came while it was stopped
        drop = "exclude" in job.waiting_applied
        engine.frontier.exclude(rules.rules.excluded, drop_queued=drop)
    if metrics is not None:
        state_dir = job.state_dir
        metrics.status = lambda: JobDir(state_dir).status()
        metrics.start()


def _checkpoint(job: Job, engine: Engine) -> None:
    """The job's state durable: the outputs, the frontier, the counts, then
    the content index and the CDXJ index (within its share)."""
    settling, pool = engine.settling, engine.pool
    job.checkpoint(settling.pipelines, engine.frontier, engine.counters, pool.restarts)
    if settling.content is not None:
        settling.content.checkpoint()
    if pool.index is not None:  # --cdxj: what arrived since, merged (within its share)
        pool.index.checkpoint()


def _inbox(job: Job, shared: Shared | None) -> CommandInbox | None:
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


def _steering(
    settings: Settings, job: Job, inbox: CommandInbox, engine: Engine, rules: CrawlRules
) -> Steering:
    """The steering of ``engine`` by the commands of ``inbox``."""
    commands = RuleCommands(job, rules, engine)
    return Steering(
        inbox,
        settings,
        engine.scheduler,
        engine.frontier,
        job.state,
        engine.request_stop,
        changed=engine.checkpoint,
        add_seeds=commands.add_seeds,
        exclude=commands.exclude,
    )


def scheduler_of(
    s: Settings,
    frontier: Frontier,
    clock: Callable[[], float] = time.monotonic,
    parked: ParkedHosts | None = None,
) -> Scheduler:
    """The crawl's scheduler, from its settings, over ``frontier``."""
    return Scheduler(
        host_concurrency=s.politeness.host_concurrency,
        delay=s.politeness.delay,
        robots=s.politeness.robots,
        user_agent=s.requests.user_agent,
        robots_retry_delay=s.politeness.robots_retry_delay,
        robots_ttl=s.politeness.robots_ttl,
        retries=s.requests.retries,
        retry_delay=s.requests.retry_delay,
        max_hosts=s.startup.max_active_hosts,
        max_pace=s.requests.max_retry_after,
        politeness_key=s.politeness.politeness_key,
        probe=s.content.soft_404_probe and s.content.dedup,
        frontier=frontier,
        parked=parked,
        clock=clock,
    )
