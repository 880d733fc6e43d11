"""Steering: the job's control commands applied to the running crawl.

The engine calls ``poll(now)`` every turn; about twice a second it takes the
commands waiting in the job's inbox (:class:`mpcrawler.control.Inbox`), in
the order they were written, and applies each one or refuses it with why,
answering and logging every one:

    pause / resume   ``paused``: the engine starts no request while it is set
    stop             as a stop signal (``stop()``, the engine's request_stop)
    add-seeds        the crawler's ``add_seeds``: rules, scope, workers, frontier
    set NAME=VALUE   the setting now: delay and host concurrency through the
                     scheduler, max-pages through the frontier, max-depth in
                     the settings the settling reads; kept in the job's
                     ``overrides`` for its resumes

``paused`` and ``overrides`` live in the job's state (job.json), so a
resumed job starts paused if it was, with its settings as last set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..control import Command, Inbox
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


def _answer(inbox: Inbox, apply: Callable[[Command], str]) -> bool:
    """Apply or refuse every waiting command, answer and log each; whether any was."""
    taken = inbox.take()
    for path, data, command in taken:
        answer = command if isinstance(command, str) else apply(command)
        what = command.describe() if isinstance(command, Command) else path.name
        if not answer.startswith("applied"):
            answer = f"refused: {answer}"
        log.warning("control: %s: %s", what, answer)
        inbox.answer(path, data, answer)
    return bool(taken)


def answer_waiting(inbox: Inbox, state: JobState) -> None:
    """At a job's start: the commands sent while it was not running, applied
    to its state (a stop is refused: there was nothing to stop)."""

    def apply(command: Command) -> str:
        if command.name == "stop":
            return "the crawl was not running"
        if command.name == "set":
            state.overrides = {**state.overrides, **command.args}
        elif command.name == "add-seeds":  # admitted when the crawl starts
            for url in command.args["urls"]:
                state.added_seeds[url] = command.args["priority"]
        else:
            state.paused = command.name == "pause"
        return "applied"

    _answer(inbox, apply)


class Steering:
    def __init__(
        self,
        inbox: Inbox,
        settings: Settings,
        scheduler: Scheduler,
        frontier: Frontier,
        state: JobState,
        stop: Callable[[], object],
        changed: Callable[[], object] = lambda: None,
        add_seeds: Callable[[list[str], int], str] | None = None,
    ) -> None:
        self.inbox = inbox
        self.settings, self.scheduler, self.frontier = settings, scheduler, frontier
        self.state = state
        self.stop = stop
        self.changed = changed  # a checkpoint: status shows the change at once
        self.add_seeds = add_seeds  # the crawler's: scope, workers and frontier
        self._due = 0.0

    @property
    def paused(self) -> bool:
        return self.state.paused

    def poll(self, now: float) -> None:
        if now < self._due:
            return
        self._due = now + POLL_INTERVAL
        if _answer(self.inbox, self.apply):
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
        return "applied"

    def _set(self, name: str, value: Any) -> None:
        setattr(self.settings, name, value)
        if name in ("delay", "host_concurrency"):
            self.scheduler.set_politeness(self.settings.delay, self.settings.host_concurrency)
        elif name == "max_pages":
            self.frontier.set_max_pages(value)
