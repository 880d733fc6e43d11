"""A worker driven in this process over a real pipe, with a fake downloader:
what the master sees of it is the messages, so that is what is asserted."""

from __future__ import annotations

import multiprocessing
import threading
import time
from typing import Any

from mpcrawler.messages import EXPIRED, Fetch, FetchBatch, Hello, PageResult, Results, Stop
from mpcrawler.settings import Settings
from mpcrawler.web.urls import Scope
from mpcrawler.worker.downloader import Downloader, DownloadError, Response
from mpcrawler.worker.process import Worker

PAGES = {
    "http://a.test/": b'<a href="/x">x</a> <a href="x#frag">again</a> <a href="http://b.test/">off</a>',
    "http://a.test/x": b'<a href="/">home</a> <a href="/y">y</a>',
}


class FakeDownloader(Downloader):
    """Serves PAGES; anything else is a 404 (or, for /fail, a connection error)."""

    def download(
        self, url: str, *, max_bytes: int | None = None, follow_redirects: bool = False
    ) -> Response:
        if url.endswith("/fail"):
            raise DownloadError("connection refused")
        body = PAGES.get(url)
        if body is None:
            return Response(url, 404, body=b"", content_type="text/html")
        return Response(url, 200, body=body, content_type="text/html", charset="utf-8")


def start_worker(threads: int = 2) -> tuple[Any, threading.Thread]:
    settings = Settings(
        seeds=["http://a.test/"], threads=threads, downloader=f"{__name__}:FakeDownloader"
    )
    settings.analyzer = "mpcrawler.worker.analyzer:HtmlAnalyzer"
    scope = Scope.from_seeds(settings.seeds, [], "hosts", [])
    master, child = multiprocessing.Pipe()
    worker = Worker(0, child, settings, scope)
    worker.master_gone = lambda: None  # its slots stop; an exit would end the test run, 0
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    return master, thread


def collect(master: Any, ids: set[int]) -> tuple[dict[int, PageResult], list[int]]:
    """Results until every request of ``ids`` came back (10 s at most); the
    ids whose download ended (each with when it started: the clock's past)."""
    results: dict[int, PageResult] = {}
    downloaded: list[int] = []
    deadline = time.monotonic() + 10
    while set(results) != ids:
        assert master.poll(max(0.0, deadline - time.monotonic())), (results, downloaded)
        message = master.recv()
        assert isinstance(message, Results)
        results.update((r.id, r) for r in message.results)
        for request_id, started in message.downloaded:
            assert isinstance(started, float) and started <= time.monotonic()
            downloaded.append(request_id)
    return results, downloaded


def test_a_worker_says_hello_then_turns_fetches_into_results() -> None:
    master, thread = start_worker(threads=2)
    hello = master.recv()
    assert isinstance(hello, Hello) and hello.slots == 2
    master.send(
        FetchBatch([Fetch(1, "http://a.test/", "page"), Fetch(2, "http://a.test/x", "page")])
    )
    results, downloaded = collect(master, {1, 2})
    assert sorted(downloaded) == [1, 2]  # each slot is announced free
    home = results[1]
    assert (home.status, home.error) == (200, None)
    assert home.outlinks == [("http://a.test/x", 0)]  # resolved, deduplicated, in scope only
    assert home.links == 2  # the off-site link counts, but is not sent
    assert results[2].outlinks == [("http://a.test/", 0), ("http://a.test/y", 0)]
    master.send(FetchBatch([Fetch(3, "http://a.test/x", "page")]))
    again, _ = collect(master, {3})
    assert again[3].links == 2 and again[3].outlinks == []  # this worker sent them already
    master.send(Stop())
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_failures_and_expired_requests_are_results_not_crashes() -> None:
    master, thread = start_worker(threads=1)
    master.recv()
    past = time.monotonic() - 1
    master.send(
        FetchBatch(
            [
                Fetch(1, "http://a.test/fail", "page"),
                Fetch(2, "http://a.test/late", "page", 0, past),
                Fetch(3, "http://a.test/missing", "page"),
            ]
        )
    )
    results, downloaded = collect(master, {1, 2, 3})
    assert (results[1].error, results[1].error_kind) == ("connection refused", "download")
    assert results[2].error_kind == EXPIRED and results[2].elapsed_ms is None
    assert results[3].status == 404
    assert sorted(downloaded) == [1, 2, 3]
    master.send(Stop())
    thread.join(timeout=10)


def test_a_status_means_the_same_whether_its_body_was_read_or_not() -> None:
    from mpcrawler.worker.fetches import (
        NOT_MODIFIED,
        PARSE,
        REDIRECT,
        SKIPPED,
        SLOW_DOWN,
        UNREAD,
        response_action,
    )

    moved = {"location": "/there"}
    for skipped in (None, "content type text/plain not accepted (--accept-type)"):
        assert response_action(304, {}, skipped) == NOT_MODIFIED
        assert response_action(429, {}, skipped) == SLOW_DOWN
        assert response_action(503, {"retry-after": "5"}, skipped) == SLOW_DOWN
        for status in (301, 302, 303, 307, 308):
            assert response_action(status, moved, skipped) == REDIRECT
    assert response_action(302, {}, None) == PARSE  # no Location: an ordinary page
    assert response_action(200, {}, None) == PARSE
    assert response_action(404, {}, None) == PARSE
    assert response_action(200, {}, "not accepted") == SKIPPED
    assert response_action(404, {}, "not accepted") == UNREAD
    assert response_action(500, {}, "not accepted") == UNREAD


def test_the_worker_is_what_its_render_threads_and_event_loop_use() -> None:
    """``worker.sides``: every member the render threads and the event loop
    use of a Worker (they import no Worker) is one of a real Worker's."""
    from mpcrawler.worker.sides import LoopSide, RenderSide

    settings = Settings(seeds=["http://a.test/"], downloader=f"{__name__}:FakeDownloader")
    settings.analyzer = "mpcrawler.worker.analyzer:HtmlAnalyzer"
    scope = Scope.from_seeds(settings.seeds, [], "hosts", [])
    _, child = multiprocessing.Pipe()
    worker = Worker(0, child, settings, scope)
    for side in (RenderSide, LoopSide):
        parts = [c for c in side.__mro__ if c.__module__ == "mpcrawler.worker.sides"]
        members = {n for c in parts for n in c.__annotations__} | {
            n for c in parts for n in vars(c) if not n.startswith("_")
        }
        assert {"analyze", "parse_lock"} <= members
        assert members and all(hasattr(worker, name) for name in members), side
    for downloader in worker.downloaders:
        downloader.close()
