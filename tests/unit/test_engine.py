"""The engine's turn, driven without processes: a fake pool answers what is
sent to it, a fake frontier keeps its queue in memory, and a fake clock
stands still unless a test moves it.  What is asserted is what the parts
were asked: what was sent, recorded and acked."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mpcrawler.frontier import FOREVER, UrlInfo
from mpcrawler.frontier.base import Admission
from mpcrawler.master.assemble import scheduler_of
from mpcrawler.master.counters import Counters
from mpcrawler.master.engine import Engine, default_hang_limit
from mpcrawler.master.pool import Done, Downloaded, Event, Lost
from mpcrawler.master.request import Request
from mpcrawler.master.results import ResultHandling
from mpcrawler.master.settle import Settling
from mpcrawler.messages import PageResult
from mpcrawler.output.pipelines import Pipelines
from mpcrawler.output.progress import Progress
from mpcrawler.settings import Settings
from mpcrawler.settings.worker import WorkerConfig
from mpcrawler.web.filters import UrlRules
from mpcrawler.web.urls import Scope, host_key

Answer = Callable[[Request], PageResult | None]  # None: the worker dies with it


def page(request: Request, status: int = 200, **fields: Any) -> PageResult:
    return PageResult(request.id, request.url, status=status, content_type="text/html", **fields)


class FakePool:
    """Answers every request sent to it at the next ``wait()``."""

    def __init__(self, answer: Answer, slots: int = 4) -> None:
        self.answer = answer
        self.slots = slots
        self.in_flight: dict[int, Request] = {}
        self.workers = {0: object()}
        self.stopping = False
        self.restarts = 0
        self.summaries: dict[str, dict[str, Any]] = {}
        self.sent: list[str] = []
        self.waits: list[float] = []
        self.awaiting = False  # no worker holds links back here

    @property
    def free(self) -> int:
        return 0 if self.stopping else self.slots - len(self.in_flight)

    def send(self, requests: list[Request], deadline: float = 0.0) -> None:
        assert len(requests) <= self.free
        for request in requests:
            self.in_flight[request.id] = request
            self.sent.append(request.url)

    def wait(self, timeout: float) -> list[Event]:
        self.waits.append(timeout)
        events: list[Event] = []
        for request in list(self.in_flight.values()):
            del self.in_flight[request.id]
            result = self.answer(request)
            if result is None:
                events.append(Lost(request))
                continue
            request.downloaded = True
            events += [Downloaded(request), Done(request, result)]
        return events

    def kill_hung(self, limit: float) -> None:
        pass

    def stop(self) -> None:
        self.stopping = True

    def close(self) -> None:
        self.workers = {}


class FakeFrontier:
    """One FIFO per host, in memory; ``lost`` items are no longer held."""

    batch_window = 0.0

    def __init__(self) -> None:
        self.queues: dict[str, deque[UrlInfo]] = {}
        self.seen: set[str] = set()
        self.blocked: dict[str, float] = {}
        self.taken: dict[str, UrlInfo] = {}
        self.acked: list[tuple[str, tuple[str, ...], bool]] = []
        self.lost: set[str] = set()
        self.max_pages: int | None = None
        self.leases = 0

    def admit(
        self, url: str, depth: int = 0, priority: int = 0, kind: str = "page", lastmod: Any = None
    ) -> bool:
        if url in self.seen:
            return False
        self.seen.add(url)
        item = UrlInfo(url, depth, priority, len(self.seen), kind, lastmod)
        self.queues.setdefault(host_key(url), deque()).append(item)
        return True

    def admit_many(self, items: Sequence[Admission], want: int = 0) -> list[bool]:
        return [self.admit(*item) for item in items]

    def is_seen(self, url: str) -> bool:
        return url in self.seen

    def lease(self, now: float | None = None, want: int = 1) -> UrlInfo | None:
        if not self.budget_left():
            return None
        for host, queue in self.queues.items():
            if queue and self.blocked.get(host, 0.0) <= (now or 0.0):
                item = queue.popleft()
                self.taken[item.url] = item
                self.leases += 1
                return item
        return None

    def ack(self, item: UrlInfo, seen: Sequence[str] = (), error: bool = False) -> None:
        del self.taken[item.url]
        self.seen.update(seen)
        self.acked.append((item.url, tuple(seen), error))

    def release(self, item: UrlInfo) -> None:
        raise AssertionError("the engine never releases")

    def block(self, host: str, until: float) -> None:
        self.blocked[host] = until

    def next_ready(self, now: float) -> float | None:
        times = [t for t in self.blocked.values() if now < t < FOREVER]
        return min(times, default=None)

    def sync(self) -> None:
        pass

    def report(self, figures: Any) -> None:
        self.figures = dict(figures)

    def tick(self) -> None:
        pass

    def checkpoint(self) -> None:
        pass

    def stats(self) -> dict[str, Any]:
        return {"queued": len(self), "taken": len(self.taken), "seen": len(self.seen)}

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def available(self) -> bool:
        return True

    def fetch_deadline(self) -> float:
        return 0.0

    def holds(self, item: UrlInfo) -> bool:
        return item.url not in self.lost

    def leased_elsewhere(self) -> int:
        return 0

    def set_budget(self, max_pages: int | None, max_pages_per_host: int | None, **_: Any) -> None:
        self.max_pages = max_pages

    def budget_left(self) -> bool:
        return self.max_pages is None or self.leases < self.max_pages

    def schedule(self, revisits: Sequence[Any]) -> None:
        raise AssertionError("no revisits here")

    def set_revisits(self, lag: float | None, before: float = math.inf) -> None:
        pass

    def next_due(self) -> float | None:
        return None

    def expedite(self, items: Sequence[tuple[str, float]]) -> int:
        return 0

    def take_over_budget(self) -> int:
        return 0

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make_engine(
    tmp_path: Path, answer: Answer, *, slots: int = 4, **options: Any
) -> tuple[Engine, FakePool, FakeFrontier, Clock]:
    settings = Settings(
        seeds=["http://a.test/"], workers=1, threads=slots, robots=False, quiet=True, **options
    )
    scope = Scope.from_seeds(settings.seeds, [], "hosts", [])
    clock = Clock()
    frontier = FakeFrontier()
    pool = FakePool(answer, slots)
    counters = Counters()
    results = ResultHandling(
        settings, UrlRules.from_settings(WorkerConfig.of(settings), scope), frontier.is_seen
    )
    pipelines = Pipelines([], settings, tmp_path / "pages.jsonl")
    pipelines.open()
    settling = Settling(settings, frontier, pipelines, counters, results.chains)
    scheduler = scheduler_of(settings, frontier, clock=clock)
    engine = Engine(
        settings,
        frontier=frontier,
        scheduler=scheduler,
        pool=pool,  # type: ignore[arg-type]
        results=results,
        settling=settling,
        counters=counters,
        progress=Progress(disabled=True),
        checkpoint=lambda: None,
        clock=clock,
    )
    settling.admit([(url, 0, 0, "page", None) for url in settings.seeds])
    return engine, pool, frontier, clock


def records(tmp_path: Path) -> list[dict[str, Any]]:
    return list(Pipelines([], Settings(), tmp_path / "pages.jsonl").output.records())


def links(*urls: str) -> Answer:
    """Every page links to ``urls``."""
    return lambda r: page(r, outlinks=[(u, 0) for u in urls], links=len(urls))


def test_a_crawl_runs_to_its_end_and_records_each_page_once(tmp_path: Path) -> None:
    urls = [f"http://a.test/{i}" for i in range(10)]
    engine, pool, frontier, _ = make_engine(tmp_path, links(*urls))
    engine.run()
    assert engine.finished
    assert sorted(pool.sent) == sorted(["http://a.test/", *urls])
    assert sorted(r["url"] for r in records(tmp_path)) == sorted(pool.sent)
    assert sorted(url for url, _, _ in frontier.acked) == sorted(pool.sent)
    assert engine.counters.pages == 11 and not frontier.taken and not pool.in_flight


def test_a_turn_fills_only_the_free_slots(tmp_path: Path) -> None:
    urls = [f"http://a.test/{i}" for i in range(10)]
    engine, pool, _, _ = make_engine(tmp_path, links(*urls), slots=3)
    engine.dispatch(100.0)
    assert pool.sent == ["http://a.test/"]
    engine.route(pool.wait(0))
    engine.dispatch(100.0)
    assert len(pool.sent) == 1 + 3 and len(pool.in_flight) == 3


def test_a_redirect_is_followed_and_recorded_once_with_its_hops(tmp_path: Path) -> None:
    def answer(r: Request) -> PageResult:
        if r.url == "http://a.test/":
            return page(r, 301, location="/new")
        return page(r)

    engine, pool, frontier, _ = make_engine(tmp_path, answer)
    engine.run()
    assert pool.sent == ["http://a.test/", "http://a.test/new"]
    [record] = records(tmp_path)
    assert (record["url"], record["final_url"], record["redirects"]) == (
        "http://a.test/",
        "http://a.test/new",
        1,
    )
    assert frontier.acked == [("http://a.test/", ("http://a.test/new",), False)]


def test_a_503_is_retried_after_its_backoff_not_before(tmp_path: Path) -> None:
    answers = iter([503, 200])
    engine, pool, _, clock = make_engine(
        tmp_path, lambda r: page(r, next(answers)), retry_delay=5.0
    )
    engine.dispatch(clock.now)
    engine.route(pool.wait(0))
    engine.dispatch(clock.now)
    assert pool.sent == ["http://a.test/"]  # waiting its backoff, holding no slot
    clock.now += 4.9  # past the host's own slowed pace (a 503 halves its rate)
    engine.dispatch(clock.now)
    assert pool.sent == ["http://a.test/"]
    clock.now += 0.1
    engine.dispatch(clock.now)
    assert pool.sent == ["http://a.test/", "http://a.test/"]
    engine.route(pool.wait(0))
    engine.settle()
    [record] = records(tmp_path)
    assert (record["status"], record["attempts"]) == (200, 2)


def test_a_request_lost_with_three_workers_becomes_an_error_record(tmp_path: Path) -> None:
    engine, pool, frontier, _ = make_engine(tmp_path, lambda r: None)
    engine.run()
    assert pool.sent == ["http://a.test/"] * 3
    [record] = records(tmp_path)
    assert record["error"] == "crashed 3 worker processes"
    assert record["error_kind"] == "worker_crash"
    assert frontier.acked == [("http://a.test/", (), True)]


def test_a_lease_passed_to_another_node_is_neither_sent_nor_recorded(tmp_path: Path) -> None:
    engine, pool, frontier, _ = make_engine(tmp_path, lambda r: page(r, 302, location="/c"))
    frontier.lost.add("http://a.test/")  # this node was declared dead meanwhile
    engine.dispatch(100.0)
    assert pool.sent == [] and engine.counters.discarded == 1
    engine.settling.admit([("http://a.test/b", 1, 0, "page", None)])
    engine.dispatch(100.0)
    assert pool.sent == ["http://a.test/b"]
    frontier.lost.add("http://a.test/b")  # lost while in flight: its result is dropped
    engine.route(pool.wait(0))
    assert engine.scheduler.queued == 0  # its redirect is not followed either
    engine.dispatch(100.0)
    assert pool.sent == ["http://a.test/b"]
    assert records(tmp_path) == [] and engine.counters.discarded == 2
    assert frontier.acked == []


def test_the_page_budget_kept_by_the_frontier_ends_the_crawl(tmp_path: Path) -> None:
    urls = [f"http://a.test/{i}" for i in range(10)]
    engine, pool, frontier, _ = make_engine(tmp_path, links(*urls))
    frontier.set_budget(4, None)
    engine.run()
    assert engine.finished and len(pool.sent) == 4 and len(records(tmp_path)) == 4
    assert len(frontier) == 11 - 4  # left queued: a raised budget goes on from them


def test_a_stop_sends_nothing_more_and_ends_once_nothing_is_in_flight(tmp_path: Path) -> None:
    urls = [f"http://a.test/{i}" for i in range(10)]
    engine, pool, _, _ = make_engine(tmp_path, links(*urls))
    engine.dispatch(100.0)
    assert engine.request_stop() is False  # the first signal: finish what is in flight
    engine.run()
    assert not engine.finished and pool.sent == ["http://a.test/"]
    assert len(records(tmp_path)) == 1
    assert engine.request_stop() is True  # a second: at once


def test_an_idle_turn_waits_for_the_next_due_host_not_a_fixed_time(tmp_path: Path) -> None:
    urls = [f"http://a.test/{i}" for i in range(3)]
    engine, pool, _, clock = make_engine(tmp_path, links(*urls), delay=2.0)
    engine.dispatch(clock.now)
    engine.route(pool.wait(0))
    engine.dispatch(clock.now)
    assert len(pool.sent) == 1  # the host waits 2 s between starts
    assert engine.wait_time() == pytest.approx(0.5)  # the most a turn waits
    clock.now += 1.8
    engine.dispatch(clock.now)
    assert len(pool.sent) == 1
    assert engine.wait_time() == pytest.approx(0.2)  # until the host is due
    clock.now += 0.2
    engine.dispatch(clock.now)
    assert len(pool.sent) == 2


def test_an_idle_turn_wakes_when_the_metrics_snapshot_is_due(tmp_path: Path) -> None:
    """--metrics-port: what was recorded shows within the snapshot's
    interval, however long nothing else is due (a crawl waiting on a slow
    page)."""
    urls = [f"http://a.test/{i}" for i in range(3)]
    engine, pool, _, clock = make_engine(tmp_path, links(*urls), delay=30.0)
    engine.dispatch(clock.now)
    engine.route(pool.wait(0))
    engine.dispatch(clock.now)
    assert engine.wait_time() == pytest.approx(0.5)  # the host waits 30 s: the idle bound
    published: list[object] = []
    engine.metrics = SimpleNamespace(publish=published.append)  # type: ignore[assignment]
    engine._metrics_due = clock.now + 0.1
    assert engine.wait_time() == pytest.approx(0.1)


def test_the_hang_limit_counts_what_a_request_may_wait_for() -> None:
    """4 timeouts and 10 s; with --extract, a PDF may wait behind the
    worker's other slots' PDFs for its reader, each up to --pdf-timeout; with
    --render, for a tab of the worker's browser."""
    assert default_hang_limit(Settings(timeout=30)) == 130
    assert default_hang_limit(Settings(timeout=30, extract=True, threads=4, pdf_timeout=20)) == (
        130 + 5 * 20
    )
    rendering = Settings(timeout=30, render="auto", threads=4, render_tabs=2, render_timeout=15)
    assert default_hang_limit(rendering) == 130 + 3 * 15
