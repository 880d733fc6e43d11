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
  scope grows to take their hosts; kept in the job for its resumes.

No pickle: JSON only.  Pure parsing plus plain file moves.
"""

from __future__ import annotations

import json
import os
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
    "parse_command",
    "parse_set",
    "write_command",
]

COMMANDS = ("pause", "resume", "stop", "set", "add-seeds")
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
    ident = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    data = {"id": ident, "command": name, "args": args, "at": round(time.time(), 3)}
    staged = tmp / f"{ident}.json"
    staged.write_text(json.dumps(data), encoding="utf-8")
    os.replace(staged, inbox / staged.name)
    return ident


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
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                taken.append((path, {}, f"not a command file: {exc}"))
                continue
            try:
                taken.append((path, data, parse_command(data)))
            except ValueError as exc:
                taken.append((path, data if isinstance(data, dict) else {}, str(exc)))
        return taken

    def answer(self, path: Path, data: dict[str, Any], answer: str) -> None:
        """Move the command to ``done`` with its answer (and keep KEEP_DONE)."""
        self.done.mkdir(parents=True, exist_ok=True)
        record = {**data, "file": path.name, "answer": answer, "answered_at": round(time.time(), 3)}
        (self.done / path.name).write_text(json.dumps(record), encoding="utf-8")
        path.unlink(missing_ok=True)
        for stale in _by_age(self.done)[:-KEEP_DONE]:
            stale.unlink(missing_ok=True)
