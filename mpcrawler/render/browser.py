"""The worker's browser (--render): headless Chromium driven by Playwright.

One per worker, started at its first render, driving one page at a time
from an event loop of its own thread; ``render`` is called from the
worker's render thread and blocks until the page is rendered, failed or out
of time.  Nothing the browser asks for reaches the network by itself: every
request of the page is routed here (``BrowserContext.route``).

- The document itself is the response the worker already downloaded: it is
  fulfilled from it, never fetched twice.
- Every other request (scripts, XHR and fetch, stylesheets, frames) is
  made by ``fetch`` (URL, resource type, render), the worker's, in a thread
  of a small pool: it asks the
  master for a permit (politeness, robots.txt), downloads with the crawl's
  own downloader (the address rule, the byte cap) and archives the exchange.
  A redirect is followed there, each hop with a permit of its own (Chromium
  does not follow a redirect a route fulfils).
- Resource types in ``blocked`` are refused at once; so are requests that
  are not GET, navigations of the page away from itself (their URLs become
  the page's links) and everything of a popup, which is closed.

The browser is started anew after ``restart_after`` renders, or when its
processes hold more than ``memory_limit`` bytes (after MIN_RENDERS at
least: a bound set below what a fresh browser holds does not restart it at
every page); one that dies, is killed or does not answer is replaced at
the next render, and the page it was rendering is a transient failure (the
master retries it).  A page that does
not finish within ``timeout`` seconds is given up (``Rendered.error``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["Browser", "Render", "Rendered", "SubAnswer", "SubRefused", "tree_usage"]

log = logging.getLogger(__name__)

IDLE_WAIT = 5.0  # seconds after the load event to wait for the page's requests to go quiet
QUIET = 0.3  # seconds with none in flight: the page is done (Playwright's networkidle: 0.5)
CLOSE_WAIT = 5.0  # seconds to let a context or the browser close before killing it
MIN_RENDERS = 10  # a browser past the memory bound renders this many before it is restarted
MAX_FETCHERS = 8  # threads that make one page's requests at once (politeness limits them more)
_DROPPED_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})


class SubAnswer(NamedTuple):
    """The answer to a browser's request, as fetched by the worker."""

    status: int
    headers: dict[str, str]
    body: bytes


class SubRefused(Exception):
    """The worker does not make this request (a rule, robots.txt, a failure):
    the browser sees it fail."""


@dataclass
class Render:
    """One page being rendered: what its requests did, shared by the
    browser's loop and the threads that fetch for it."""

    url: str
    requests: int = 0  # fetched for it
    blocked: int = 0  # refused by type, method, rule or robots.txt
    navigations: list[str] = field(default_factory=list)  # where the page tried to go
    cdxj: list[str] = field(default_factory=list)  # index lines of its requests' records
    warc_error: OSError | None = None  # its requests could not be archived
    tokens: set[int] = field(default_factory=set)  # permits it waits for
    pending: set[Any] = field(default_factory=set)  # its requests in flight, as its tab says
    last_activity: float = 0.0  # when the last of them ended (monotonic)
    over: bool = False  # it no longer wants its requests
    lock: threading.Lock = field(default_factory=threading.Lock)


class Rendered(NamedTuple):
    """What became of a render: the DOM after it, or why there is none."""

    html: str | None
    error: str | None = None
    transient: bool = False  # the browser failed, not the page: worth a retry


class Browser:
    """Headless Chromium, started lazily; ``render`` blocks its caller."""

    def __init__(
        self,
        executable: str,
        *,
        fetch: Callable[[str, str, Render], SubAnswer],
        blocked: frozenset[str],
        timeout: float,
        restart_after: int,
        memory_limit: int,
        user_agent: str,
        tabs: int = 1,
    ) -> None:
        self.executable = executable
        self.fetch = fetch
        self.blocked = blocked
        self.timeout = timeout
        self.restart_after = restart_after
        self.memory_limit = memory_limit
        self.user_agent = user_agent
        self.tabs = tabs  # pages rendered at once
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="browser", daemon=True)
        self.thread.start()
        self.fetchers = concurrent.futures.ThreadPoolExecutor(MAX_FETCHERS, "browser-fetch")
        self._playwright: Any = None
        self._browser: Any = None
        self._context: Any = None
        self._free: list[Any] = []  # tabs open and not rendering
        self._renders: dict[Any, tuple[Render, _Document]] = {}  # by the tab rendering it
        self._tabs = 0  # tabs open
        self._changed: asyncio.Condition | None = None  # a tab freed, the browser retired
        self._retiring = False  # restart once the renders in flight are over
        self.renders_since_start = 0
        # counters (the worker's Renderer summary)
        self.starts = self.crashes = self.timeouts = 0
        self.peak_memory = self.last_memory = 0
        self.cpu_before = self.cpu_now = 0.0

    # ---------------------------------------------------------------- api
    def render(self, render: Render, status: int, headers: dict[str, str], body: bytes) -> Rendered:
        """Render the page whose response the worker holds (its ``render.url``)."""
        future = asyncio.run_coroutine_threadsafe(
            self._render(render, status, headers, body), self.loop
        )
        return future.result()

    def close(self) -> None:
        """Stop the browser and its loop."""
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(2 * CLOSE_WAIT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=CLOSE_WAIT)
        self.fetchers.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------ the loop
    async def _render(
        self, render: Render, status: int, headers: dict[str, str], body: bytes
    ) -> Rendered:
        try:
            page = await self._tab()
        except Exception as exc:
            await self._retire()
            return Rendered(None, f"the browser cannot start: {_one_line(exc)}", transient=True)
        self._renders[page] = (render, _Document(status, headers, body))
        try:
            # The time limit counts from here: not a browser's start, nor a wait for a tab.
            html = await asyncio.wait_for(self._load(page, render), self.timeout)
            return Rendered(html)
        except TimeoutError:
            self.timeouts += 1
            return Rendered(None, f"the page did not finish rendering in {self.timeout:g} s")
        except Exception as exc:
            if self._browser is not None and self._browser.is_connected():
                return Rendered(None, f"the page failed in the browser: {_one_line(exc)}")
            self.crashes += 1
            log.warning("the browser died while rendering %s: %s", render.url, _one_line(exc))
            return Rendered(None, f"the browser died: {_one_line(exc)}", transient=True)
        finally:
            del self._renders[page]
            with render.lock:
                render.over = True
            await self._leave(page)
            await self._after_render()

    async def _load(self, page: Any, render: Render) -> str:
        """The page loaded and its requests quiet (QUIET seconds with none
        in flight, IDLE_WAIT at most): its DOM."""
        await page.goto(render.url, wait_until="load", timeout=0)
        render.last_activity = time.monotonic()  # quiet from here
        waited_until = time.monotonic() + IDLE_WAIT
        while time.monotonic() < waited_until:  # a page that keeps polling is read as it is
            if not render.pending and time.monotonic() - render.last_activity >= QUIET:
                # What the page's own scripts have in flight, counted as they
                # call fetch or send an XHR: a request whose event has not
                # reached this process yet (a busy machine) is counted there.
                pending, idle_ms = await page.evaluate(_IN_FLIGHT)
                if not pending and idle_ms >= QUIET * 1000:
                    break
            await asyncio.sleep(QUIET / 5)
        html: str = await page.content()
        return html

    async def _leave(self, page: Any) -> None:
        """The page is done with: its scripts stopped (about:blank); a page
        that does not let go is closed, and the browser restarted if even
        that does not answer."""
        if self._browser is not None and self._browser.is_connected():
            if await _closed(page.goto("about:blank", timeout=0), CLOSE_WAIT):
                self._free.append(page)
                return
            if not await _closed(page.close(run_before_unload=False), CLOSE_WAIT):
                log.warning("a browser tab did not close in %.0f s: restarting", CLOSE_WAIT)
                self._retiring = True
        self._tabs -= 1

    async def _route(self, route: Any) -> None:
        """Where a request of the page goes: the document, the crawl's
        downloader, or nowhere."""
        request = route.request
        try:
            try:
                page = request.frame.page
            except Exception:  # a popup's navigation, before its frame exists
                await route.abort("blockedbyclient")
                return
            current = self._renders.get(page)
            if current is None:  # a popup's, or a tab between renders: nothing is fetched
                await route.abort("blockedbyclient")
                return
            render, document = current
            if request.is_navigation_request():
                frame = request.frame
                if frame is page.main_frame:
                    if not document.served:
                        document.served = True
                        await route.fulfill(
                            status=document.status, headers=document.headers, body=document.body
                        )
                    else:  # the page goes elsewhere: a link, not followed here
                        render.navigations.append(request.url)
                        await route.abort("aborted")
                    return
            if (
                request.method != "GET"
                or request.resource_type in self.blocked
                or not request.url.startswith(("http://", "https://"))
            ):
                render.blocked += 1
                await route.abort("blockedbyclient")
                return
            loop = asyncio.get_running_loop()
            try:
                answer = await loop.run_in_executor(
                    self.fetchers, self.fetch, request.url, request.resource_type, render
                )
            except SubRefused:
                render.blocked += 1
                await route.abort("blockedbyclient")
                return
            await route.fulfill(
                status=answer.status, headers=fulfil_headers(answer.headers), body=answer.body
            )
        except Exception as exc:  # the page or the browser went away meanwhile
            log.debug("a browser request of %s: %s", request.url, _one_line(exc))

    async def _tab(self) -> Any:
        """A tab to render in: a free one, or a new one while there are fewer
        than ``tabs``; the browser started if it is not running (and not
        while it is being retired: the renders in flight end first)."""
        if self._changed is None:
            self._changed = asyncio.Condition()
        async with self._changed:
            await self._changed.wait_for(
                lambda: not self._retiring and (self._free or self._tabs < self.tabs)
            )
            if self._browser is None or not self._browser.is_connected():
                await self._start()
            if self._free:
                return self._free.pop()
            self._tabs += 1
        try:
            page = await self._context.new_page()
        except Exception:
            self._tabs -= 1
            raise
        page.on("popup", lambda popup: asyncio.ensure_future(_close_quietly(popup)))
        # The page's requests in flight, as the page reports them: in order
        # with its load event (a request the page made before it loaded is
        # counted before ``goto`` returns), which the route's calls are not.
        page.on("request", lambda request: self._activity(page, request, True))
        page.on("requestfinished", lambda request: self._activity(page, request, False))
        page.on("requestfailed", lambda request: self._activity(page, request, False))
        return page

    def _activity(self, page: Any, request: Any, started: bool) -> None:
        """A request of ``page`` started or ended (one of an earlier render
        of the tab that ends late is not this render's)."""
        current = self._renders.get(page)
        if current is None:
            return
        render = current[0]
        if started:
            render.pending.add(request)
        elif request in render.pending:
            render.pending.discard(request)
        else:
            return
        render.last_activity = time.monotonic()

    async def _start(self) -> None:
        """Start the browser, and its one context: every tab's render shares
        it (a new context a page cost Chromium a new renderer process: 1.1 s
        of CPU a page against 0.2 s), so cookies and storage last as a
        visitor's would, until the browser is restarted."""
        await self._stop()
        from playwright.async_api import async_playwright

        self._playwright = await async_playwright().start()
        args = ["--disable-dev-shm-usage", "--disable-gpu", "--mute-audio"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium's sandbox refuses root
        self._browser = await self._playwright.chromium.launch(
            executable_path=self.executable, headless=True, args=args
        )
        self._context = await self._browser.new_context(
            user_agent=self.user_agent, accept_downloads=False, service_workers="block"
        )
        await self._context.add_init_script(_COUNT_REQUESTS)
        await self._context.route("**/*", self._route)
        self.starts += 1
        self.renders_since_start = 0

    async def _after_render(self) -> None:
        """Count the render; retire the browser past the count or the memory
        bound, or if it died (the next render starts a new one)."""
        self.renders_since_start += 1
        memory, cpu = tree_usage(os.getpid())
        self.last_memory, self.peak_memory = memory, max(self.peak_memory, memory)
        self.cpu_now = cpu
        dead = self._browser is None or not self._browser.is_connected()
        full = memory > self.memory_limit and self.renders_since_start >= MIN_RENDERS
        if dead or full or self.renders_since_start >= self.restart_after:
            self._retiring = True
        await self._retire()

    async def _retire(self) -> None:
        """A browser being retired is stopped once no render is in flight."""
        assert self._changed is not None
        async with self._changed:
            if self._retiring and not self._renders:
                await self._stop()
                self._retiring = False
            self._changed.notify_all()

    @property
    def cpu(self) -> float:
        """Seconds of CPU the browsers and their drivers have used, up to the last render."""
        return self.cpu_before + self.cpu_now

    async def _stop(self) -> None:
        """Close the browser and its driver; kill them if they do not close."""
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = self._context = None
        self._free, self._tabs = [], 0
        if browser is not None:  # what it used, kept past its end
            self.cpu_before += tree_usage(os.getpid())[1]
            self.cpu_now = 0.0
        if browser is not None and not await _closed(browser.close(), CLOSE_WAIT):
            _kill_children()
        if playwright is not None and not await _closed(playwright.stop(), CLOSE_WAIT):
            _kill_children()


# Run in every document before its own scripts: counts the fetch and XHR
# requests its scripts have in flight, and when the last one started or ended.
_COUNT_REQUESTS = """(() => {
  const state = { pending: 0, last: performance.now() };
  Object.defineProperty(window, "__mpcrawlerRequests", { value: state });
  const start = () => { state.pending += 1; state.last = performance.now(); };
  const end = () => { state.pending -= 1; state.last = performance.now(); };
  const fetch = window.fetch;
  if (fetch) {
    window.fetch = function (...args) {
      start();
      return fetch.apply(this, args).finally(end);
    };
  }
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    start();
    this.addEventListener("loadend", end, { once: true });
    return send.apply(this, args);
  };
})();"""
_IN_FLIGHT = """() => {
  const state = window.__mpcrawlerRequests;
  return state ? [state.pending, performance.now() - state.last] : [0, 1e9];
}"""


@dataclass
class _Document:
    """The downloaded response the page's document is fulfilled from."""

    status: int
    headers: dict[str, str]
    body: bytes
    served: bool = False

    def __post_init__(self) -> None:
        self.headers = fulfil_headers(self.headers)


def fulfil_headers(headers: dict[str, str]) -> dict[str, str]:
    """A downloaded response's headers as the browser gets them: the body is
    decoded already, so neither its encoding nor its length are sent."""
    return {k: v for k, v in headers.items() if k.lower() not in _DROPPED_HEADERS}


async def _closed(closing: Any, timeout: float) -> bool:
    """Did ``closing`` finish within ``timeout`` (any error counts as closed)?"""
    try:
        await asyncio.wait_for(closing, timeout)
    except TimeoutError:
        return False
    except Exception:
        return True
    return True


async def _close_quietly(page: Any) -> None:
    with contextlib.suppress(Exception):
        await page.close()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _children(pid: int) -> dict[int, list[int]]:
    """Every process's children, by parent (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (the browser and its driver, in a worker)."""
    children, found, todo = _children(pid), [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def tree_usage(pid: int) -> tuple[int, float]:
    """The memory and CPU time of the processes below ``pid``: bytes, the
    sum of their proportional set sizes (PSS, so that the libraries and
    shared memory Chromium's processes share count once, not once per
    process: their RSS summed is three times as much), and seconds of CPU,
    theirs and that of the children they waited for."""
    memory, ticks = 0, 0
    for child in descendants(pid):
        try:
            with open(f"/proc/{child}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
            with open(f"/proc/{child}/smaps_rollup", "rb") as rollup:
                for line in rollup:
                    if line.startswith(b"Pss:"):
                        memory += int(line.split()[1]) * 1024  # kB
                        break
        except (OSError, IndexError, ValueError):
            continue
    return memory, ticks / os.sysconf("SC_CLK_TCK")


def _kill_children() -> None:
    """Kill what is left of the browser and its driver (this worker's children)."""
    import signal

    for child in descendants(os.getpid()):
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
