"""RuleCommands: the control commands of a running crawl that change its
rules, ``add-seeds`` and ``exclude``, carried out on the engine's parts.

Each changes the rules (:class:`mpcrawler.master.ruleset.CrawlRules`),
hands them to the result handling and the workers, keeps them in the
job's state for its resumes, and then queues or drops what they say; the
answer is the command's (``steering`` sends it back).
"""

from __future__ import annotations

from ..errors import FrontierUnavailable
from ..master.engine import Engine
from ..master.job import Job
from ..master.ruleset import CrawlRules
from ..web.redact import hide_userinfo
from ..web.urls import InvalidURL
from .commands import first_few

__all__ = ["RuleCommands"]


class RuleCommands:
    """``add-seeds`` and ``exclude`` for the crawl of ``engine``, in ``job``."""

    def __init__(self, job: Job, rules: CrawlRules, engine: Engine) -> None:
        self.job, self.rules, self.engine = job, rules, engine

    def _spread(self) -> None:
        """The rules, to the parts that filter URLs: here and the workers."""
        self.engine.results.rules = self.rules.rules
        self.engine.pool.set_rules(self.rules.scope.to_dict(), self.job.state.excluded)

    def add_seeds(self, urls: list[str], priority: int) -> str:
        """``control add-seeds``: the scope grows to take their hosts (here,
        in the workers and in the job, for its resumes), and those the rules
        allow are queued at ``priority``.  The answer."""
        found: dict[str, int] = {}
        for text in urls:
            try:
                found[self.rules.rules.canonical(text)] = priority
            except InvalidURL as exc:
                return f"malformed URL {hide_userinfo(text)[:200]!r}: {exc.reason}"
        kept, refused = self.rules.admit_seeds(self.job.state, found)
        self._spread()
        wanted = [(url, 0, priority, "page", None) for url in kept]
        queued = sum(self.engine.settling.admit(wanted)) if wanted else 0
        answer = f"applied: {queued} queued, {len(wanted) - queued} seen before"
        if refused:
            answer += ", refused: " + first_few(
                list(refused.items()), ", ", "{0[0]} ({0[1]})".format
            )
        return answer

    def exclude(self, regex: str) -> str:
        """``control exclude``: links ``regex`` matches are refused (here, in
        the workers, and in the job for its resumes), and the queued URLs it
        matches dropped (a shared frontier's crawl-wide), with those leased
        and held for their hosts here.  The answer."""
        state, frontier = self.job.state, self.engine.frontier
        if regex not in state.excluded:
            state.excluded = [*state.excluded, regex]
        self.rules.rebuild(state)
        self._spread()
        excluded = self.rules.rules.excluded
        for request in self.engine.scheduler.take_back(excluded):  # leased, not sent: dropped
            if request.info is not None:
                frontier.release(request.info)
        try:
            dropped = frontier.exclude(excluded)
        except FrontierUnavailable as exc:  # kept: its URLs are dropped when leased
            return f"applied: queued URLs not dropped now ({exc}); each is dropped when met"
        return f"applied: {dropped} queued URLs dropped"
