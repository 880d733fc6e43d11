"""Robots: what becomes, in the master, of a host's robots.txt answer.

The result handling turns a robots.txt fetch that ended into a ``Robots``
action (:mod:`mpcrawler.master.results`); the engine hands it here, and
this is the one place that acts on it:

- the scheduler takes the rules, or counts the failure, and releases or
  gives up the host's held requests (``Scheduler.robots_result``);
- an answer (not a 5xx, not a failure) is kept in the job dir's copy for
  ``check-url`` (:class:`~mpcrawler.output.robotscache.RobotsCache`);
- the ``Sitemap:`` lines it names (``MAX_ROBOTS_SITEMAPS`` at most, in
  scope) are queued as sitemaps, and those the URL rules refuse counted.
"""

from __future__ import annotations

from collections.abc import Callable

from ..output.robotscache import RobotsCache
from ..settings import Settings
from ..web.filters import UrlRules
from ..web.urls import InvalidURL
from .results import Robots
from .scheduler import Scheduler
from .settle import Settling

__all__ = ["MAX_ROBOTS_SITEMAPS", "RobotsAnswers", "sitemaps_named"]

MAX_ROBOTS_SITEMAPS = 50  # Sitemap: lines read from one robots.txt


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
            lines = self.scheduler.robots_result(request, None, None, True)
        else:
            lines = self.scheduler.robots_result(
                request, result.status, result.body, action.failed, result.error, result.error_kind
            )
            status = result.status
            if self.cache is not None and status and status < 500 and not action.failed:
                self.cache.save(request.host, result.body or "" if status < 300 else "")
        if not self.settings.sitemaps:
            return
        found, refused = sitemaps_named(lines, self.rules())
        self.settling.add_sitemaps(found)
        self.settling.refused_links(request.url, refused)
