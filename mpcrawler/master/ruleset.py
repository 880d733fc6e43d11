"""CrawlRules: the crawl's scope and URL rules as they are now.

Built from the seeds and from what ``control add-seeds`` and ``control
exclude`` gave (kept in the job's state, so a resume builds the same),
and built again when one of those commands comes.  The parts that filter
URLs (the result handling, the workers) are handed the new rules by the
commands (:mod:`mpcrawler.control.rulecommands`).
"""

from __future__ import annotations

import logging

from ..control.commands import first_few
from ..output.jobdir import JobState
from ..settings import Settings
from ..settings.worker import WorkerConfig
from ..web.filters import UrlRules
from ..web.redact import hide_userinfo
from ..web.urls import InvalidURL, Scope

__all__ = ["CrawlRules", "refusals"]

log = logging.getLogger(__name__)


def refusals(refused: dict[str, str]) -> str:
    """Seeds the rules refused (URL -> rule), a few of them, in one line."""
    return first_few([f"{url} ({rule})" for url, rule in refused.items()], ", ")


class CrawlRules:
    """The scope (``scope``) and the URL rules (``rules``) of ``settings``'
    seeds, and of a job's added seeds and exclusions once ``rebuild`` is
    given its state."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.rebuild()

    def rebuild(self, state: JobState | None = None) -> None:
        """The scope and URL rules of the seeds, and of what ``add-seeds``
        and ``exclude`` gave (kept in the job's ``state``)."""
        s = self.settings
        added, excluded = (state.added_seeds, state.excluded) if state else ({}, [])
        self.scope = Scope.from_seeds(
            [*s.seeds, *added], s.filters.allow_domains, s.filters.scope, s.filters.deny_domains
        )
        self.rules = UrlRules.from_settings(WorkerConfig.of(s), self.scope, excluded)

    def admit_seeds(
        self, state: JobState, found: dict[str, int]
    ) -> tuple[dict[str, int], dict[str, str]]:
        """Seeds ``add-seeds`` gave (canonical URL -> priority): the scope
        grows to take their hosts, to see which the other rules refuse; the
        job keeps the others only, and the rules are built with those.
        (kept, refused: URL -> rule)."""
        self.rebuild(JobState(added_seeds={**state.added_seeds, **found}, excluded=state.excluded))
        refused = {url: rule for url in found if (rule := self.rules.refusal(url))}
        kept = {url: p for url, p in found.items() if url not in refused}
        state.added_seeds = {**state.added_seeds, **kept}
        self.rebuild(state)
        return kept, refused

    def settle_added_seeds(self, state: JobState) -> None:
        """The seeds ``add-seeds`` gave while the crawl was not running, as
        a running crawl takes them: a malformed or refused one is said in
        the log and not kept."""
        found: dict[str, int] = {}
        for text, priority in state.added_seeds.items():
            try:
                found[self.rules.canonical(text)] = priority
            except InvalidURL as exc:
                log.warning("control: add-seeds %s: %s", hide_userinfo(text)[:200], exc.reason)
        state.added_seeds = {}
        _, refused = self.admit_seeds(state, found)
        if refused:
            log.warning("control: add-seeds refused: %s", refusals(refused))
