"""The master's side of the worker processes: start, feed, watch, replace, stop.

Data flow::

    engine --send([Request])--> pool --FetchBatch / Grants--> worker (slots: threads)
    engine <--wait(): [Downloaded | Done | Lost | Asked | SubOver]-- pool <--Hello/Results/Bye--

The pool owns the free slots: a worker's ``Hello`` announces its slots, and
each ``Results.freed`` frees as many (see :mod:`mpcrawler.messages`).
``send()`` puts each request in a free slot, so the pool knows which request
is in which worker.  One call to ``wait()`` blocks on every worker's pipe
and process sentinel at once (one selector for the pool's life), and returns
what happened as events, in order.  One rule for failure: a worker that
exits, or is killed for holding a request past the hang limit, loses its
slots, its requests come back as ``Lost`` events, and a replacement starts
(unless the pool is stopping; three in a row that die before their Hello
are a PoolError).  A browser's request (kind ``sub``) is the worker's that
asked for it (``Asked``): ``send`` grants it to that worker without a slot,
and it comes back as ``SubOver`` (or ``Lost`` with its worker).  Workers
start through the ``forkserver`` method, so they
never inherit the master's threads or open files.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import selectors
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import framing, stopsignals
from ..errors import PoolError
from ..framing import FrameReader
from ..messages import (
    Bye,
    Failed,
    Fetch,
    FetchBatch,
    FromWorker,
    Grants,
    Hello,
    NewRules,
    PageResult,
    Results,
    Stop,
    SubDone,
    Unsent,
)
from .forkserver import preload
from .request import Request

if TYPE_CHECKING:
    from ..archive.cdxj import CdxjIndex

__all__ = [
    "Asked",
    "Done",
    "Downloaded",
    "Event",
    "Late",
    "Lost",
    "PoolError",
    "SubOver",
    "WorkerPool",
]

log = logging.getLogger(__name__)

MAX_STARTUP_FAILURES = 3


def _worker_main(*args: Any) -> None:
    """A worker process's entry point (the master does not import the worker
    module, nor bs4 and requests with it; the forkserver has them preloaded)."""
    from ..worker.process import run_worker

    run_worker(*args)


class Downloaded(NamedTuple):
    """The download of ``request``, started at ``started`` (monotonic, in its
    worker), is over (its slot is free; its result follows)."""

    request: Request
    started: float | None = None


class Done(NamedTuple):
    """``request`` came back with ``result``."""

    request: Request
    result: PageResult


class Lost(NamedTuple):
    """``request`` died with its worker (``request.downloaded``: its download was over)."""

    request: Request


class Late(NamedTuple):
    """Links a worker held back as sent before, that the settling asked for
    again (``unsend``): (url, priority, depth)."""

    links: list[tuple[str, int, int]]


class Asked(NamedTuple):
    """A worker's browser wants to make ``request`` (kind ``sub``, its
    ``worker`` and ``permit`` set): it may once its host's politeness allows."""

    request: Request


class SubOver(NamedTuple):
    """The browser's ``request`` granted earlier is over: ``done`` says when
    it started and how its host answered."""

    request: Request
    done: SubDone


Event = Downloaded | Done | Lost | Late | Asked | SubOver


@dataclass
class WorkerProcess:
    """One worker as the pool sees it: its process, its pipe, what it holds."""

    index: int
    process: BaseProcess
    conn: multiprocessing.connection.Connection
    pid: int = 0
    requests: dict[int, Request] = field(default_factory=dict)  # by id
    unsent: int = 0  # Unsent messages it has not answered
    reader: FrameReader = field(init=False)  # its pipe's messages (only through it)

    def __post_init__(self) -> None:
        self.reader = FrameReader(self.conn)


class WorkerPool:
    """``size`` worker processes, started with ``args`` (settings, scope and exclude patterns);
    ``wait()`` says what happened, ``free`` how many requests may be sent."""

    def __init__(self, size: int, args: tuple[dict[str, Any], dict[str, Any]]) -> None:
        self.size = size
        self._args = args
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload(preload(args[0].get("downloader")))
        self.workers: dict[int, WorkerProcess] = {}
        self.in_flight: dict[int, Request] = {}
        self.slots: deque[int] = deque()  # a worker's index per free slot
        self.summaries: dict[str, dict[str, Any]] = {}  # the workers' module counters, by id
        self._events: list[Event] = []
        self.restarts = 0
        self._next_index = 0
        self._startup_failures = 0
        self._startup_error = ""
        self.stopping = False  # once set, a worker that exits is not replaced
        # --cdxj: every result's index lines go to it, whatever becomes of the result
        self.index: CdxjIndex | None = None
        self._selector = selectors.DefaultSelector()

    def start(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Start the workers, one by one; none more once ``stop()`` is true
        (a stop signal during start-up)."""
        for _ in range(self.size):
            if stop():
                return
            self._start_one()

    def _start_one(self) -> None:
        """Start a worker.  It and the forkserver ignore stop signals (only the
        master acts on them); any failure to start is a PoolError."""
        index = self._next_index
        self._next_index += 1
        try:
            parent, child = self._ctx.Pipe(duplex=True)
            process = self._ctx.Process(
                target=_worker_main,
                name=f"mpcrawler-worker-{index}",
                daemon=True,
                args=(index, child, *self._args),
            )
            with stopsignals.ignored_in_children():
                process.start()
        except Exception as exc:
            raise PoolError(f"cannot start a worker process: {type(exc).__name__}: {exc}") from exc
        child.close()
        worker = self.workers[index] = WorkerProcess(index, process, parent)
        self._selector.register(parent, selectors.EVENT_READ, (worker, True))
        self._selector.register(process.sentinel, selectors.EVENT_READ, (worker, False))

    def in_flight_states(self) -> tuple[int, int]:
        """(downloading, parsing): the requests in the workers, by state."""
        parsing = sum(r.downloaded for r in self.in_flight.values())
        return len(self.in_flight) - parsing, parsing

    @property
    def free(self) -> int:
        """Requests that may be sent now: the free slots."""
        return len(self.slots)

    # ------------------------------------------------------------- traffic
    def set_rules(self, scope: dict[str, Any], exclude: list[str]) -> None:
        """Every worker filters links by ``scope`` and ``exclude`` from now on
        (a restarted one starts with them)."""
        self._args = (self._args[0], scope, exclude)
        for worker in self.workers.values():
            with contextlib.suppress(OSError):  # a dead one restarts with the new args
                framing.send(worker.conn, NewRules(scope, exclude))

    def unsend(self, urls: list[str]) -> None:
        """Every worker sends ``urls`` again when a page has them (the master
        did not follow them from the page that had them first)."""
        for worker in self.workers.values():
            with contextlib.suppress(OSError):  # a dead one restarts knowing none
                framing.send(worker.conn, Unsent(urls))
                worker.unsent += 1

    @property
    def awaiting(self) -> bool:
        """A live worker has not answered an ``unsend`` yet (links it held
        back may come: the crawl is not over)."""
        return any(worker.unsent for worker in self.workers.values())

    def send(self, requests: list[Request], deadline: float = 0.0) -> None:
        """Send each request to a free slot (``free`` at least as many); one
        not started by ``deadline`` (monotonic, 0: none) comes back as
        ``expired``, not fetched."""
        batches: dict[int, list[Fetch]] = defaultdict(list)
        grants: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for request in requests:
            if request.kind == "sub":  # its own worker's, without a slot
                worker = self.workers.get(request.worker)
                if worker is None:  # gone since it asked: its host is free of it
                    self._events.append(Lost(request))
                    continue
                self.in_flight[request.id] = request
                worker.requests[request.id] = request
                grants[request.worker].append((request.permit, request.id))
                continue
            index = request.worker = self.slots.popleft()
            self.in_flight[request.id] = request
            self.workers[index].requests[request.id] = request
            due = deadline if request.info is not None else 0.0  # a lease, not robots.txt
            fetch = Fetch(request.id, request.url, request.kind, request.depth, due, request.prior)
            batches[index].append(fetch)
        for index, batch in batches.items():
            # A dead worker's sentinel fires next, and its requests are lost then.
            with contextlib.suppress(OSError):
                framing.send(self.workers[index].conn, FetchBatch(batch))
        for index, granted in grants.items():
            with contextlib.suppress(OSError):
                framing.send(self.workers[index].conn, Grants(granted, []))

    def refuse(self, request: Request, reason: str) -> None:
        """The browser's ``request`` may not be made (robots.txt): its worker is told."""
        worker = self.workers.get(request.worker)
        if worker is not None:
            with contextlib.suppress(OSError):
                framing.send(worker.conn, Grants([], [(request.permit, reason)]))

    def wait(self, timeout: float) -> list[Event]:
        """What happened within ``timeout`` seconds, in order: block on every
        worker's pipe and process sentinel at once (one selector for the
        pool's life, each worker registered while it lives)."""
        if not self.workers:
            time.sleep(timeout)
            return self._take_events()
        for key, _ in self._selector.select(timeout):
            worker, is_pipe = key.data
            if self.workers.get(worker.index) is not worker:
                continue  # gone already, through its other file
            if is_pipe:
                # Only the pipe's own errors mean the worker is gone; an
                # error raised while handling a message is the master's.
                try:
                    messages = worker.reader.read()  # (the selector saw it readable)
                except (EOFError, OSError):
                    self._on_exit(worker)
                    continue
                for message in messages:
                    self._on_message(worker, message)
            else:
                self._on_exit(worker)
        return self._take_events()

    def _take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    def _received(self, worker: WorkerProcess) -> list[FromWorker]:
        """What its pipe still holds, read until it holds nothing or has ended."""
        messages: list[FromWorker] = []
        with contextlib.suppress(EOFError, OSError):
            while more := worker.reader.receive():
                messages += more
        return messages

    def _on_message(self, worker: WorkerProcess, message: FromWorker) -> None:
        if isinstance(message, Hello):
            worker.pid = message.pid
            log.info(
                "worker %d started (pid %d, %d slots)", worker.index, worker.pid, message.slots
            )
            self._startup_failures = 0
            if not self.stopping:
                self.slots.extend([worker.index] * message.slots)
        elif isinstance(message, Results):
            worker.unsent = max(0, worker.unsent - message.answers)
            if message.late:
                self._events.append(Late(message.late))
            downloaded = message.downloaded
            for request_id, started in downloaded:
                request = worker.requests.get(request_id)
                if request is not None and not request.downloaded:
                    request.downloaded = True
                    self._events.append(Downloaded(request, started))
            if message.freed and not self.stopping:
                self.slots.extend([worker.index] * message.freed)
            for token, url in message.asks or ():
                sub = Request.new(url, kind="sub", worker=worker.index, permit=token)
                self._events.append(Asked(sub))
            for done in message.subs or ():
                request = worker.requests.pop(done.request, None)
                if request is not None:
                    self.in_flight.pop(request.id, None)
                    self._events.append(SubOver(request, done))
            for result in message.results:
                if result.cdxj and self.index is not None and result.warc_file:
                    self.index.add(result.warc_file, result.cdxj)
                    result.cdxj = []
                request = worker.requests.pop(result.id, None)
                if request is not None:
                    self.in_flight.pop(request.id, None)
                    self._events.append(Done(request, result))
            self._keep_summaries(message.summaries or [])
        elif isinstance(message, Bye):
            self._keep_summaries(message.summaries)
            if self.index is not None:
                self.index.worker_done(message.warc_lines)
        elif isinstance(message, Failed):  # it could not start; its exit follows
            self._startup_error = message.error

    def _keep_summaries(self, summaries: list[dict[str, Any]]) -> None:
        for summary in summaries:
            self.summaries[summary["id"]] = summary

    def _on_exit(self, worker: WorkerProcess) -> None:
        if self.workers.pop(worker.index, None) is None:
            return
        self._forget(worker)
        # Results it sent before it died still count.
        for message in self._received(worker):
            self._on_message(worker, message)
        worker.conn.close()
        worker.process.join(timeout=1)
        self.slots = deque(w for w in self.slots if w != worker.index)  # gone with it
        lost = list(worker.requests.values())
        for request in lost:
            self.in_flight.pop(request.id, None)
        if self.stopping:  # its requests stay un-acked: the next run fetches them
            log.info(
                "worker %d (pid %s) exited during the stop with %d requests; they wait for "
                "the next run",
                worker.index,
                worker.pid,
                len(lost),
            )
            return
        if not worker.pid:
            self._startup_failures += 1
            if self._startup_failures >= MAX_STARTUP_FAILURES:
                raise PoolError(
                    f"worker processes cannot start: {self._startup_error}"
                    if self._startup_error
                    else f"worker processes exit during startup (exit code "
                    f"{worker.process.exitcode}); if Crawler.run() is called from a script, "
                    "call it under `if __name__ == '__main__':`"
                )
        log.warning(
            "worker %d (pid %s) died with exit code %s; re-queueing %d requests",
            worker.index,
            worker.pid,
            worker.process.exitcode,
            len(lost),
        )
        self.restarts += 1
        self._start_one()
        self._events.extend(Lost(request) for request in lost)

    def kill_hung(self, limit: float) -> None:
        """Kill every worker holding a request for longer than ``limit`` seconds."""
        now = time.monotonic()
        for worker in list(self.workers.values()):
            if any(now - r.sent_at > limit for r in worker.requests.values()):
                log.warning(
                    "worker %d (pid %s) has held a request for over %.0f s; killing it",
                    worker.index,
                    worker.pid,
                    limit,
                )
                worker.process.kill()

    # ----------------------------------------------------------------- stop
    def stop(self) -> None:
        """Ask every worker to finish what it holds and exit (``wait()``
        reports their last results; ``close()`` kills what is left)."""
        self.stopping = True
        self.slots.clear()
        for worker in self.workers.values():
            with contextlib.suppress(OSError):
                framing.send(worker.conn, Stop())

    def close(self) -> None:
        """Kill the workers left, and let go of everything."""
        self.stopping = True
        for worker in list(self.workers.values()):
            worker.process.kill()
            worker.process.join(timeout=5)
            self._forget(worker)
            worker.conn.close()
            self.workers.pop(worker.index, None)
        self._selector.close()

    def _forget(self, worker: WorkerProcess) -> None:
        for fileobj in (worker.conn, worker.process.sentinel):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(fileobj)
