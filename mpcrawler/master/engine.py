"""The engine: one turn of the master's loop, routing and nothing else.

Data flow (the master is the only writer of crawl state)::

    Frontier --lease--> Scheduler --dispatch(free)--> engine --send--> WorkerPool --> workers
       ^  ^  block(host, until)  ^                      |                 |
       |  |                      +-- answered, finished-+<-- wait(): events
       |  +-- admit links, ack ---- Settling <-- Finish -+-- ResultHandling decides
       +-------------------------------------------------+  (Submit, RetryAt, Robots, Probe, Finish)

One turn: if the frontier can be used, settle what ended, dispatch to the
free slots and send; then wait once, on every worker at once, for at most
the time until something is due (a host's next start, a retry, a batch
window); route each event the pool returns; settle; let the frontier do its
upkeep; let the steering read the job's control commands (pause, set,
add-seeds, stop; a paused crawl dispatches nothing; a node of a shared crawl
that leases a URL out of its scope reads them at once, before sending it,
for another node applied an add-seeds first); hand the metrics server
a snapshot (``counters.metrics_snapshot``) and write the live file
(``watch.live``, for ``mpcrawler web``) when due; once a second, kill a hung
worker and report this node's figures to the frontier; checkpoint when due.

A browser's request (--render) arrives as ``Asked``: it is held in the
scheduler under its host's politeness, and dispatched even while paused or
stopping (the page being rendered is in flight), without a slot; when it is
over (``SubOver``) its host is free of it and its answer paces the host.

One failure rule for leases (``Settling.lease_lost``): a request whose
lease passed to another node (a shared frontier's node that was declared
dead; ``Frontier.holds``) is dropped wherever it is met, counted as
``discarded``, and never sent or recorded.

A stop (``request_stop``: a signal) ends the dispatching and lets in-flight
requests finish for ``grace`` seconds; a second stops at once.  ``drain``
then asks the workers to exit and routes their last results.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..control.steering import POLL_INTERVAL, Steering
from ..frontier import Frontier
from ..messages import EXPIRED, PageResult
from ..output.metrics import INTERVAL as METRICS_INTERVAL
from ..output.metrics import MetricsServer, Snapshot
from ..output.progress import Progress
from ..robots.answers import RobotsAnswers
from ..robots.cache import RobotsCache
from ..settings import Settings
from ..watch.live import LiveFile
from .counters import Counters, metrics_snapshot
from .ends import RunBudget
from .pool import Asked, Done, Downloaded, Event, Late, Lost, SubOver, WorkerPool
from .request import Request
from .results import Action, Finish, Probe, ResultHandling, RetryAt, Robots, Submit, failure
from .scheduler import Refusal, Scheduler
from .settle import Settling

__all__ = ["Engine"]

log = logging.getLogger(__name__)

IDLE_WAIT = 0.5  # seconds a turn waits at most when nothing is due


def default_hang_limit(settings: Settings) -> float:
    """How long a worker may hold one request before it is killed: 4
    timeouts and 10 s; with --render, as many render times more as a page
    can wait for a tab of its worker's browser (its slots' pages share the
    tabs), and its own; with --extract, as many PDF reading times more as a
    PDF can wait for its worker's reader, and its own."""
    limit = 4 * settings.requests.timeout + 10
    if settings.content.extract:
        limit += (settings.startup.threads + 1) * settings.content.pdf_timeout
    if settings.rendering.render != "never":
        limit += (
            settings.startup.threads // settings.rendering.render_tabs + 1
        ) * settings.rendering.render_timeout
    return limit


class Engine:
    """Routes between the frontier, the scheduler, the pool, the result
    handling and the settling; ``checkpoint`` is the job's."""

    def __init__(
        self,
        settings: Settings,
        *,
        frontier: Frontier,
        scheduler: Scheduler,
        pool: WorkerPool,
        results: ResultHandling,
        settling: Settling,
        counters: Counters,
        progress: Progress,
        checkpoint: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        robots_cache: RobotsCache | None = None,
        metrics: MetricsServer | None = None,
        steering: Steering | None = None,
        live: LiveFile | None = None,
    ) -> None:
        self.settings = settings
        self.frontier, self.scheduler, self.pool = frontier, scheduler, pool
        self.results, self.settling = results, settling
        self.counters, self.progress = counters, progress
        self.checkpoint = checkpoint
        self.clock = clock
        self.robots_cache = robots_cache  # the job dir's copies, for check-url
        self.robots = RobotsAnswers(
            settings, scheduler, settling, lambda: self.results.rules, robots_cache
        )
        self.metrics = metrics  # --metrics-port: given a snapshot every INTERVAL
        self.steering = steering  # the job's control commands (pause, set...)
        self.live = live  # DIR/live.json, for ``mpcrawler web``
        self._metrics_due = 0.0
        self._at_start: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self.stop_requested = self.abort = self.finished = False
        self.hang_limit = settings.startup.hang_timeout or default_hang_limit(settings)
        self.slots = settings.startup.workers * settings.startup.threads
        self.budget = RunBudget.from_settings(settings)
        self.budget_spent: str | None = None  # the budget that stopped this run

    # ----------------------------------------------------------------- run
    def run(self) -> None:
        """Turn until the crawl is done (``finished``) or stopped."""
        grace_deadline: float | None = None
        started = last_checkpoint = last_hang_check = self.clock()
        self._at_start = (dict(self.counters.statuses), dict(self.counters.errors))
        self.report()
        while not self.abort:
            self.counters.loop_turns += 1
            now = self.clock()
            if self.stop_requested:
                if grace_deadline is None:
                    self.pool.stopping = True  # from now on a worker that exits is not replaced
                    grace_deadline = now + self.settings.startup.grace
                    log.warning(
                        "stopping: waiting for %d downloads and %d pages being parsed "
                        "(up to %.0f s)",
                        *self.in_flight_states(),
                        self.settings.startup.grace,
                    )
                if not self.pool.in_flight or now >= grace_deadline:
                    return
                self.dispatch_subs()  # the pages being rendered finish
            elif self.paused:
                self.dispatch_subs()  # in-flight requests finish; nothing new starts
            elif self.frontier.available():  # a shared frontier's Redis may be down
                self.dispatch(now)
                if self.all_done():
                    self.finished = True
                    return
            self.route(self.pool.wait(self.wait_time()))
            self.settle(self.clock())
            self.frontier.tick()
            now = self.clock()
            if self.steering is not None:
                self.steering.poll(now)
            if self.metrics is not None and now >= self._metrics_due:
                self._metrics_due = now + METRICS_INTERVAL
                self.metrics.publish(self.metrics_snapshot())
            if self.live is not None and now >= self.live.due:
                self.live.update(now, self.states())
            if not self.stop_requested and (
                spent := self.budget.spent(now - started, self.counters.run_bytes)
            ):
                self.budget_spent, self.stop_requested = spent, True
                log.info("%s reached: stopping (the job can be resumed)", spent)
            if now - last_hang_check >= 1.0:
                last_hang_check = now
                self.pool.kill_hung(self.hang_limit)
                self.report()
            if now - last_checkpoint >= self.settings.checkpoint_interval:
                self.checkpoint()
                last_checkpoint = now
            self.progress.update(self.counters.page_records, self.states)

    def report(self) -> None:
        """This node's figures to the frontier (a shared one's heartbeat carries them)."""
        self.frontier.report(self.counters.node_info(self.settings.startup.job_dir))

    def dispatch(self, now: float) -> None:
        """Settle first (its step of the frontier also leases for the free
        slots), then fill the free slots and send."""
        self.settle(now)
        self._send(*self.scheduler.dispatch(self.pool.free), now)

    def dispatch_subs(self) -> None:
        """Start the browsers' requests that may start, and nothing else."""
        if self.scheduler.subs_held:
            self._send(*self.scheduler.dispatch(0), self.clock())

    def _send(self, assigned: list[Request], refused: list[Refusal], now: float) -> None:
        for request, reason, kind in refused:
            if request.kind == "sub":
                self.counters.browser_requests["refused"] += 1
                self.pool.refuse(request, reason)
            elif request.kind == "probe":  # (its host's robots.txt failed): no record
                self.scheduler.probed(request, None)
            elif not self.settling.lease_lost(request):
                self.settling.finish(Finish(request, failure(request, reason, kind)))
        kept = []
        for request in assigned:
            if self.settling.lease_lost(request):
                self.scheduler.finished(request)  # its host is free of it
            else:
                kept.append(request)
        if self.steering is not None and self.steering.shared and self._out_of_scope(kept):
            self.steering.poll(now, at_once=True)  # another node applied a command first
        self.pool.send(kept, self.frontier.fetch_deadline())

    def _out_of_scope(self, requests: list[Request]) -> bool:
        """A URL leased from a shared frontier is out of this node's scope: a
        node that applied ``add-seeds`` before this one queued it, and its
        links would be refused here until this node applies it too."""
        rules = self.results.rules
        return any(
            r.info is not None and not r.hops and not rules.scope.allows(r.url) for r in requests
        )

    def settle(self, now: float | None = None) -> None:
        """Settle what ended, leasing ahead for the free slots and as many more."""
        if self.settling:
            want = self.pool.free + self.slots
            self.settling.settle(now, want)

    @property
    def paused(self) -> bool:
        """A control command paused the crawl: no request starts."""
        return self.steering is not None and self.steering.paused

    def all_done(self) -> bool:
        """Nothing in flight, held or settling here, nothing this node may
        lease (queued, or a revisit due now), and (a shared crawl) nothing
        leased by other nodes.  A --continuous crawl is never done."""
        return (
            not self.pool.in_flight
            and not self.pool.awaiting
            and not self.scheduler.queued
            and not self.settling
            and not self.can_lease()
            and not self.frontier.leased_elsewhere()
            and not self.settings.revisits.continuous
        )

    def revisit_due(self) -> bool:
        """A revisit is due now (the frontier queues it at its next lease)."""
        due = self.frontier.next_due()
        return due is not None and due <= time.time()

    def can_lease(self) -> bool:
        queued = bool(len(self.frontier)) or self.revisit_due()
        return queued and self.frontier.budget_left()

    def wait_time(self) -> float:
        """Seconds until something is due: a request held for its host, a
        host blocked in the frontier, chains to settle, the metrics'
        snapshot or the live file (IDLE_WAIT at most)."""
        free = self.pool.free
        held = self.scheduler.next_event(free)
        wait = min(IDLE_WAIT if held is None else held, self.settling.wait())
        if self.steering is not None:
            wait = min(wait, POLL_INTERVAL)  # commands are read this often
        now = self.clock()
        # what was recorded shows within the metrics' and the live file's interval
        if self.metrics is not None:
            wait = min(wait, max(0.0, self._metrics_due - now))
        if self.live is not None:
            wait = min(wait, max(0.0, self.live.due - now))
        if free and self.can_lease():
            when = self.frontier.next_ready(now)
            if when is not None:
                wait = min(wait, max(0.0, when - now))
        return wait

    # -------------------------------------------------------------- events
    def route(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, Downloaded):
                self.scheduler.finished(event.request, event.started)  # its host is free of it
            elif isinstance(event, Done):
                self.on_done(event)
            elif isinstance(event, Lost):
                self.on_lost(event.request)
            elif isinstance(event, Late):
                self.settling.add_late(event.links)
            elif isinstance(event, Asked):
                self.counters.browser_requests["asked"] += 1
                self.scheduler.submit(event.request)
            elif isinstance(event, SubOver):
                self.on_sub_over(event)

    def on_sub_over(self, event: SubOver) -> None:
        """A browser's request is over: its host is free of it, and paced by its answer."""
        request, done = event
        self.scheduler.finished(request, done.started)
        if done.started is None:
            return  # not made: the page no longer wanted it
        self.counters.browser_requests["fetched"] += 1
        answer = PageResult(request.id, request.url, "sub", status=done.status)
        answer.error_kind, answer.retry_after = done.error_kind, done.retry_after
        self.scheduler.answered(request, answer)

    def on_done(self, event: Done) -> None:
        request, result = event
        request.downloaded = False  # a retry or a redirect hop downloads again
        if self.settling.lease_lost(request):
            return
        if request.kind != "robots" and result.error_kind != EXPIRED:
            self.scheduler.answered(request, result)  # how the host is doing
        action = self.results.on_result(
            request, result, now=self.clock(), stopping=self.stop_requested
        )
        self.carry_out(action)

    def on_lost(self, request: Request) -> None:
        if not request.downloaded:
            self.scheduler.finished(request)
        if request.kind == "sub":
            return  # the browser that wanted it is gone with its worker
        request.downloaded = False
        if not self.settling.lease_lost(request):
            self.carry_out(self.results.on_lost(request))

    def carry_out(self, action: Action) -> None:
        if isinstance(action, Finish):
            self.settling.finish(action)
        elif isinstance(action, Submit):
            self.scheduler.submit(action.request)
        elif isinstance(action, RetryAt):
            self.scheduler.retry_later(action.request, action.at)
        elif isinstance(action, Robots):
            self.robots.handle(action)
        elif isinstance(action, Probe):
            self.scheduler.probed(action.request, action.result)

    # ---------------------------------------------------------------- stop
    def request_stop(self) -> bool:
        """A stop signal: the first stops the dispatching, a second stops at
        once.  True if this one stops at once."""
        if self.stop_requested:
            self.abort = True
            return True
        self.stop_requested = True
        return False

    def drain(self, wait: float) -> None:
        """Ask the workers to exit, routing their last results for up to
        ``wait`` seconds, then settle what ended."""
        self.settle()  # chains that ended in the last turn
        self.pool.stop()
        deadline = self.clock() + wait
        while self.pool.workers and self.clock() < deadline:
            self.dispatch_subs()  # pages being rendered finish
            self.route(self.pool.wait(min(0.2, max(0.0, deadline - self.clock()))))
        self.settle()

    # -------------------------------------------------------------- report
    def in_flight_states(self) -> tuple[int, int]:
        """(downloading, parsing): the requests in the workers, by state."""
        parsing = sum(r.downloaded for r in self.pool.in_flight.values())
        return len(self.pool.in_flight) - parsing, parsing

    def metrics_snapshot(self) -> Snapshot:
        """This run's figures for --metrics-port."""
        return metrics_snapshot(
            self.counters, self._at_start, self.states(), self.scheduler.hosts_paced(), self.paused
        )

    def states(self) -> dict[str, int]:
        """The states of the URLs of this crawl, most important first; the
        same names in the progress line, the summary, status and stats.json:
        queued (in the frontier), buffered (taken, waiting for a slot or
        their host), downloading, parsing."""
        downloading, parsing = self.in_flight_states()
        fields = {
            "errors": sum(self.counters.errors.values()),
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
