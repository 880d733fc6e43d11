"""Robots: what becomes, in the master, of a host's robots.txt answer.

The result handling turns a robots.txt fetch that ended into a ``Robots``
action (:mod:`mpcrawler.master.results`); the engine hands it here, and
this is the one place that acts on it:

- the host takes the rules, or counts the failure (``take_answer``, on
  the decision of ``robots_verdict``, a pure function), and the scheduler
  releases or gives up its held requests (``Scheduler.wake``);
- an answer (not a 5xx, not a failure) is kept in the job dir's copy for
  ``check-url`` (:class:`~mpcrawler.robots.cache.RobotsCache`);
- the ``Sitemap:`` lines it names (``MAX_ROBOTS_SITEMAPS`` at most, in
  scope) are queued as sitemaps, and those the URL rules refuse counted.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import NamedTuple

from ..master.outcome import backoff
from ..master.request import Request
from ..master.results import Robots
from ..master.scheduler import MAX_CRAWL_DELAY, Scheduler
from ..master.settle import Settling
from ..settings import Settings
from ..web.filters import UrlRules
from ..web.urls import InvalidURL
from .cache import RobotsCache
from .rules import RobotsRules

__all__ = [
    "MAX_ROBOTS_SITEMAPS",
    "RobotsAnswers",
    "Verdict",
    "robots_verdict",
    "sitemaps_named",
    "take_answer",
]

log = logging.getLogger(__name__)

MAX_ROBOTS_SITEMAPS = 50  # Sitemap: lines read from one robots.txt
ROBOTS_ATTEMPTS = 3  # a host whose robots.txt fails this often is given up
# Failures no retry can mend: a host whose robots.txt fails so is given up at once.
PERMANENT_FAILURES = frozenset({"tls", "dns", "blocked_address"})


class Verdict(NamedTuple):
    """What a robots.txt answer makes of its host: ``rules`` (the answer
    is the host's robots.txt), ``open`` (no usable one: no restrictions),
    ``kept`` (a failure; the copy it had stands until ``wait`` runs out),
    ``retry`` (a failure; its URLs wait ``wait`` seconds for another try)
    or ``failed`` (the host is given up)."""

    outcome: str
    wait: float = 0.0


def robots_verdict(
    status: int | None,
    has_body: bool,
    failed: bool,
    error_kind: str | None,
    failures: int,
    refresh: bool,
    scheduler: Scheduler,
) -> Verdict:
    """The decision for one answer (``failures``: the host's failures
    before it; ``refresh``: the host had a copy, expired).  4xx allows
    everything; 5xx or a network failure disallows the host for now and
    retries later, from ``robots_retry_delay`` doubling; after
    ROBOTS_ATTEMPTS failures the host is given up, and at once after a
    failure no retry can mend (PERMANENT_FAILURES: TLS, a name that does
    not resolve, a blocked address).  A connection that fails (refused,
    reset, unreachable) is tried again soon, as a page would be
    (``retries`` times, from ``retry_delay`` doubling)."""
    if status is not None and 200 <= status < 300 and has_body:
        return Verdict("rules")
    if not (failed or status is None or status >= 500):
        return Verdict("open")  # 3xx left over, 4xx
    failures += 1
    permanent = error_kind in PERMANENT_FAILURES
    first = scheduler.robots_retry_delay
    if error_kind == "connection":  # refused, reset, unreachable: try soon
        permanent = failures > scheduler.retries  # every time: give up
        first = scheduler.retry_delay
    wait = backoff(failures, first, None, math.inf)  # as a page's retry
    if refresh:  # unreachable: its copy stands until the next try (RFC 9309 2.4)
        return Verdict("kept", min(wait, scheduler.robots_ttl))
    if permanent or failures >= ROBOTS_ATTEMPTS:
        return Verdict("failed")
    return Verdict("retry", wait)


def take_answer(
    scheduler: Scheduler,
    request: Request,
    status: int | None,
    body: str | None,
    failed: bool,
    error: str | None = None,
    error_kind: str | None = None,
) -> list[str]:
    """Feed a robots.txt answer back to its host (``robots_verdict``
    decides) and wake it; its ``Sitemap:`` lines.  The URLs of a host given
    up are refused with the cause at the next dispatch."""
    host = scheduler.hosts[request.host]
    now = scheduler.clock()
    refresh = host.robots_expires < math.inf  # an expired copy, fetched again
    verdict = robots_verdict(
        status, body is not None, failed, error_kind, host.robots_failures, refresh, scheduler
    )
    outcome, wait = verdict
    if outcome in ("rules", "open"):
        host.robots = (
            RobotsRules.parse(body or "", scheduler.user_agent) if outcome == "rules" else None
        )
        host.robots_state = "ready"
        host.robots_failures, host.robots_expires = 0, now + scheduler.robots_ttl
        crawl_delay = host.robots.crawl_delay if host.robots is not None else 0
        if crawl_delay:  # the whole group: one server behind several names
            group = host.group
            group.crawl_delay = max(group.crawl_delay, min(crawl_delay, MAX_CRAWL_DELAY))
            scheduler.table.politeness(group)  # one at a time, spaced by it
        scheduler.wake(host)
        return list(host.robots.sitemaps) if host.robots is not None else []
    host.robots_failures += 1
    host.robots_error = error or (f"HTTP {status}" if status else "failed")
    host.robots_error_kind = error_kind or "robots"
    why = (host.key, host.robots_error)
    if outcome == "kept":
        log.warning(
            "robots.txt of %s could not be fetched again (%s); its copy stands, "
            "and is tried again in %.0f s",
            *why,
            wait,
        )
        host.robots_state, host.robots_expires = "ready", now + wait
    elif outcome == "failed":
        times = "" if error_kind in PERMANENT_FAILURES else f" {host.robots_failures} times"
        log.warning("robots.txt of %s failed%s (%s); giving the host up", why[0], times, why[1])
        host.robots_state = "failed"
    else:
        log.warning(
            "robots.txt of %s failed (%s); its URLs wait %.0f s for another try", *why, wait
        )
        host.robots_state, host.robots_retry_at = "unknown", now + wait
    scheduler.wake(host)
    return list(host.robots.sitemaps) if host.robots is not None else []


def sitemaps_named(
    lines: list[str], rules: UrlRules, limit: int = MAX_ROBOTS_SITEMAPS
) -> tuple[list[str], list[tuple[str, str]]]:
    """The sitemaps a robots.txt's ``Sitemap:`` lines name (the first
    ``limit``), canonical, that the URL rules allow; and those they refuse,
    with the rule."""
    found, refused = [], []
    for text in lines[:limit]:
        try:
            url = rules.canonical(text)
        except InvalidURL:
            continue
        rule = rules.refusal(url, sitemap=True)
        if rule is None:
            found.append(url)
        else:
            refused.append((url, rule))
    return found, refused


class RobotsAnswers:
    """Carries out the ``Robots`` actions of one crawl."""

    def __init__(
        self,
        settings: Settings,
        scheduler: Scheduler,
        settling: Settling,
        rules: Callable[[], UrlRules],
        cache: RobotsCache | None = None,
    ) -> None:
        self.settings, self.scheduler, self.settling = settings, scheduler, settling
        self.rules = rules  # the crawl's rules now (control commands change them)
        self.cache = cache  # the job dir's copies, for check-url

    def handle(self, action: Robots) -> None:
        request, result = action.request, action.result
        if result is None:  # it died with its worker
            lines = take_answer(self.scheduler, request, None, None, True)
        else:
            lines = take_answer(
                self.scheduler,
                request,
                *(result.status, result.body, action.failed, result.error, result.error_kind),
            )
            status = result.status
            if self.cache is not None and status and status < 500 and not action.failed:
                self.cache.save(request.host, result.body or "" if status < 300 else "")
        if not self.settings.filters.sitemaps:
            return
        found, refused = sitemaps_named(lines, self.rules())
        self.settling.add_sitemaps(found)
        self.settling.refused_links(request.url, refused)
