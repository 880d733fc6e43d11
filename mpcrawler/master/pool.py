"""The master's side of the worker processes: start, feed, watch, replace, stop.

The pool knows which request is in which worker, because scheduling is
pull-based: a worker's ``hello`` announces its free slots and each result
frees one (see :mod:`mpcrawler.worker.process` for the messages).  One call to
``wait()`` blocks on every worker's pipe and process sentinel at once (one
selector for the pool's life), so a result or a death is seen the moment it
happens.  A dead worker's requests
are handed back to the master (``on_lost``) and a replacement is started; a
worker holding a request past the hang limit is killed and handled the same
way.  Workers start through the ``forkserver`` method, so they never inherit
the master's threads or open files.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import select
import selectors
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

from .. import stopsignals
from ..errors import PoolError
from ..messages import Bye, Failed, Fetch, FetchBatch, FromWorker, Hello, PageResult, Results, Stop
from .scheduler import Request

__all__ = ["PoolError", "WorkerPool"]

log = logging.getLogger(__name__)

MAX_STARTUP_FAILURES = 3


def _worker_main(*args: Any) -> None:
    """A worker process's entry point (the master does not import the worker
    module, nor bs4 and requests with it; the forkserver has them preloaded)."""
    from ..worker.process import run_worker

    run_worker(*args)


@dataclass
class _Worker:
    index: int
    process: BaseProcess
    conn: multiprocessing.connection.Connection
    pid: int = 0
    requests: dict[int, Request] = field(default_factory=dict)
    poller: select.poll = field(default_factory=select.poll)

    def __post_init__(self) -> None:
        self.poller.register(self.conn.fileno(), select.POLLIN)


class WorkerPool:
    """``size`` worker processes; callbacks tell the master what happened.

    * ``on_slots(worker, n)``: the worker has ``n`` more free slots;
    * ``on_downloaded(request)``: its download is over (its result follows);
    * ``on_result(request, result)``: a request came back;
    * ``on_lost(request)``: a request died with its worker;
    * ``on_gone(worker)``: a worker exited; its free slots are gone with it;
    * ``on_summaries(list)``: module counters from a worker.
    """

    def __init__(
        self,
        size: int,
        args: tuple[dict[str, Any], dict[str, Any]],
        *,
        on_slots: Callable[[int, int], None],
        on_downloaded: Callable[[Request], None],
        on_result: Callable[[Request, PageResult], None],
        on_lost: Callable[[Request], None],
        on_gone: Callable[[int], None],
        on_summaries: Callable[[list[dict[str, Any]]], None],
    ) -> None:
        self.size = size
        self._args = args
        self._on_slots, self._on_result = on_slots, on_result
        self._on_downloaded = on_downloaded
        self._on_lost, self._on_gone, self._on_summaries = on_lost, on_gone, on_summaries
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload(["mpcrawler.worker.process", "mpcrawler.master.pool"])
        self.workers: dict[int, _Worker] = {}
        self.in_flight: dict[int, Request] = {}
        self.restarts = 0
        self._next_index = 0
        self._startup_failures = 0
        self._startup_error = ""
        self.stopping = False  # once set, a worker that exits is not replaced
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
        worker = self.workers[index] = _Worker(index, process, parent)
        self._selector.register(parent, selectors.EVENT_READ, (worker, True))
        self._selector.register(process.sentinel, selectors.EVENT_READ, (worker, False))

    def in_flight_states(self) -> tuple[int, int]:
        """(downloading, parsing): the requests in the workers, by state."""
        parsing = sum(r.downloaded for r in self.in_flight.values())
        return len(self.in_flight) - parsing, parsing

    # ------------------------------------------------------------- traffic
    def send(self, assigned: list[tuple[int, Request]], deadline: float = 0.0) -> None:
        """Send each request to its worker; one not started by ``deadline``
        (monotonic, 0: none) comes back as ``expired``, not fetched."""
        batches: dict[int, list[Fetch]] = defaultdict(list)
        for index, request in assigned:
            self.in_flight[request.id] = request
            self.workers[index].requests[request.id] = request
            due = deadline if request.info is not None else 0.0  # a lease, not robots.txt
            fetch = Fetch(request.id, request.url, request.kind, request.depth, due)
            batches[index].append(fetch)
        for index, batch in batches.items():
            # A dead worker's sentinel fires next, and its requests are lost then.
            with contextlib.suppress(OSError):
                self.workers[index].conn.send(FetchBatch(batch))

    def wait(self, timeout: float) -> None:
        """Handle whatever happens within ``timeout`` seconds: block on every
        worker's pipe and process sentinel at once (one selector for the
        pool's life, each worker registered while it lives)."""
        if not self.workers:
            time.sleep(timeout)
            return
        for key, _ in self._selector.select(timeout):
            worker, is_pipe = key.data
            if self.workers.get(worker.index) is not worker:
                continue  # gone already, through its other file
            if is_pipe:
                # Only the pipe's own errors mean the worker is gone; an
                # error raised while handling a message is the master's.
                while (message := self._receive(worker)) is not None:
                    self._on_message(worker, message)
            else:
                self._on_exit(worker)

    def _receive(self, worker: _Worker) -> FromWorker | None:
        """The next waiting message, or None (nothing waiting, or the worker is gone)."""
        try:
            # The worker's own poll object: Connection.poll() builds a new
            # selector at every call.
            if worker.poller.poll(0):
                message: FromWorker = worker.conn.recv()
                return message
        except (EOFError, OSError):
            self._on_exit(worker)
        return None

    def _on_message(self, worker: _Worker, message: FromWorker) -> None:
        if isinstance(message, Hello):
            worker.pid = message.pid
            log.info(
                "worker %d started (pid %d, %d slots)", worker.index, worker.pid, message.slots
            )
            self._startup_failures = 0
            if not self.stopping:
                self._on_slots(worker.index, message.slots)
        elif isinstance(message, Results):
            downloaded = message.downloaded
            for request_id in downloaded:
                request = worker.requests.get(request_id)
                if request is not None and not request.downloaded:
                    request.downloaded = True
                    self._on_downloaded(request)
            if downloaded and not self.stopping:
                self._on_slots(worker.index, len(downloaded))
            for result in message.results:
                request = worker.requests.pop(result.id, None)
                if request is not None:
                    self.in_flight.pop(request.id, None)
                    self._on_result(request, result)
            if message.summaries:
                self._on_summaries(message.summaries)
        elif isinstance(message, Bye):
            self._on_summaries(message.summaries)
        elif isinstance(message, Failed):  # it could not start; its exit follows
            self._startup_error = message.error

    def _on_exit(self, worker: _Worker) -> None:
        if self.workers.pop(worker.index, None) is None:
            return
        self._forget(worker)
        # Results it sent before it died still count.  (It is out of
        # self.workers already, so a pipe error here ends the loop, nothing more.)
        while (message := self._receive(worker)) is not None:
            self._on_message(worker, message)
        worker.conn.close()
        worker.process.join(timeout=1)
        self._on_gone(worker.index)
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
        for request in lost:
            self._on_lost(request)

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
    def stop(self, *, wait: float) -> None:
        """Ask every worker to finish what it holds and exit; after ``wait``
        seconds, kill what is left.  Results that arrive meanwhile count."""
        self.stopping = True
        for worker in self.workers.values():
            with contextlib.suppress(OSError):
                worker.conn.send(Stop())
        deadline = time.monotonic() + wait
        while self.workers and time.monotonic() < deadline:
            self.wait(min(0.2, max(0.0, deadline - time.monotonic())))
        for worker in list(self.workers.values()):
            worker.process.kill()
            worker.process.join(timeout=5)
            self._forget(worker)
            worker.conn.close()
            self.workers.pop(worker.index, None)
        self._selector.close()

    def _forget(self, worker: _Worker) -> None:
        for fileobj in (worker.conn, worker.process.sentinel):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(fileobj)
