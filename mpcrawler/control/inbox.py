"""The job dir's control inbox: ``control DIR COMMAND`` and the crawl's side of it.

A command (:mod:`mpcrawler.control.commands`) is a small JSON file written
atomically (to ``DIR/control/tmp``, then renamed) into
``DIR/control/inbox``, as Heritrix's action directory works.  The crawl's
master takes the inbox about twice a second (:mod:`mpcrawler.control.steering`),
applies or refuses each command in the order written, logs it, and moves
its file to ``DIR/control/done`` with the answer added; ``status`` lists
the last answers.  A crawl that is not running finds its inbox at its next
start.  A shared crawl's inbox is in Redis (:mod:`mpcrawler.control.shared`),
with the same two methods, ``take`` and ``answer``.

Durability: a command is answered only once what it changed is on disk
(the steering checkpoints the job first), so an answer "applied" survives
a kill; a command applied and checkpointed but killed before its answer is
applied again at the next start, which changes nothing (every command is
idempotent on the job's state) and answers it then.  An answer is written
atomically, and a command whose answer is already in ``done`` is not
applied twice.

Bounds: a command file is read only if it is a regular file of at most
``MAX_COMMAND_BYTES``, opened without following a link and without
blocking (a FIFO, a directory or a device named ``*.json`` is refused and
moved to ``DIR/control/refused``); ``KEEP_DONE`` answers are kept.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from .commands import MAX_COMMAND_BYTES, Command, command_json, parse_command, public, read_command

__all__ = [
    "KEEP_DONE",
    "Inbox",
    "answer_of",
    "answers",
    "read_entry",
    "send_to_job",
    "write_command",
]

KEEP_DONE = 100  # answered commands kept in DIR/control/done


def _dirs(job_dir: str | Path) -> tuple[Path, Path, Path]:
    root = Path(job_dir) / "control"
    return root / "tmp", root / "inbox", root / "done"


def write_command(job_dir: str | Path, name: str, args: dict[str, Any]) -> str:
    """Put a command in the job's inbox, atomically; its id.  ValueError
    for one larger than the crawl reads (MAX_COMMAND_BYTES)."""
    tmp, inbox, _ = _dirs(job_dir)
    data, text = command_json(name, args)
    tmp.mkdir(parents=True, exist_ok=True)
    inbox.mkdir(parents=True, exist_ok=True)
    staged = tmp / f"{data['id']}.json"
    staged.write_text(text, encoding="utf-8")
    os.replace(staged, inbox / staged.name)
    return str(data["id"])


def send_to_job(
    job_dir: str | Path, name: str, args: dict[str, Any], running: bool
) -> tuple[str, str | None]:
    """Check a command as the crawl will (``parse_command``) and put it in
    the job's inbox: its id, and its answer now if the crawl will give none
    (it is not ``running``: applied at its next start).  ValueError in one
    line: a command the crawl would refuse, a ``stop`` to a crawl that is
    not running, one larger than the crawl reads."""
    parse_command({"command": name, "args": args})
    if name == "stop" and not running:
        raise ValueError(f"the crawl of {job_dir} is not running: nothing to stop")
    ident = write_command(job_dir, name, args)
    return ident, None if running else "the crawl is not running; applied at its next start"


def answer_of(job_dir: str | Path, ident: str) -> str | None:
    """The crawl's answer to the command ``ident``, once it gave it."""
    return next((str(a["answer"]) for a in answers(job_dir, 50) if a.get("id") == ident), None)


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
        found = [p for p in folder.iterdir() if p.suffix == ".json"]  # not a staged .tmp
        return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))
    except OSError:  # none yet, or one went meanwhile
        return []


def read_entry(path: Path) -> bytes | str:
    """The bytes of the command file ``path``, or why it is not read: it
    is opened without following a link and without blocking, and read only
    if it is a regular file of at most MAX_COMMAND_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        return f"not a command file: {exc.strerror or exc}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a command file: not a regular file"
        if info.st_size > MAX_COMMAND_BYTES:
            return f"not a command file: larger than {MAX_COMMAND_BYTES} bytes"
        data = os.read(fd, MAX_COMMAND_BYTES + 1)
    except OSError as exc:
        return f"not a command file: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if len(data) > MAX_COMMAND_BYTES:  # it grew while read
        return f"not a command file: larger than {MAX_COMMAND_BYTES} bytes"
    return data


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return True  # gone: nothing to move


class Inbox:
    """The crawl's side: the commands waiting, in order, and their answers."""

    def __init__(self, job_dir: str | Path) -> None:
        _, self.inbox, self.done = _dirs(job_dir)
        self.refused = self.done.with_name("refused")

    def take(self) -> list[tuple[Path, dict[str, Any], Command | str]]:
        """Each waiting command file: (path, its data, the Command or why it
        is refused).  One whose answer is in ``done`` already (a kill came
        between the two) is only removed."""
        try:
            paths = sorted(p for p in self.inbox.iterdir() if p.suffix == ".json")
        except OSError:
            return []
        taken: list[tuple[Path, dict[str, Any], Command | str]] = []
        for path in paths:
            if self._answered(path):
                path.unlink(missing_ok=True)
                continue
            text = read_entry(path)
            if isinstance(text, str):
                taken.append((path, {}, text))
            else:
                taken.append((path, *read_command(text, "command file")))
        return taken

    def _answered(self, path: Path) -> bool:
        """``path`` was answered, and a kill came before it left the inbox:
        its answer is newer than it (a file that reuses an answered one's
        name is a new command)."""
        try:
            command = path.lstat()
            answer = (self.done / path.name).stat()
        except OSError:
            return False
        return stat.S_ISREG(command.st_mode) and answer.st_mtime_ns >= command.st_mtime_ns

    def answer(self, path: Path, data: dict[str, Any], answer: str) -> None:
        """Put the command in ``done`` with its answer, atomically, then take
        it out of the inbox (an entry that is not a regular file goes to
        ``refused``); keep KEEP_DONE answers."""
        self.done.mkdir(parents=True, exist_ok=True)
        record = {**public(data), "file": path.name, "answer": answer}
        record["answered_at"] = round(time.time(), 3)
        staged = self.done / f".{path.name}.tmp"
        staged.write_text(json.dumps(record), encoding="utf-8")
        os.replace(staged, self.done / path.name)
        if _is_regular(path):
            path.unlink(missing_ok=True)
        else:  # a directory, a FIFO, a link: moved aside, never read
            self.refused.mkdir(parents=True, exist_ok=True)
            os.replace(path, self.refused / f"{path.name}.{time.time_ns()}")
        for stale in _by_age(self.done)[:-KEEP_DONE]:
            stale.unlink(missing_ok=True)
