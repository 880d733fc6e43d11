"""The master: owns the crawl state and runs the loop that drives the workers.

Data flow (the master is the only writer of crawl state)::

    frontier (UrlQueueManager) --get--> Scheduler --("fetch", ...)--> worker pipe
         ^                                 ^  ^                            |
         | put new links (seen set dedup)  |  | free slot                  |
         |                                 |  +------ ("results", ...) <---+
         +----------- Crawler._on_result --+--> pipelines --> pages.jsonl

One loop waits on every worker pipe and every worker's process sentinel at
once (``multiprocessing.connection.wait``), so a result or a dead worker is
seen the moment it happens.  Each frontier item becomes exactly one record:
fetched, failed, refused by robots.txt, or dropped after crashing workers.
Redirects and retries stay in the master's memory until the chain ends; only
then are its hops marked seen, its record written, its links put and its item
acked, in that order, so a crash at any point replays the chain whole.

Checkpoints (every ``checkpoint_interval`` seconds and at the end) flush the
pipelines, then the frontier, then the seen set: a record is on disk before
its item's ack is durable, and a URL is durably seen only once its put is.
"""

from __future__ import annotations

import collections
import contextlib
import email.utils
import json
import logging
import multiprocessing
import multiprocessing.connection
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .frontier import SeenSet, UrlQueueManager
from .modules import load_object, object_path
from .pipelines import JsonLinesPipeline, Pipeline
from .progress import Progress
from .scheduler import Request, Scheduler
from .settings import Settings
from .urls import InvalidURL, Scope, canonicalize
from .worker import run_worker

__all__ = ["CrawlError", "CrawlResult", "Crawler"]

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_WORKER_CRASHES = 3
MAX_STARTUP_FAILURES = 3
_STOP_TIMEOUT = 10.0


class CrawlError(RuntimeError):
    """The crawl cannot go on (workers cannot start, the disk is full...).
    The job directory is left resumable."""


@dataclass
class CrawlResult:
    """What ``Crawler.run()`` returns: the summary, and where things went."""

    stats: dict[str, Any]
    out: Path
    job_dir: Path | None
    interrupted: bool = False


@dataclass
class _WorkerHandle:
    index: int
    process: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection
    pid: int = 0
    requests: dict[int, Request] = field(default_factory=dict)
    stopping: bool = False
    said_bye: bool = False


class Crawler:
    """Crawl from ``settings.seeds`` with a pool of worker processes.

    ``analyzer`` and ``downloader`` may be classes or ``pkg.mod:Class`` paths
    (they are imported again in every worker); ``pipelines`` are Pipeline
    instances or classes (constructed with the settings) that run in the
    master before the JSON Lines output.
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
        if downloader is not None:
            settings.downloader = object_path(downloader)
        self._pipeline_specs: list[Pipeline | type | str] = [
            *settings.pipelines,
            *(pipelines or []),
        ]
        settings.validate()
        for path in (settings.analyzer, settings.downloader):
            load_object(path)  # fail now, in the master, with a clear message
        self.seeds = [canonicalize(s) for s in settings.seeds]
        self.scope = Scope.from_seeds(self.seeds, settings.allow_domains)

    # ------------------------------------------------------------------ run
    def run(self) -> CrawlResult:
        s = self.settings
        self._temp_dir: str | None = None
        if s.job_dir:
            self.job_dir: Path | None = Path(s.job_dir)
            state_dir = self.job_dir
        else:
            self.job_dir = None
            self._temp_dir = tempfile.mkdtemp(prefix="mpcrawler-")
            state_dir = Path(self._temp_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        self.out = (
            Path(s.out)
            if s.out
            else (state_dir / "pages.jsonl" if self.job_dir else Path("pages.jsonl"))
        )
        self.stats_path = (
            self.job_dir / "stats.json" if self.job_dir else self.out.with_name("stats.json")
        )
        self.frontier = UrlQueueManager(state_dir / "frontier", cache_size=s.cache_size)
        self.seen = SeenSet(state_dir / "seen")
        self.pipelines: list[Pipeline] = [self._make_pipeline(p) for p in self._pipeline_specs]
        self.output = JsonLinesPipeline(self.out)
        self.pipelines.append(self.output)
        self.scheduler = Scheduler(
            host_concurrency=s.host_concurrency,
            delay=s.delay,
            robots=s.robots,
            user_agent=s.user_agent,
            robots_retry_delay=s.robots_retry_delay,
        )
        self.workers: dict[int, _WorkerHandle] = {}
        self.in_flight: dict[int, Request] = {}
        self.chain_urls: set[str] = set()
        self.pages_started = 0
        self.pages_done = 0
        self.errors: collections.Counter[str] = collections.Counter()
        self.statuses: collections.Counter[str] = collections.Counter()
        self.module_summaries: dict[str, dict[str, Any]] = {}
        self.host_pages: collections.Counter[str] = collections.Counter()
        self.links_dropped = collections.Counter[str]()
        self.worker_restarts = 0
        self._startup_failures = 0
        self._next_worker = 0
        self._started = time.monotonic()
        self._last_checkpoint = self._started
        self.progress = Progress(disabled=s.quiet, total=s.max_pages)
        try:
            for pipeline in self.pipelines:
                pipeline.open()
            for seed in self.seeds:
                self._admit(seed, 0)
            self._checkpoint()
            self._start_workers()
            self._loop()
        finally:
            self._shutdown()
        return CrawlResult(self.final_stats, self.out, self.job_dir)

    # ------------------------------------------------------------ processes
    def _start_workers(self) -> None:
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload(["mpcrawler.worker"])
        for _ in range(self.settings.workers):
            self._start_worker()

    def _start_worker(self) -> None:
        index = self._next_worker
        self._next_worker += 1
        parent, child = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(
            target=run_worker,
            name=f"mpcrawler-worker-{index}",
            daemon=True,
            args=(index, child, self.settings.to_dict(), self.scope.to_dict()),
        )
        process.start()
        child.close()
        self.workers[index] = _WorkerHandle(index, process, parent)

    def _loop(self) -> None:
        while True:
            self._fill()
            assigned, refused = self.scheduler.dispatch()
            for request, reason in refused:
                self._finish(
                    request,
                    {"error": reason, "error_kind": "robots", "status": None, "worker": None},
                )
            self._send(assigned)
            if not self.in_flight and not self.scheduler.queued and not self._can_pull():
                break
            timeout = self.scheduler.next_event()
            timeout = 0.5 if timeout is None else min(timeout, 0.5)
            waitables: list[Any] = []
            for handle in self.workers.values():
                waitables.append(handle.conn)
                waitables.append(handle.process.sentinel)
            for ready in multiprocessing.connection.wait(waitables, timeout):
                self._on_ready(ready)
            now = time.monotonic()
            if now - self._last_checkpoint >= self.settings.checkpoint_interval:
                self._checkpoint()
            self.progress.update(self.pages_done, self._progress_fields())

    def _can_pull(self) -> bool:
        if not len(self.frontier):
            return False
        limit = self.settings.max_pages
        return limit is None or self.pages_started < limit

    def _fill(self) -> None:
        """Move items from the frontier into the scheduler, up to a buffer
        big enough to keep every slot busy while some hosts wait."""
        slots = self.settings.workers * self.settings.threads
        buffer = max(1000, 16 * slots)
        while self.scheduler.queued < buffer and self._can_pull():
            item = self.frontier.get()
            if item is None:
                break
            self.pages_started += 1
            self.scheduler.submit(self.scheduler.new_request(item.url, depth=item.depth, info=item))

    def _send(self, assigned: list[tuple[int, Request]]) -> None:
        batches: dict[int, list[tuple[int, str, str]]] = collections.defaultdict(list)
        for worker, request in assigned:
            self.in_flight[request.id] = request
            self.workers[worker].requests[request.id] = request
            batches[worker].append((request.id, request.url, request.kind))
        for worker, batch in batches.items():
            handle = self.workers[worker]
            # A dead worker's sentinel fires next; _on_worker_exit re-queues the batch.
            with contextlib.suppress(OSError):
                handle.conn.send(("fetch", batch))

    def _on_ready(self, ready: Any) -> None:
        for handle in list(self.workers.values()):
            if ready is handle.conn:
                try:
                    while handle.conn.poll():
                        self._on_message(handle, handle.conn.recv())
                except (EOFError, OSError):
                    self._on_worker_exit(handle)
                return
            if ready == handle.process.sentinel:
                self._on_worker_exit(handle)
                return

    def _on_message(self, handle: _WorkerHandle, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "hello":
            handle.pid = message[2]
            self._startup_failures = 0
            if not handle.stopping:
                self.scheduler.add_slots(handle.index, message[3])
        elif kind == "results":
            for result in message[2]:
                request = handle.requests.pop(result["id"], None)
                if request is None:
                    continue
                self.in_flight.pop(request.id, None)
                if not handle.stopping:
                    self.scheduler.add_slots(handle.index, 1)
                self.scheduler.finished(request)
                self._on_result(request, result)
            if message[3]:
                self._record_summaries(message[3])
        elif kind == "bye":
            handle.said_bye = True
            self._record_summaries(message[2])

    def _record_summaries(self, summaries: list[dict[str, Any]]) -> None:
        for summary in summaries:
            self.module_summaries[summary["id"]] = summary

    def _on_worker_exit(self, handle: _WorkerHandle) -> None:
        """A worker is gone: its requests go back to the scheduler."""
        if self.workers.pop(handle.index, None) is None:
            return
        with contextlib.suppress(EOFError, OSError):
            while handle.conn.poll():  # results it sent before dying still count
                self._on_message(handle, handle.conn.recv())
        handle.conn.close()
        handle.process.join(timeout=1)
        self.scheduler.remove_worker(handle.index)
        if handle.stopping:
            return
        if not handle.pid:
            self._startup_failures += 1
            if self._startup_failures >= MAX_STARTUP_FAILURES:
                raise CrawlError(
                    f"worker processes exit during startup (exit code "
                    f"{handle.process.exitcode}); if Crawler.run() is called from a script, "
                    "call it under `if __name__ == '__main__':`"
                )
        log.warning(
            "worker %d (pid %s) died with exit code %s; re-queueing %d requests",
            handle.index,
            handle.pid,
            handle.process.exitcode,
            len(handle.requests),
        )
        for request in handle.requests.values():
            self.in_flight.pop(request.id, None)
            self.scheduler.finished(request)
            request.crashes += 1
            if request.crashes >= MAX_WORKER_CRASHES:
                self._finish(
                    request,
                    {
                        "status": None,
                        "worker": None,
                        "error_kind": "worker_crash",
                        "error": f"crashed {request.crashes} worker processes",
                    },
                )
            elif request.kind == "robots":
                self.scheduler.robots_result(request, None, None, True)
            else:
                self.scheduler.submit(request)
        self.worker_restarts += 1
        self._start_worker()

    # -------------------------------------------------------------- results
    def _on_result(self, request: Request, result: dict[str, Any]) -> None:
        if request.kind == "robots":
            self.scheduler.robots_result(
                request,
                result["status"],
                result.get("body"),
                bool(result.get("transient"))
                or (result["error"] is not None and result["status"] is None),
            )
            return
        status = result["status"]
        transient = bool(result.get("transient")) or status in RETRY_STATUSES
        if transient and request.attempts < self.settings.retries:
            request.attempts += 1
            delay = self._backoff(request.attempts, result.get("retry_after"))
            self.scheduler.retry_later(request, time.monotonic() + delay)
            return
        location = result.get("location")
        if location:
            reason = self._follow_redirect(request, location)
            if reason is None:
                return
            result.setdefault("redirect_to", location)
            if reason != "already seen":
                result["error"] = f"redirect not followed: {reason}"
                result["error_kind"] = "redirect"
            else:
                result["note"] = "redirect target already seen"
        self._finish(request, result)

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        delay = self.settings.retry_delay * 2 ** (attempt - 1)
        if retry_after:
            wait = _parse_retry_after(retry_after)
            if wait is not None:
                delay = max(delay, wait)
        return min(delay, self.settings.max_retry_after)

    def _follow_redirect(self, request: Request, location: str) -> str | None:
        """Queue the next hop of a chain; None if followed, else the reason not."""
        try:
            target = canonicalize(location)
        except InvalidURL:
            return "not an http(s) URL"
        if len(request.hops) >= self.settings.max_redirects:
            return f"more than {self.settings.max_redirects} redirects"
        if len(target) > self.settings.max_url_length:
            return "URL too long"
        if not self.scope.allows(target):
            return "out of scope"
        if target == request.first_url or target in request.hops:
            return "redirect loop"
        if target in self.chain_urls or target in self.seen:
            return "already seen"
        self.chain_urls.add(target)
        hop = self.scheduler.new_request(
            target,
            depth=request.depth,
            info=request.info,
            origin=request.first_url,
            hops=[*request.hops, target],
            attempts=0,
        )
        self.scheduler.submit(hop)
        return None

    def _finish(self, request: Request, result: dict[str, Any]) -> None:
        """The chain of ``request`` is over: record, links, seen hops, ack."""
        status = result.get("status")
        error = result.get("error")
        if error is None and status is not None and status >= 400:
            error = f"HTTP {status}"
            result["error_kind"] = f"http_{status // 100}xx"
        new_links = (
            self._put_links(request, result.get("outlinks") or ())
            if (status is not None and 200 <= status < 300 and error is None)
            else 0
        )
        item = result.get("item") or {}
        record: dict[str, Any] = {
            "url": request.first_url,
            "final_url": request.url,
            "status": status,
            "depth": request.depth,
            "content_type": result.get("content_type") or None,
            "bytes": result.get("bytes", 0),
            "title": item.get("title"),
            "links": result.get("links", 0),
            "new_links": new_links,
            "elapsed_ms": result.get("elapsed_ms"),
            "worker": result.get("worker"),
            "error": error,
            "error_kind": result.get("error_kind") if error else None,
            "redirects": len(request.hops),
            "attempts": request.attempts + 1,
            "fetched_at": round(time.time(), 3),
        }
        for key in ("redirect_to", "note"):
            if key in result:
                record[key] = result[key]
        for key, value in item.items():
            record.setdefault(key, value)
        self._emit(record)
        for hop in request.hops:
            self.seen.add(hop)
            self.chain_urls.discard(hop)
        if request.info is not None:
            self.frontier.ack(request.info)
        self.pages_done += 1
        self.statuses[str(status) if status is not None else "none"] += 1
        if record["error"]:
            self.errors[record["error_kind"] or "other"] += 1

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

    def _put_links(self, request: Request, links: Any) -> int:
        depth = request.depth + 1
        max_depth = self.settings.max_depth
        if max_depth is not None and depth > max_depth:
            return 0
        return sum(self._admit(url, depth) for url in links if url not in self.chain_urls)

    def _admit(self, url: str, depth: int) -> bool:
        """Queue ``url`` unless it was seen or its host's page budget is spent."""
        budget = self.settings.max_pages_per_host
        if budget is not None:
            host = url.split("/", 3)[2]
            if self.host_pages[host] >= budget:
                if url not in self.seen:
                    self.links_dropped["host_budget"] += 1
                return False
        if not self.seen.add(url):
            return False
        self.frontier.put(url, depth=depth)
        if budget is not None:
            self.host_pages[host] += 1
        return True

    # -------------------------------------------------- checkpoint and stop
    def _checkpoint(self) -> None:
        for pipeline in self.pipelines:
            pipeline.flush()
        self.frontier.flush()
        self.seen.flush()
        self._last_checkpoint = time.monotonic()

    def _shutdown(self) -> None:
        for handle in list(self.workers.values()):
            handle.stopping = True
            with contextlib.suppress(OSError):
                handle.conn.send(("stop",))
        deadline = time.monotonic() + _STOP_TIMEOUT
        while self.workers and time.monotonic() < deadline:
            waitables: list[Any] = []
            for handle in self.workers.values():
                waitables += [handle.conn, handle.process.sentinel]
            for ready in multiprocessing.connection.wait(waitables, 0.5):
                self._on_ready(ready)
        for handle in list(self.workers.values()):
            handle.process.kill()
            handle.process.join(timeout=5)
            self.workers.pop(handle.index, None)
        self.progress.close()
        self._checkpoint()
        self.final_stats = self._stats()
        self.stats_path.parent.mkdir(parents=True, exist_ok=True)
        self.stats_path.write_text(json.dumps(self.final_stats, indent=2) + "\n", encoding="utf-8")
        for pipeline in self.pipelines:
            pipeline.close()
        self.frontier.close()
        self.seen.close()
        if self._temp_dir:
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    # --------------------------------------------------------------- report
    def _progress_fields(self) -> dict[str, Any]:
        f = self.frontier.stats()
        return {
            "queued": f["queued"] + self.scheduler.queued,
            "in_flight": len(self.in_flight),
            "disk": f["waiting"] + f["finding"],
            "errors": sum(self.errors.values()),
        }

    def _stats(self) -> dict[str, Any]:
        elapsed = time.monotonic() - self._started
        frontier = self.frontier.stats()
        modules = sorted(self.module_summaries.values(), key=lambda m: m["id"])
        modules += [p.summary() for p in self.pipelines]
        return {
            "pages": self.pages_done,
            "errors": sum(self.errors.values()),
            "errors_by_kind": dict(sorted(self.errors.items())),
            "statuses": dict(sorted(self.statuses.items())),
            "elapsed_s": round(elapsed, 3),
            "pages_per_s": round(self.pages_done / elapsed, 2) if elapsed > 0 else 0.0,
            "frontier": frontier,
            "seen": len(self.seen),
            "links_dropped": dict(self.links_dropped),
            "workers": self.settings.workers,
            "threads": self.settings.threads,
            "worker_restarts": self.worker_restarts,
            "modules": modules,
            "out": str(self.out),
        }

    def _make_pipeline(self, spec: Pipeline | type | str) -> Pipeline:
        if isinstance(spec, Pipeline):
            return spec
        cls = load_object(spec) if isinstance(spec, str) else spec
        return cls(self.settings)


def _parse_retry_after(value: str) -> float | None:
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


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
