"""The result handling: what a result, a lost request or a refusal becomes.

Each call returns an action, a small value the engine routes; nothing here
sends, records or writes.  The decisions themselves are the pure functions
of :mod:`mpcrawler.master.outcome` (retry, redirect, lost); this module
applies them to a request and keeps the one piece of state they need: the
URLs of the redirect chains in progress (``Chains``), which are not in the
frontier yet and must not be queued twice.

    Done(request, result) --on_result--> Submit | RetryAt | Robots | Probe | Finish
    Lost(request)         --on_lost----> Submit | Robots | Probe | Finish

A WARC failure is not an action: the page cannot be recorded without its
archive, so ``on_result`` raises (ArchiveError, or OSError for a full disk)
and the crawl stops, resumable.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import DISK_FULL, ArchiveError, FrontierUnavailable
from ..messages import EXPIRED, WARC_FAILED, PageResult
from ..settings import Settings
from ..web.filters import UrlRules
from ..web.urls import InvalidURL
from . import outcome
from .request import Request

__all__ = [
    "Action",
    "Chains",
    "Finish",
    "Probe",
    "ResultHandling",
    "RetryAt",
    "Robots",
    "Submit",
    "failure",
]


@dataclass(frozen=True, slots=True)
class Submit:
    """Hold ``request`` for its host again: a redirect hop, or a request
    that was not fetched (expired, lost with its worker)."""

    request: Request


@dataclass(frozen=True, slots=True)
class RetryAt:
    """Try ``request`` again at ``at`` (monotonic), holding no slot meanwhile."""

    request: Request
    at: float


@dataclass(frozen=True, slots=True)
class Robots:
    """A host's robots.txt answered (``result``), or failed to: ``failed``
    (``result`` None: it died with its worker)."""

    request: Request
    result: PageResult | None
    failed: bool


@dataclass(frozen=True, slots=True)
class Probe:
    """A host's soft-404 probe answered (``result``), or died with its
    worker (None): no record, no retry, no redirect followed."""

    request: Request
    result: PageResult | None


@dataclass(frozen=True, slots=True)
class Finish:
    """The chain of ``request`` is over with ``result``: record it."""

    request: Request
    result: PageResult
    extra: dict[str, Any] = field(default_factory=dict)


Action = Submit | RetryAt | Robots | Probe | Finish


def failure(request: Request, error: str, kind: str) -> PageResult:
    """The result of a request that will not be fetched."""
    return PageResult(request.id, request.url, error=error, error_kind=kind)


class Chains:
    """The URLs of the redirect chains in progress."""

    def __init__(self) -> None:
        self.urls: set[str] = set()

    def __contains__(self, url: str) -> bool:
        return url in self.urls

    def end(self, request: Request) -> None:
        """The chain of ``request`` ended (recorded or dropped)."""
        for hop in request.hops:
            self.urls.discard(hop)


class ResultHandling:
    """Applies the retry, redirect and crash rules to what comes back.
    ``is_seen`` is the frontier's, read-only (FrontierUnavailable when a
    shared frontier cannot answer)."""

    def __init__(self, settings: Settings, rules: UrlRules, is_seen: Callable[[str], bool]) -> None:
        self.settings = settings
        self.rules = rules
        self.is_seen = is_seen
        self.limits = outcome.Redirect(
            settings.requests.max_redirects, settings.filters.max_url_length
        )
        self.chains = Chains()

    def on_result(
        self, request: Request, result: PageResult, *, now: float, stopping: bool
    ) -> Action:
        """``now``: monotonic; ``stopping``: no retry is started any more."""
        if result.error_kind == WARC_FAILED:
            raise archive_failure(result)
        if result.error_kind == EXPIRED:  # not started in time (see fetch_deadline): again
            return Submit(request)
        if request.kind == "robots":
            return Robots(request, result, outcome.robots_failed(result))
        if request.kind == "probe":
            return Probe(request, result)
        s = self.settings
        if outcome.should_retry(result, request.attempts, s.requests.retries, stopping):
            request.attempts += 1
            retry_after = outcome.parse_retry_after(result.retry_after, time.time())
            delay = outcome.backoff(
                request.attempts, s.requests.retry_delay, retry_after, s.requests.max_retry_after
            )
            return RetryAt(request, now + delay)
        if not result.location:
            return Finish(request, result)
        return self._redirect(request, result, now)

    def on_lost(self, request: Request) -> Action:
        """``request`` died with its worker: again, up to a limit."""
        if request.kind == "robots":  # a failed robots.txt fetch; the scheduler counts those
            return Robots(request, None, True)
        if request.kind == "probe":
            return Probe(request, None)
        request.crashes += 1
        error = outcome.lost_verdict(request.crashes)
        if error is None:
            return Submit(request)
        return Finish(request, failure(request, error, "worker_crash"))

    def _redirect(self, request: Request, result: PageResult, now: float) -> Action:
        """Follow the redirect of ``result`` (its Location resolved against
        the URL that answered): the next hop, or the chain's record saying
        why not."""
        location = result.location or ""
        try:
            target = self.rules.canonical(location, request.url)
        except InvalidURL as exc:
            return self._not_followed(request, result, location, exc.reason)
        try:
            seen = target in self.chains or self.is_seen(target)
        except FrontierUnavailable:  # fetch this hop again once Redis is back
            return RetryAt(request, now + 1.0)
        rule = self.rules.refusal(target)
        reason = outcome.redirect_refusal(target, request, self.limits, rule, seen)
        if rule is not None and reason == outcome.rule_refusal(rule):
            result.dropped.append((target, rule))  # counted, and logged with --rejected-log
        if reason == "already seen":
            extra = {"redirect_to": target, "note": "redirect target already seen"}
            return Finish(request, result, extra)
        if reason is not None:
            return self._not_followed(request, result, target, reason)
        self.chains.urls.add(target)
        return Submit(request.hop(target))

    @staticmethod
    def _not_followed(request: Request, result: PageResult, target: str, reason: str) -> Finish:
        result.error, result.error_kind = f"redirect not followed: {reason}", "redirect"
        return Finish(request, result, {"redirect_to": target})


def archive_failure(result: PageResult) -> Exception:
    """What stops the crawl when a page's WARC records could not be written:
    a full disk as such (exit 1, resumable), anything else as ArchiveError."""
    error = result.warc_errno or errno.EIO
    if error in DISK_FULL:
        return OSError(error, result.error)
    return ArchiveError(
        f"{result.error} (for {result.url}); nothing of that page was recorded: "
        "mend the cause and rerun the same command to resume"
    )
