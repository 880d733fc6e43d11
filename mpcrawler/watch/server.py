"""``mpcrawler web``: the page of a crawl, its JSON and its buttons (aiohttp).

Routes::

    GET  /                  the page (page/index.html; its CSS and script under /static/)
    GET  /api/status        the figures, as JSON (reader.JobSource.status)
    GET  /api/events        the same, as Server-Sent Events, once a second
    GET  /api/pages?q=&limit=   the last records, newest first, or those matching q
    POST /api/control       {"command": NAME, "args": {...}}: sent through the
                            control path; answers {"id", "answer"} (the crawl's,
                            waited for up to ANSWER_WAIT seconds)

It runs in a process of its own (``mpcrawler web``, or the child that
``crawl --web-port`` starts), so however many views are open and however
slowly they read, the crawl's master does not serve them: it only writes
its live file once a second.  One status is read for every view at most
every STATUS_TTL seconds; a view whose socket takes more than SEND_TIMEOUT
seconds to take an event is dropped.

Safety (the ``guard`` middleware), before any handler runs:

- a token (``--token-file``) is asked of every request, as
  ``Authorization: Bearer TOKEN`` or Basic with the token as password (a
  browser asks for it once and sends it in that header; never in a URL);
  it is compared in constant time; without it: 401;
- without a token, only loopback may bind, and the ``Host`` header must
  name a loopback address or ``localhost`` (a DNS-rebinding page is refused);
- a POST must be JSON and, if it says where it comes from (``Origin``,
  ``Sec-Fetch-Site``), come from this page: no cross-site request acts;
- every answer forbids framing and inline script (Content-Security-Policy),
  so a title a crawled site wrote runs nothing even if it reached markup:
  the page's script puts every crawled text in ``textContent``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import ipaddress
import json
import logging
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web

from .reader import JobSource, SharedSource

__all__ = ["ANSWER_WAIT", "STATUS_TTL", "WebApp", "is_loopback", "make_app", "serve"]

log = logging.getLogger(__name__)

STATUS_TTL = 0.5  # seconds one status read serves every view
EVENT_INTERVAL = 1.0  # seconds between two events of a view
SEND_TIMEOUT = 10.0  # seconds a view may take to take an event
ANSWER_WAIT = 5.0  # seconds a button waits for the crawl's answer
MAX_BODY = 1 << 20  # bytes of a POST
SHUTDOWN_WAIT = 2.0  # seconds the requests in progress have to end at a stop
STATIC = {
    "app.js": "application/javascript",
    "app.css": "text/css",
}
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

Source = JobSource | SharedSource
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_loopback(address: str) -> bool:
    """``address`` is this machine's own (127.0.0.0/8, ::1, localhost)."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


class WebApp:
    """The server's state: the source it reads, the token, the status cache."""

    def __init__(self, source: Source, token: str | None) -> None:
        self.source = source
        self.token = token
        self._status: tuple[float, dict[str, Any]] | None = None
        self.views = 0  # event streams open
        self.closing = False  # stopping: the event streams end

    async def status(self) -> dict[str, Any]:
        """The status, read at most every STATUS_TTL seconds for every view."""
        now = time.monotonic()
        if self._status is None or now - self._status[0] >= STATUS_TTL:
            found = await asyncio.to_thread(self.source.status)
            self._status = (time.monotonic(), found)
        return self._status[1]

    def authorized(self, request: web.Request) -> bool:
        """The request carries the token (Bearer, or Basic's password)."""
        if self.token is None:
            return True
        given = request.headers.get("Authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() == "bearer":
            offered = value.strip()
        elif scheme.lower() == "basic":
            try:
                offered = base64.b64decode(value.strip(), validate=True).decode().partition(":")[2]
            except ValueError:
                return False
        else:
            return False
        return hmac.compare_digest(offered.encode(), self.token.encode())


def _host_allowed(request: web.Request) -> bool:
    """Without a token: the Host header names a loopback address."""
    host = request.headers.get("Host", "")
    name = host[1 : host.find("]")] if host.startswith("[") else host.rsplit(":", 1)[0]
    return is_loopback(name)


def _same_origin(request: web.Request) -> bool:
    """A POST comes from this page: its Origin (if given) is this server,
    and a browser's Sec-Fetch-Site (if given) says same-origin."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("Origin")
    if origin is None:
        return True  # a script (curl), which a browser's cross-site request never is
    return origin in (f"http://{request.host}", f"https://{request.host}")


def make_app(app_state: WebApp) -> web.Application:
    """The aiohttp application (see the module)."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not app_state.authorized(request):
            return web.Response(
                status=401,
                text="a token is needed (Authorization: Bearer TOKEN)\n",
                headers={"WWW-Authenticate": 'Basic realm="mpcrawler", charset="UTF-8"'},
            )
        if app_state.token is None and not _host_allowed(request):
            return web.Response(status=403, text="this server answers to a loopback name only\n")
        if request.method == "POST" and (
            request.content_type != "application/json" or not _same_origin(request)
        ):
            return web.Response(status=403, text="a command comes from this page, as JSON\n")
        response = await handler(request)
        response.headers.update(HEADERS)
        return response

    app = web.Application(middlewares=[guard], client_max_size=MAX_BODY)
    app["state"] = app_state
    app.router.add_get("/", index)
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/api/status", api_status)
    app.router.add_get("/api/events", api_events)
    app.router.add_get("/api/pages", api_pages)
    app.router.add_post("/api/control", api_control)
    return app


def _page_file(name: str) -> bytes:
    return resources.files(__package__).joinpath("page", name).read_bytes()


async def index(request: web.Request) -> web.Response:
    return web.Response(body=_page_file("index.html"), content_type="text/html", charset="utf-8")


async def static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC:
        raise web.HTTPNotFound(text="no such file\n")
    return web.Response(body=_page_file(name), content_type=STATIC[name], charset="utf-8")


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(data), status=status, content_type="application/json")


async def api_status(request: web.Request) -> web.Response:
    return _json(await request.app["state"].status())


async def api_events(request: web.Request) -> web.StreamResponse:
    """The status as Server-Sent Events, once a second, until the view goes
    (or takes more than SEND_TIMEOUT seconds to take one)."""
    state: WebApp = request.app["state"]
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", **HEADERS})
    await response.prepare(request)
    state.views += 1
    try:
        while not state.closing:
            data = json.dumps(await state.status())
            await asyncio.wait_for(response.write(f"data: {data}\n\n".encode()), SEND_TIMEOUT)
            await asyncio.sleep(EVENT_INTERVAL)
    except (TimeoutError, ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        state.views -= 1
    return response


async def api_pages(request: web.Request) -> web.Response:
    state: WebApp = request.app["state"]
    query = request.query.get("q", "")[:200]
    try:
        limit = min(200, max(1, int(request.query.get("limit", "50"))))
    except ValueError:
        return _json({"error": "limit must be a number"}, 400)
    return _json(await asyncio.to_thread(state.source.pages, query, limit))


async def api_control(request: web.Request) -> web.Response:
    """A button: the command checked, sent, and its answer waited for."""
    state: WebApp = request.app["state"]
    try:
        body = await request.json()
    except ValueError:
        return _json({"error": "not JSON"}, 400)
    if not isinstance(body, dict):
        return _json({"error": "not a JSON object"}, 400)
    name, args = body.get("command"), body.get("args", {})
    if not isinstance(name, str) or not isinstance(args, dict):
        return _json({"error": 'a command is {"command": NAME, "args": {...}}'}, 400)
    try:
        ident, now = await asyncio.to_thread(state.source.send, name, args)
    except ValueError as exc:
        return _json({"error": str(exc)}, 400)
    if now is not None:
        return _json({"id": ident, "answer": now})
    deadline = time.monotonic() + ANSWER_WAIT
    while time.monotonic() < deadline:
        answer = await asyncio.to_thread(state.source.answer, ident)
        if answer is not None:
            state._status = None  # the next status shows what it changed
            return _json({"id": ident, "answer": answer})
        await asyncio.sleep(0.1)
    return _json({"id": ident, "answer": f"sent; no answer within {ANSWER_WAIT:g} s"})


def read_token(path: str) -> str:
    """The token ``path`` holds (its first line); ValueError in one line."""
    try:
        with open(path, encoding="utf-8") as f:
            token = f.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the token file {path}: {exc}") from None
    if len(token) < 16:
        raise ValueError(f"the token in {path} is shorter than 16 characters")
    return token


def listening_socket(bind: str, port: int) -> socket.socket:
    """A socket listening on ``bind``:``port``; OSError if it cannot."""
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bind, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


def serve(
    source: Source,
    sock: socket.socket,
    token: str | None,
    ready: Callable[[str], None],
    parent: int | None = None,
) -> None:
    """Serve the page on ``sock`` until a stop signal (or, with ``parent``,
    until that process is gone); ``ready(url)`` once listening.  At a stop
    the requests in progress have SHUTDOWN_WAIT seconds to end: a button
    whose command stopped the crawl gets its answer."""
    state = WebApp(source, token)
    app = make_app(state)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        runner = web.AppRunner(
            app, handle_signals=False, access_log=None, shutdown_timeout=SHUTDOWN_WAIT
        )
        await runner.setup()
        site = web.SockSite(runner, sock)
        await site.start()
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        ready(f"http://{shown}:{port}/")
        while not stop.is_set() and (parent is None or _alive(parent)):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)
        state.closing = True  # the event streams end; a button waiting for its answer gets it
        await runner.cleanup()

    asyncio.run(main())


def _alive(pid: int) -> bool:
    """The process ``pid`` is still this one's parent (a crawl killed
    leaves its page: the page goes too)."""
    return os.getppid() == pid
