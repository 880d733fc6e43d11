"""Steering: the job's control commands applied to the running crawl.

The engine calls ``poll(now)`` every turn; about twice a second it takes the
commands waiting in the job's inbox (:class:`mpcrawler.control.Inbox`, or a
shared crawl's :class:`mpcrawler.frontier.redis.commands.SharedInbox`), in
the order they were written, and applies each one or refuses it with why,
answering and logging every one:

    pause / resume   ``paused``: the engine starts no request while it is set
    stop             as a stop signal (``stop()``, the engine's request_stop)
    add-seeds        the crawler's ``add_seeds``: rules, scope, workers, frontier
    exclude          the crawler's ``exclude``: rules, workers, frontier
    set NAME=VALUE   the setting now: delay and host concurrency through the
                     scheduler, max-pages through the frontier, max-depth in
                     the settings the settling reads; kept in the job's
                     ``overrides`` for its resumes

``paused``, ``overrides``, ``added_seeds`` and ``excluded`` live in the
job's state (job.json), so a resumed job starts paused if it was, with its
settings, seeds and exclusions as last set.  A shared crawl's inbox may not
answer (Redis is down): the commands wait for the next poll.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from ..control import Command, Inbox
from ..errors import FrontierUnavailable
from ..frontier import Frontier
from ..output.jobdir import JobState
from ..settings import Settings
from .scheduler import Scheduler

__all__ = ["POLL_INTERVAL", "Steering", "answer_waiting", "apply_overrides"]

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.5


def apply_overrides(settings: Settings, overrides: dict[str, Any]) -> None:
    """What ``set`` changed in an earlier run, over the command line's."""
    for name, value in overrides.items():
        if hasattr(settings, name):
            setattr(settings, name, value)


class CommandInbox(Protocol):
    """Where commands wait: ``take`` them (handle, data, Command or why it is
    refused), ``answer`` each by its handle."""

    def take(self) -> list[tuple[Any, dict[str, Any], Command | str]]: ...

    def answer(self, handle: Any, data: dict[str, Any], answer: str) -> None: ...


def _answer(inbox: CommandInbox, apply: Callable[[Command], str]) -> list[str]:
    """Apply or refuse every waiting command, answer and log each; for each,
    its name if it was applied, else ""."""
    answered = []
    for handle, data, command in inbox.take():
        answer = command if isinstance(command, str) else apply(command)
        what = command.describe() if isinstance(command, Command) else str(data.get("id", handle))
        applied = isinstance(command, Command) and answer.startswith("applied")
        if not applied:
            answer = f"refused: {answer}"
        log.warning("control: %s: %s", what, answer)
        inbox.answer(handle, data, answer)
        answered.append(command.name if applied and isinstance(command, Command) else "")
    return answered


def answer_waiting(inbox: CommandInbox, state: JobState) -> list[str]:
    """At a job's start: the commands sent while it was not running, applied
    to its state (a stop is refused: there was nothing to stop); as
    ``_answer``, the names of those applied."""

    def apply(command: Command) -> str:
        if command.name == "stop":
            return "the crawl was not running"
        if command.name == "set":
            state.overrides = {**state.overrides, **command.args}
        elif command.name == "add-seeds":  # admitted when the crawl starts
            for url in command.args["urls"]:
                state.added_seeds[url] = command.args["priority"]
        elif command.name == "exclude":  # its queued URLs are dropped when the crawl starts
            if command.args["regex"] not in state.excluded:
                state.excluded = [*state.excluded, command.args["regex"]]
        else:
            state.paused = command.name == "pause"
        return "applied"

    return _answer(inbox, apply)


class Steering:
    def __init__(
        self,
        inbox: CommandInbox,
        settings: Settings,
        scheduler: Scheduler,
        frontier: Frontier,
        state: JobState,
        stop: Callable[[], object],
        changed: Callable[[], object] = lambda: None,
        add_seeds: Callable[[list[str], int], str] | None = None,
        exclude: Callable[[str], str] | None = None,
    ) -> None:
        self.inbox = inbox
        self.settings, self.scheduler, self.frontier = settings, scheduler, frontier
        self.state = state
        self.stop = stop
        self.changed = changed  # a checkpoint: status shows the change at once
        self.add_seeds = add_seeds  # the crawler's: scope, workers and frontier
        self.exclude = exclude  # the crawler's: rules, workers and frontier
        self._due = 0.0

    @property
    def paused(self) -> bool:
        return self.state.paused

    @property
    def shared(self) -> bool:
        """The commands are a shared crawl's (other nodes apply them too)."""
        return not isinstance(self.inbox, Inbox)

    def poll(self, now: float, at_once: bool = False) -> None:
        """Read the commands if it is time (``at_once``: now)."""
        if now < self._due and not at_once:
            return
        self._due = now + POLL_INTERVAL
        try:
            answered = _answer(self.inbox, self.apply)
        except FrontierUnavailable as exc:  # a shared crawl's Redis: next time
            log.debug("control: %s", exc)
            return
        if answered:
            self.changed()

    def apply(self, command: Command) -> str:
        """Carry ``command`` out: "applied", or why not."""
        if command.name == "pause":
            self.state.paused = True
        elif command.name == "resume":
            self.state.paused = False
        elif command.name == "stop":
            self.stop()
        elif command.name == "set":
            for name, value in command.args.items():
                self._set(name, value)
            self.state.overrides = {**self.state.overrides, **command.args}
        elif command.name == "add-seeds":
            if self.add_seeds is None:
                return "this crawl cannot take seeds"
            return self.add_seeds(command.args["urls"], command.args["priority"])
        elif command.name == "exclude":
            if self.exclude is None:
                return "this crawl cannot exclude"
            return self.exclude(command.args["regex"])
        return "applied"

    def _set(self, name: str, value: Any) -> None:
        setattr(self.settings, name, value)
        if name in ("delay", "host_concurrency"):
            self.scheduler.set_politeness(self.settings.delay, self.settings.host_concurrency)
        elif name == "max_pages":
            self.frontier.set_max_pages(value)
