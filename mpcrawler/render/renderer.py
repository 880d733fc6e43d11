"""A worker's rendering (--render): which pages go to its browser, the
browser's requests made as the crawl's, and the rendered page analyzed.

The worker's parser asks ``reason`` of each page it has parsed; a page with
a reason is handed here (``put``) instead of being reported, and waits in a
bounded queue for the render threads (``run``, one a tab: --render-tabs).  Each has the page
rendered by the worker's one ``Browser`` (started at the first render), then
has the worker analyze the DOM after rendering (under the worker's parse
lock: one analysis at a time) and reports the page.  The worker's download
slots go on downloading meanwhile; when the queue is full, its parser waits,
then its downloads.

Each request the page makes is fetched by ``fetch`` in one of the browser's
fetch threads: the URL made canonical and checked by the crawl's rules as an
embed is (any host, the filters that hold for requisites), a permit asked of
the master (:mod:`mpcrawler.worker.permits`: the host's robots.txt, delay and
concurrency), the download made with a downloader of the worker's own kind
(the private-network rule, the byte cap, timeouts) and archived as a
request and response record.

What the record gets: ``rendered`` (true when the DOM after rendering was
read), ``render_reason`` (why), ``render_requests`` (the browser's requests
fetched), ``render_blocked`` (those not made); ``render_error`` when the
page kept what its HTML had (it did not finish in time, or failed in the
browser).  A browser that died or could not start makes the page a
transient ``render`` error: the master retries it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from ..messages import Grants, PageResult
from ..modules import Module, load_object
from ..worker.analyzer import Analysis, is_html
from ..worker.downloader import Downloader, DownloadError, Response
from ..worker.outbox import ENDED, WAKE, Outgoing
from ..worker.permits import PermitRefused, Permits, PermitWithdrawn
from .browser import MAX_FETCHERS, Browser, Render, Rendered, SubAnswer, SubRefused
from .signals import render_reason

if TYPE_CHECKING:
    from ..worker.sides import RenderSide

__all__ = ["CACHED_KINDS", "MAX_HOPS", "Rendering", "SubCache"]

MAX_HOPS = 10  # redirects a browser's request follows, as a browser would at most 20
CACHED_KINDS = frozenset({"script", "stylesheet", "font", "image"})  # static: SubCache
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class SubCache:
    """The worker's cache of the browser's static requests, as a browser
    keeps one: a script, stylesheet, font or image a page fetched is not
    fetched again for the next page rendered by this worker (each page has
    a fresh browser context, whose own cache is empty; and a routed request
    never uses it).  Only a 200 whose Cache-Control allows storing and
    reusing it, of at most MAX_ITEM bytes, MAX_BYTES in all, the least
    recently used dropped first.  It is archived once, when fetched."""

    MAX_ITEM = 2 << 20
    MAX_BYTES = 32 << 20

    def __init__(self) -> None:
        self._items: OrderedDict[str, SubAnswer] = OrderedDict()
        self._bytes = self.hits = 0
        self._lock = threading.Lock()

    def get(self, url: str) -> SubAnswer | None:
        with self._lock:
            answer = self._items.get(url)
            if answer is not None:
                self._items.move_to_end(url)
                self.hits += 1
            return answer

    def put(self, url: str, answer: SubAnswer) -> None:
        control = answer.headers.get("cache-control", "").lower()
        if (
            answer.status != 200
            or len(answer.body) > self.MAX_ITEM
            or any(word in control for word in ("no-store", "no-cache", "private", "max-age=0"))
        ):
            return
        with self._lock:
            if url in self._items:
                return
            self._items[url] = answer
            self._bytes += len(answer.body)
            while self._bytes > self.MAX_BYTES:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= len(dropped.body)


class Rendering(Module):
    """The worker's browser and what feeds it."""

    type_letter = "R"

    def __init__(self, worker: RenderSide) -> None:
        super().__init__()
        self.worker = worker
        settings = worker.settings
        self.settings = settings
        self.mode = settings.render
        self.permits = Permits(wake=lambda: worker.outbox.put(WAKE))
        self.tabs = settings.render_tabs  # render threads, each driving a tab of the browser
        self._running = self.tabs
        self._lock = threading.Lock()
        self.jobs: queue.Queue[tuple[PageResult, Response, int, str] | None] = queue.Queue(
            maxsize=worker.slots
        )
        self.browser: Browser | None = None  # started by the first render
        self.fetchers: queue.SimpleQueue[Downloader] = queue.SimpleQueue()
        for downloader in load_object(settings.downloader).for_slots(settings, MAX_FETCHERS):
            self.fetchers.put(downloader)
        self.rendered = self.kept_html = self.retried = 0
        self.cache = SubCache()

    # -------------------------------------------------------------- parser
    def reason(self, result: PageResult, response: Response, analysis: Analysis) -> str | None:
        """Why this parsed page is to be rendered (None: it is not): an HTML
        page of status 2xx, every one (always), or one whose HTML looks
        like an application's shell (auto: ``web.render.render_reason``)."""
        if result.kind != "page" or not 200 <= response.status < 300 or not is_html(response):
            return None
        if self.mode == "always":
            return "always"
        return render_reason(self.mode, analysis.signals)

    def put(self, job: tuple[PageResult, Response, int, str]) -> None:
        """A page for the browser."""
        self.jobs.put(job)

    def end(self) -> None:
        """No more pages: the render threads end when they are done."""
        for _ in range(self.tabs):
            self.jobs.put(None)

    def answer(self, grants: Grants) -> None:
        self.permits.answer(grants)

    # -------------------------------------------------------- render thread
    def run(self) -> None:
        """A render thread (one a tab): render each page handed over,
        analyze, report.  The last one out closes the browser."""
        worker = self.worker
        while (job := self.jobs.get()) is not None:
            result, response, depth, reason = job
            with self.track():
                try:
                    rendered, render = self.render(response)
                except Exception as exc:  # a bug here is this page's (transient) error
                    error = f"{type(exc).__name__}: {exc}"
                    rendered, render = Rendered(None, error, transient=True), Render(response.url)
            with worker.parse_lock:
                self.finish(result, response, depth, reason, rendered, render)
            worker.outbox.put(Outgoing(result))
        with self._lock:
            self._running -= 1
            last = not self._running
        if last:
            if self.browser is not None:
                self.browser.close()
            while True:
                try:
                    self.fetchers.get_nowait().close()
                except queue.Empty:
                    break
        worker.outbox.put(ENDED)

    def render(self, response: Response) -> tuple[Rendered, Render]:
        settings = self.settings
        with self._lock:
            if self.browser is None:
                self.browser = Browser(
                    settings.browser(),
                    fetch=self.fetch,
                    blocked=settings.render_blocked(),
                    timeout=settings.render_timeout,
                    restart_after=settings.render_restart,
                    memory_limit=settings.render_memory,
                    user_agent=settings.user_agent,
                    tabs=self.tabs,
                )
        render = Render(response.url)
        rendered = self.browser.render(render, response.status, response.headers, response.body)
        with render.lock:
            render.over = True
        self.permits.give_up(render.tokens)
        return rendered, render

    def finish(
        self,
        result: PageResult,
        response: Response,
        depth: int,
        reason: str,
        rendered: Rendered,
        render: Render,
    ) -> None:
        """The page's result from its rendering: the DOM after it analyzed,
        or (it could not be rendered) the HTML as downloaded, or a transient
        error (the browser failed)."""
        worker = self.worker
        result.cdxj += render.cdxj
        if render.warc_error is not None:
            worker.recorder.fail(result, render.warc_error)
            return
        if rendered.transient:
            self.retried += 1
            result.error, result.error_kind = f"render: {rendered.error}", "render"
            result.transient = True
            return
        fields: dict[str, Any] = {
            "rendered": rendered.html is not None,
            "render_reason": reason,
            "render_requests": render.requests,
            "render_blocked": render.blocked,
        }
        if rendered.html is None:
            self.kept_html += 1
            fields["render_error"] = rendered.error
            worker.analyze(result, response, depth, rendered=True)
        else:
            self.rendered += 1
            dom = Response(
                response.url,
                response.status,
                {**response.headers, "content-type": "text/html; charset=utf-8"},
                rendered.html.encode("utf-8", "surrogatepass"),
                "text/html",
                "utf-8",
            )
            worker.analyze(result, dom, depth, rendered=True, navigations=render.navigations)
        result.item.update(fields)

    # ------------------------------------------------------- fetch threads
    def fetch(self, url: str, kind: str, render: Render) -> SubAnswer:
        """Make one of the browser's requests, of resource type ``kind``, as
        the crawl's (see the module docstring), following redirects; or take
        it from this worker's cache (``SubCache``).  SubRefused if it is
        not made."""
        cached = self.cache.get(url)
        if cached is not None:
            return cached
        answer = self._fetch(url, render)
        if kind in CACHED_KINDS:
            self.cache.put(url, answer)
        return answer

    def _fetch(self, url: str, render: Render) -> SubAnswer:
        worker = self.worker
        for _ in range(MAX_HOPS + 1):
            canonical = worker.resolver.canonical(url, url)
            if canonical is None or worker.rules.embed_refusal(canonical) is not None:
                raise SubRefused(url)
            if render.over:
                raise SubRefused(url)
            try:
                request_id = self.permits.ask(canonical, render.tokens)
            except (PermitRefused, PermitWithdrawn):
                raise SubRefused(url) from None
            if render.over:
                self.permits.done(request_id, None)
                raise SubRefused(url)
            response = self._download(request_id, canonical, render)
            with render.lock:
                render.requests += 1
            location = response.headers.get("location")
            if response.status in _REDIRECTS and location:
                url = urljoin(canonical, location)
                continue
            return SubAnswer(response.status, response.headers, response.body)
        raise SubRefused(f"{url}: more than {MAX_HOPS} redirects")

    def _download(self, request_id: int, url: str, render: Render) -> Response:
        """Download ``url`` under the permit ``request_id``, archive it, and
        report it done to the master."""
        downloader = self.fetchers.get()
        started = time.monotonic()
        answer: dict[str, Any] = {}
        try:
            response = downloader.download(url, max_bytes=self.settings.max_bytes)
            answer = {"status": response.status, "retry_after": response.headers.get("retry-after")}
        except DownloadError as exc:
            answer = {"status": exc.status, "error_kind": exc.kind}
            self._archive(render, url, exc.exchange)
            raise SubRefused(url) from None
        except Exception:  # a user Downloader's bug: the browser sees a failure
            answer = {"error_kind": "downloader"}
            raise SubRefused(url) from None
        finally:
            self.fetchers.put(downloader)
            self.permits.done(request_id, started, **answer)
        self._archive(render, url, response.exchange)
        return response

    def _archive(self, render: Render, url: str, exchange: Any) -> None:
        warc = self.worker.recorder.files
        if warc is None or exchange is None or render.warc_error is not None:
            return
        try:
            written = warc.write_fetch(url, exchange)
        except OSError as exc:
            render.warc_error = exc
            return
        with render.lock:
            render.cdxj += written.cdxj

    def summary(self) -> dict[str, Any]:
        browser = self.browser
        return super().summary() | {
            "rendered": self.rendered,
            "kept_html": self.kept_html,
            "retried": self.retried,
            "browser_starts": browser.starts if browser else 0,
            "browser_crashes": browser.crashes if browser else 0,
            "timeouts": browser.timeouts if browser else 0,
            "browser_memory": browser.last_memory if browser else 0,
            "browser_peak_memory": browser.peak_memory if browser else 0,
            "browser_cpu_s": round(browser.cpu, 3) if browser else 0.0,
            "cache_hits": self.cache.hits,
        }
