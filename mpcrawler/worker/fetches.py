"""What a fetch asks of its download, and what its response means: pure
decisions of a worker, asked by its download threads
(:mod:`mpcrawler.worker.process`) and its event loop (:mod:`mpcrawler.worker.loop`).
"""

from __future__ import annotations

import time
from typing import Any

from ..messages import EXPIRED, Fetch, PageResult
from ..settings.worker import WorkerConfig
from ..web import sitemaps
from ..web.validators import conditional_headers
from .downloader import ROBOTS_MAX_BYTES

__all__ = [
    "NOT_MODIFIED",
    "PARSE",
    "REDIRECT",
    "SKIPPED",
    "SLOW_DOWN",
    "UNREAD",
    "fetch_call",
    "response_action",
]

_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
PARSE, NOT_MODIFIED, SLOW_DOWN, REDIRECT, SKIPPED, UNREAD = (
    "parse",
    "not modified",
    "slow down",
    "redirect",
    "skipped",
    "unread",
)


def response_action(status: int, headers: dict[str, str], skipped: str | None) -> str:
    """What a response means, its status first whatever its type: a 304, a
    429 or 503 (its Retry-After), a redirect with a Location are acted on
    whether their body was read or not (``skipped``: why not, --accept-type).
    A 2xx of a type not accepted is ``SKIPPED``; another status whose body
    was not read is ``UNREAD`` (its status is its record's error); the rest
    is parsed."""
    if status == 304:
        return NOT_MODIFIED
    if status in (429, 503):
        return SLOW_DOWN
    if status in _REDIRECT_CODES and headers.get("location"):
        return REDIRECT
    if skipped:
        return SKIPPED if 200 <= status < 300 else UNREAD
    return PARSE


def fetch_call(
    fetch: Fetch, settings: WorkerConfig, downloader: str
) -> tuple[PageResult, dict[str, Any] | None]:
    """The result of ``fetch`` so far, and the arguments of its download
    after its URL (None: it is not to start).  Pure: the threads and the
    event loop (:mod:`mpcrawler.worker.loop`) both ask it."""
    result = PageResult(fetch.id, fetch.url, fetch.kind, worker=downloader)
    if fetch.deadline and time.monotonic() > fetch.deadline:  # the node fences itself
        result.error, result.error_kind = "not started: its lease may be another's", EXPIRED
        return result, None
    if fetch.kind == "robots":
        return result, {"max_bytes": ROBOTS_MAX_BYTES, "follow_redirects": True}
    limit = sitemaps.MAX_BYTES if fetch.kind == "sitemap" else None
    if fetch.kind == "embed" and not settings.filter_embeds:
        limit = settings.max_bytes  # a limit given: every type is read
    call: dict[str, Any] = {"max_bytes": limit}
    prior = fetch.prior
    conditional = conditional_headers(prior.etag, prior.last_modified) if prior else {}
    if conditional:  # (only then: a plug-in that takes no headers fetches every page once)
        call["headers"] = conditional
    return result, call
