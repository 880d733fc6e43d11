"""The worker's browser (--render): headless Chromium driven by Playwright.

One per worker, started at its first render, driving one page at a time
from an event loop of its own thread; ``render`` is called from the
worker's render thread and blocks until the page is rendered, failed or out
of time.  Nothing the browser asks for reaches the network by itself: every
request of the page is routed here (``BrowserContext.route``).

- The document itself is the response the worker already downloaded: it is
  fulfilled from it, never fetched twice.
- Every other request (scripts, XHR and fetch, stylesheets, frames) is
  made by ``fetch``, the worker's, in a thread of a small pool: it asks the
  master for a permit (politeness, robots.txt), downloads with the crawl's
  own downloader (the address rule, the byte cap) and archives the exchange.
  A redirect is followed there, each hop with a permit of its own (Chromium
  does not follow a redirect a route fulfils).
- Resource types in ``blocked`` are refused at once; so are requests that
  are not GET, navigations of the page away from itself (their URLs become
  the page's links) and everything of a popup, which is closed.

The browser is started anew after ``restart_after`` renders, or when its
processes hold more than ``memory_limit`` bytes; one that dies, is killed or
does not answer is replaced at the next render, and the page it was
rendering is a transient failure (the master retries it).  A page that does
not finish within ``timeout`` seconds is given up (``Rendered.timed_out``).
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

__all__ = ["Browser", "Render", "Rendered", "SubAnswer", "SubRefused", "tree_memory"]

log = logging.getLogger(__name__)

IDLE_WAIT = 5.0  # seconds after the load event to wait for the network to go quiet
CLOSE_WAIT = 5.0  # seconds to let a context or the browser close before killing it
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
    deadline: float  # monotonic
    requests: int = 0  # fetched for it
    blocked: int = 0  # refused by type, method, rule or robots.txt
    navigations: list[str] = field(default_factory=list)  # where the page tried to go
    cdxj: list[str] = field(default_factory=list)  # index lines of its requests' records
    warc_error: OSError | None = None  # its requests could not be archived
    tokens: set[int] = field(default_factory=set)  # permits it waits for
    over: bool = False  # it no longer wants its requests
    lock: threading.Lock = field(default_factory=threading.Lock)


class Rendered(NamedTuple):
    """What became of a render: the DOM after it, or why there is none."""

    html: str | None
    error: str | None = None
    transient: bool = False  # the browser failed, not the page: worth a retry
    timed_out: bool = False


class Browser:
    """Headless Chromium, started lazily; ``render`` blocks its caller."""

    def __init__(
        self,
        executable: str,
        *,
        fetch: Callable[[str, Render], SubAnswer],
        blocked: frozenset[str],
        timeout: float,
        restart_after: int,
        memory_limit: int,
        user_agent: str,
    ) -> None:
        self.executable = executable
        self.fetch = fetch
        self.blocked = blocked
        self.timeout = timeout
        self.restart_after = restart_after
        self.memory_limit = memory_limit
        self.user_agent = user_agent
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="browser", daemon=True)
        self.thread.start()
        self.fetchers = concurrent.futures.ThreadPoolExecutor(MAX_FETCHERS, "browser-fetch")
        self._playwright: Any = None
        self._browser: Any = None
        self.renders_since_start = 0
        # counters (the worker's Renderer summary)
        self.starts = self.crashes = self.timeouts = 0
        self.peak_memory = 0
        self.last_memory = 0

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
            browser = await self._started()
        except Exception as exc:
            await self._stop()
            return Rendered(None, f"the browser cannot start: {_one_line(exc)}", transient=True)
        context = None
        try:
            context = await browser.new_context(
                user_agent=self.user_agent, accept_downloads=False, service_workers="block"
            )
            page = await context.new_page()
            page.on("popup", lambda popup: asyncio.ensure_future(_close_quietly(popup)))
            document = _Document(status, headers, body)
            await context.route("**/*", lambda route: self._route(route, render, page, document))
            remaining = render.deadline - time.monotonic()
            html = await asyncio.wait_for(self._load(page, render.url), max(0.1, remaining))
            return Rendered(html)
        except TimeoutError:
            self.timeouts += 1
            return Rendered(
                None, f"the page did not finish rendering in {self.timeout:g} s", timed_out=True
            )
        except Exception as exc:
            if browser.is_connected():  # the page's failure (it crashed, it was closed)
                return Rendered(None, f"the page failed in the browser: {_one_line(exc)}")
            self.crashes += 1
            log.warning("the browser died while rendering %s: %s", render.url, _one_line(exc))
            return Rendered(None, f"the browser died: {_one_line(exc)}", transient=True)
        finally:
            with render.lock:
                render.over = True
            if context is not None and not await _closed(context.close(), CLOSE_WAIT):
                log.warning("a browser context did not close in %.0f s: restarting", CLOSE_WAIT)
                await self._stop()
            await self._after_render()

    async def _load(self, page: Any, url: str) -> str:
        """The page loaded, its network quiet (for IDLE_WAIT at most): its DOM."""
        await page.goto(url, wait_until="load", timeout=0)
        with contextlib.suppress(Exception):  # a page that keeps polling is read as it is
            await page.wait_for_load_state("networkidle", timeout=IDLE_WAIT * 1000)
        html: str = await page.content()
        return html

    async def _route(self, route: Any, render: Render, page: Any, document: _Document) -> None:
        """Where a request of the page goes: the document, the crawl's
        downloader, or nowhere."""
        request = route.request
        try:
            if request.is_navigation_request():
                try:
                    frame = request.frame
                except Exception:  # a popup's, before its frame exists
                    await route.abort("blockedbyclient")
                    return
                if frame.page is not page:  # a popup's
                    await route.abort("blockedbyclient")
                    return
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
                answer = await loop.run_in_executor(self.fetchers, self.fetch, request.url, render)
            except SubRefused:
                render.blocked += 1
                await route.abort("blockedbyclient")
                return
            await route.fulfill(status=answer.status, headers=answer.headers, body=answer.body)
        except Exception as exc:  # the page or the browser went away meanwhile
            log.debug("a browser request of %s: %s", render.url, _one_line(exc))

    async def _started(self) -> Any:
        """The browser, started if it is not running."""
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        await self._stop()
        from playwright.async_api import async_playwright

        self._playwright = await async_playwright().start()
        args = ["--disable-dev-shm-usage", "--disable-gpu", "--mute-audio"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium's sandbox refuses root
        self._browser = await self._playwright.chromium.launch(
            executable_path=self.executable, headless=True, args=args
        )
        self.starts += 1
        self.renders_since_start = 0
        return self._browser

    async def _after_render(self) -> None:
        """Count the render; start anew past the count or the memory bound."""
        self.renders_since_start += 1
        memory = tree_memory(os.getpid())
        self.last_memory, self.peak_memory = memory, max(self.peak_memory, memory)
        if self.renders_since_start >= self.restart_after or memory > self.memory_limit:
            await self._stop()

    async def _stop(self) -> None:
        """Close the browser and its driver; kill them if they do not close."""
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        if browser is not None and not await _closed(browser.close(), CLOSE_WAIT):
            _kill_children()
        if playwright is not None and not await _closed(playwright.stop(), CLOSE_WAIT):
            _kill_children()


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


def tree_memory(pid: int) -> int:
    """The memory of the processes below ``pid``, in bytes: the sum of their
    proportional set sizes (PSS), so that the libraries and shared memory
    Chromium's processes share count once, not once per process (their RSS
    summed counts them in each: 0.9 GB for a browser whose PSS is a third)."""
    total = 0
    for child in descendants(pid):
        try:
            with open(f"/proc/{child}/smaps_rollup", "rb") as rollup:
                for line in rollup:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) * 1024  # kB
                        break
        except (OSError, IndexError, ValueError):
            continue
    return total


def _kill_children() -> None:
    """Kill what is left of the browser and its driver (this worker's children)."""
    import signal

    for child in descendants(os.getpid()):
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
