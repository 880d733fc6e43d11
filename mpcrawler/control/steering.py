"""Steering: the job's control commands applied to the running crawl.

The engine calls ``poll(now)`` every turn; about twice a second it takes the
commands waiting in the job's inbox (:class:`mpcrawler.control.inbox.Inbox`, or a
shared crawl's :class:`mpcrawler.control.shared.SharedInbox`), in
the order they were written, and applies each one or refuses it with why,
answering and logging every one:

    pause / resume   ``paused``: the engine starts no request while it is set
    stop             as a stop signal (``stop()``, the engine's request_stop)
    add-seeds        the crawler's ``add_seeds``: rules, scope, workers, frontier
    exclude          the crawler's ``exclude``: rules, workers, frontier
    pause-host NAME  the scheduler's ``pause_host``: no request of the host
    resume-host NAME starts (or they start again)
    set NAME=VALUE   the setting now: delay and host concurrency through the
                     scheduler, max-pages through the frontier, max-depth in
                     the settings the settling reads; kept in the job's
                     ``overrides`` for its resumes

``paused``, ``paused_hosts``, ``overrides``, ``added_seeds`` and
``excluded`` live in the job's state (job.json), so a resumed job starts
paused if it was, its hosts paused as they were, with its settings, seeds
and exclusions as last set.  A shared crawl's inbox may not
answer (Redis is down): the commands wait for the next poll.

No answer before its change is durable: the commands of a poll are applied
(``decide``), the job is checkpointed (``changed``), and only then are they
answered (``deliver``).  At a job's start the commands that waited are
applied to its state, and answered by the job after its first checkpoint
(:class:`mpcrawler.master.job.Job`).  A kill between the checkpoint and an
answer leaves the command waiting: the next start applies it again, which
changes nothing, and answers it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import FrontierUnavailable
from ..frontier import Frontier
from ..master.scheduler import Scheduler
from ..output.jobdir import JobState
from ..settings import Settings, flag_of, setting_value
from .commands import HOST_COMMANDS, SETTABLE, Command
from .inbox import Inbox

__all__ = [
    "POLL_INTERVAL",
    "Answer",
    "Steering",
    "answer_waiting",
    "apply_overrides",
    "checked_overrides",
    "deliver",
    "paused_hosts",
]

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.5


def checked_overrides(overrides: dict[str, Any]) -> list[str]:
    """Why each of a job's ``set`` overrides is not allowed (the option
    table's bounds, as ``set`` and the command line check them): empty if
    all are."""
    problems = []
    for name, value in overrides.items():
        if name not in SETTABLE.values():
            problems.append(f"{name}={value!r}: not a setting control set changes")
            continue
        try:
            setting_value(name, value)
        except ValueError as exc:
            problems.append(f"{flag_of(name)}={value!r}: {exc}")
    return problems


def apply_overrides(settings: Settings, overrides: dict[str, Any]) -> None:
    """What ``set`` changed in an earlier run, over the command line's
    (checked first: ``checked_overrides``)."""
    for name, value in overrides.items():
        settings.set(name, setting_value(name, value))


class CommandInbox(Protocol):
    """Where commands wait: ``take`` them (handle, data, Command or why it is
    refused), ``answer`` each by its handle."""

    def take(self) -> list[tuple[Any, dict[str, Any], Command | str]]: ...

    def answer(self, handle: Any, data: dict[str, Any], answer: str) -> None: ...


@dataclass(frozen=True)
class Answer:
    """A command applied or refused, not yet answered: its inbox handle, its
    data, the answer, and its name if it was applied (else "")."""

    handle: Any
    data: dict[str, Any]
    text: str
    applied: str


def decide(inbox: CommandInbox, apply: Callable[[Command], str]) -> list[Answer]:
    """Apply or refuse every waiting command, and log each; none is
    answered yet (``deliver``, once what they changed is durable)."""
    decided = []
    for handle, data, command in inbox.take():
        text = command if isinstance(command, str) else apply(command)
        what = command.describe() if isinstance(command, Command) else str(data.get("id", handle))
        applied = isinstance(command, Command) and text.startswith("applied")
        if not applied:
            text = f"refused: {text}"
        log.warning("control: %s: %s", what[:300], text[:300])
        name = command.name if applied and isinstance(command, Command) else ""
        decided.append(Answer(handle, data, text, name))
    return decided


def deliver(inbox: CommandInbox, answers: Sequence[Answer]) -> None:
    """Answer each command (after the checkpoint that made it durable)."""
    for answer in answers:
        inbox.answer(answer.handle, answer.data, answer.text)


def paused_hosts(hosts: list[str], command: Command) -> list[str]:
    """The job's paused hosts after ``pause-host`` or ``resume-host``, in the
    order they were paused."""
    host = command.args["host"]
    kept = [h for h in hosts if h != host]
    return [*kept, host] if command.name == "pause-host" else kept


def answer_waiting(inbox: CommandInbox, state: JobState) -> list[Answer]:
    """At a job's start: the commands sent while it was not running, applied
    to its state (a stop is refused: there was nothing to stop), to be
    answered once the state is durable (``deliver``)."""

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
        elif command.name in HOST_COMMANDS:
            state.paused_hosts = paused_hosts(state.paused_hosts, command)
        else:
            state.paused = command.name == "pause"
        return "applied"

    return decide(inbox, apply)


class Steering:
    """Applies the job's control commands to the running crawl (see the module)."""

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
            answers = decide(self.inbox, self.apply)
        except FrontierUnavailable as exc:  # a shared crawl's Redis: next time
            log.debug("control: %s", exc)
            return
        if any(a.applied for a in answers):
            self.changed()  # durable before it is answered
        try:
            deliver(self.inbox, answers)
        except FrontierUnavailable as exc:  # read again next time: applied again, answered
            log.debug("control: %s", exc)

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
        elif command.name in HOST_COMMANDS:
            self.state.paused_hosts = paused_hosts(self.state.paused_hosts, command)
            self.scheduler.pause_host(command.args["host"], command.name == "pause-host")
        return "applied"

    def _set(self, name: str, value: Any) -> None:
        self.settings.set(name, value)
        if name in ("delay", "host_concurrency"):
            self.scheduler.set_politeness(
                self.settings.politeness.delay, self.settings.politeness.host_concurrency
            )
        elif name == "max_pages":
            self.frontier.set_max_pages(value)
