"""Steering: the job's control commands applied to the running crawl.

The engine calls ``poll(now)`` every turn; about twice a second it takes the
commands waiting in the job's inbox (:class:`mpcrawler.control.Inbox`), in
the order they were written, and applies each one or refuses it with why,
answering and logging every one:

    pause / resume   ``paused``: the engine starts no request while it is set
    stop             as a stop signal (``stop()``, the engine's request_stop)
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

__all__ = ["POLL_INTERVAL", "Steering", "apply_overrides"]

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.5


def apply_overrides(settings: Settings, overrides: dict[str, Any]) -> None:
    """What ``set`` changed in an earlier run, over the command line's."""
    for name, value in overrides.items():
        if hasattr(settings, name):
            setattr(settings, name, value)


class Steering:
    def __init__(
        self,
        inbox: Inbox,
        settings: Settings,
        scheduler: Scheduler,
        frontier: Frontier,
        state: JobState,
        stop: Callable[[], object],
    ) -> None:
        self.inbox = inbox
        self.settings, self.scheduler, self.frontier = settings, scheduler, frontier
        self.state = state
        self.stop = stop
        self._due = 0.0

    @property
    def paused(self) -> bool:
        return self.state.paused

    def poll(self, now: float) -> None:
        if now < self._due:
            return
        self._due = now + POLL_INTERVAL
        for path, data, command in self.inbox.take():
            answer = command if isinstance(command, str) else self.apply(command)
            what = command.describe() if isinstance(command, Command) else path.name
            if answer == "applied":
                log.warning("control: %s: applied", what)
            else:
                answer = f"refused: {answer}"
                log.warning("control: %s: %s", what, answer)
            self.inbox.answer(path, data, answer)

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
        return "applied"

    def _set(self, name: str, value: Any) -> None:
        setattr(self.settings, name, value)
        if name in ("delay", "host_concurrency"):
            self.scheduler.set_politeness(self.settings.delay, self.settings.host_concurrency)
        elif name == "max_pages":
            self.frontier.set_max_pages(value)
