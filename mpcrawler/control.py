"""Commands to a running crawl through its job dir: ``control DIR COMMAND``.

A command is a small JSON file, ``{"id", "command", "args", "at"}``, written
atomically (to ``DIR/control/tmp``, then renamed) into ``DIR/control/inbox``,
as Heritrix's action directory works.  The crawl's master reads the inbox
about twice a second (:mod:`mpcrawler.master.steering`), applies or refuses
each command in the order written, logs it, and moves its file to
``DIR/control/done`` with the answer added; ``status`` lists the last
answers.  A crawl that is not running finds its inbox at its next start.

The commands, checked here for the CLI and the crawl alike:

- ``pause``: no new request starts; in-flight ones finish; the crawl stays up;
- ``resume``;
- ``stop``: as SIGTERM (only to a running crawl);
- ``set NAME=VALUE...``: ``delay``, ``host-concurrency``, ``max-pages``,
  ``max-depth``; kept in the job for its resumes;
- ``add-seeds`` (``{"urls": [...], "priority": N}``): queued at once, at
  their priority, through the URL rules, robots.txt and the seen set; the
  scope grows to take their hosts; kept in the job for its resumes;
- ``exclude`` (``{"regex": R}``): links that R matches are refused (rule
  ``exclude``), the queued URLs it matches are dropped (the answer says how
  many), and one met later is dropped unfetched; kept in the job.

A shared crawl's commands travel through Redis instead
(:mod:`mpcrawler.frontier.redis.commands`); both inboxes have the same
two methods, ``take`` and ``answer``.

No pickle: JSON only.  Pure parsing plus plain file moves.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "COMMANDS",
    "SETTABLE",
    "Command",
    "Inbox",
    "answers",
    "new_command",
    "parse_command",
    "parse_exclude",
    "parse_set",
    "read_command",
    "write_command",
]

COMMANDS = ("pause", "resume", "stop", "set", "add-seeds", "exclude")
# name -> (setting, type, least value)
SETTABLE: dict[str, tuple[str, type, float]] = {
    "delay": ("delay", float, 0.0),
    "host-concurrency": ("host_concurrency", int, 1),
    "max-pages": ("max_pages", int, 1),
    "max-depth": ("max_depth", int, 0),
}
KEEP_DONE = 100  # answered commands kept in DIR/control/done


@dataclass(frozen=True)
class Command:
    id: str
    name: str
    args: dict[str, Any]  # set: {setting: value}

    def describe(self) -> str:
        if self.name == "add-seeds":
            return f"add-seeds {' '.join(self.args['urls'])} (priority {self.args['priority']})"
        if self.name == "set":
            return "set " + " ".join(f"{k}={v}" for k, v in self.args.items())
        if self.name == "exclude":
            return f"exclude {self.args['regex']}"
        return self.name


def parse_set(pairs: list[str]) -> dict[str, Any]:
    """``["delay=0.5", ...]`` as {setting: value}; ValueError in one line."""
    if not pairs:
        raise ValueError("set needs NAME=VALUE (" + ", ".join(SETTABLE) + ")")
    values: dict[str, Any] = {}
    for pair in pairs:
        name, equals, text = pair.partition("=")
        if not equals or name not in SETTABLE:
            raise ValueError(f"set {pair!r}: not NAME=VALUE with NAME one of {', '.join(SETTABLE)}")
        setting, kind, least = SETTABLE[name]
        try:
            value = kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise ValueError(f"set {name}: {text!r} is not {what}") from None
        if not value >= least or value != value:
            raise ValueError(f"set {name}: must be at least {least:g}")
        values[setting] = value
    return values


def parse_exclude(regex: Any) -> str:
    """An ``exclude`` pattern, checked; ValueError in one line."""
    if not isinstance(regex, str) or not regex:
        raise ValueError("exclude needs a REGEX")
    try:
        re.compile(regex)
    except re.error as exc:
        raise ValueError(f"exclude {regex!r}: not a regular expression ({exc})") from None
    return regex


def new_command(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A command's JSON, with a new id (time-ordered)."""
    ident = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    return {"id": ident, "command": name, "args": args, "at": round(time.time(), 3)}


def read_command(text: str | bytes, what: str = "command") -> tuple[dict[str, Any], Command | str]:
    """A ``what``'s JSON text: (its data, the Command or why it is refused)."""
    try:
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        return {}, f"not a {what}: {exc}"
    try:
        return data, parse_command(data)
    except ValueError as exc:
        return (data if isinstance(data, dict) else {}), str(exc)


def parse_command(data: Any) -> Command:
    """A command file's JSON as a Command; ValueError (one line) if it is not one."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    name, args = data.get("command"), data.get("args", {})
    if name not in COMMANDS:
        raise ValueError(f"unknown command {name!r} (one of {', '.join(COMMANDS)})")
    if not isinstance(args, dict):
        raise ValueError("args must be an object")
    if name == "set":  # {"delay": 0.5}: the names as on the command line
        args = parse_set([f"{k}={v}" for k, v in args.items()])
    elif name == "add-seeds":
        urls, priority = args.get("urls"), args.get("priority", 0)
        if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
            raise ValueError("add-seeds needs urls, a list of URLs")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise ValueError("add-seeds: priority must be an integer")
        args = {"urls": urls, "priority": priority}
    elif name == "exclude":
        args = {"regex": parse_exclude(args.get("regex"))}
    elif args:
        raise ValueError(f"{name} takes no arguments")
    return Command(str(data.get("id") or ""), name, args)


def _dirs(job_dir: str | Path) -> tuple[Path, Path, Path]:
    root = Path(job_dir) / "control"
    return root / "tmp", root / "inbox", root / "done"


def write_command(job_dir: str | Path, name: str, args: dict[str, Any]) -> str:
    """Put a command in the job's inbox, atomically; its id."""
    tmp, inbox, _ = _dirs(job_dir)
    tmp.mkdir(parents=True, exist_ok=True)
    inbox.mkdir(parents=True, exist_ok=True)
    data = new_command(name, args)
    staged = tmp / f"{data['id']}.json"
    staged.write_text(json.dumps(data), encoding="utf-8")
    os.replace(staged, inbox / staged.name)
    return str(data["id"])


def answers(job_dir: str | Path, last: int = 10) -> list[dict[str, Any]]:
    """The last answered commands, oldest first (for ``status``)."""
    _, _, done = _dirs(job_dir)
    found = []
    for path in _by_age(done)[-last:]:
        try:
            found.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return found


def _by_age(folder: Path) -> list[Path]:
    """The files of ``folder``, the longest answered first."""
    try:
        return sorted(folder.iterdir(), key=lambda p: (p.stat().st_mtime_ns, p.name))
    except OSError:  # none yet, or one went meanwhile
        return []


class Inbox:
    """The crawl's side: the commands waiting, in order, and their answers."""

    def __init__(self, job_dir: str | Path) -> None:
        _, self.inbox, self.done = _dirs(job_dir)

    def take(self) -> list[tuple[Path, dict[str, Any], Command | str]]:
        """Each waiting command file: (path, its data, the Command or why it is refused)."""
        try:
            paths = sorted(p for p in self.inbox.iterdir() if p.suffix == ".json")
        except OSError:
            return []
        taken: list[tuple[Path, dict[str, Any], Command | str]] = []
        for path in paths:
            try:
                text = path.read_bytes()
            except OSError as exc:
                taken.append((path, {}, f"not a command file: {exc}"))
                continue
            taken.append((path, *read_command(text, "command file")))
        return taken

    def answer(self, path: Path, data: dict[str, Any], answer: str) -> None:
        """Move the command to ``done`` with its answer (and keep KEEP_DONE)."""
        self.done.mkdir(parents=True, exist_ok=True)
        record = {**data, "file": path.name, "answer": answer, "answered_at": round(time.time(), 3)}
        (self.done / path.name).write_text(json.dumps(record), encoding="utf-8")
        path.unlink(missing_ok=True)
        for stale in _by_age(self.done)[:-KEEP_DONE]:
            stale.unlink(missing_ok=True)
