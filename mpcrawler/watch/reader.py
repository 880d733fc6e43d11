"""What the web page shows, read from a job dir or a shared crawl's Redis.

A ``JobSource`` reads a job dir without its lock and without a word to the
crawl: ``DIR/live.json`` (:mod:`.live`, written by the master once a
second), ``job.json`` (the state the last checkpoint saved: pages, paused,
paused hosts, settings set), the last control answers, and the journal's
end for the last pages.  A job that never wrote a live file (an older
version, or a run that has not reached its loop) is shown from ``job.json``.

``pages(query)`` reads the journal backwards, in pieces of ``CHUNK`` bytes,
and stops at ``limit`` records or after ``MAX_SCAN`` bytes: a search of a
huge journal answers what it found in the newest part, and says so
(``complete: false``).

A ``SharedSource`` reads a shared crawl's figures from Redis (every node's
heartbeat, :func:`mpcrawler.frontier.redis.status.crawl_status`); its pages
are in each node's job dir, so it has none to list.

Both send the buttons' commands through the control path (a job dir's
inbox, or the crawl's commands in Redis): ``send`` checks one as the crawl
will and writes it, and ``answer`` finds its answer once the crawl gave it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..control.commands import parse_command
from ..control.inbox import answer_of, answers, send_to_job
from .live import FILE

__all__ = ["CHUNK", "MAX_SCAN", "JobSource", "SharedSource", "record_row"]

CHUNK = 1 << 20  # bytes of the journal read at a time, from its end
MAX_SCAN = 64 << 20  # bytes of the journal a search reads at most
STALE = 5.0  # seconds: a live file older than this, its crawl not running, is a run that ended
FIELDS = (
    "url",
    "status",
    "title",
    "error",
    "error_kind",
    "fetched_at",
    "bytes",
    "content_type",
    "depth",
)


def record_row(record: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record the page lists (text as given: the page shows
    it as text, never as markup)."""
    return {name: record.get(name) for name in FIELDS}


def matches(record: dict[str, Any], query: str) -> bool:
    """``query`` (lower case) is in the record's URL, title or error."""
    return any(
        query in value.lower()
        for name in ("url", "title", "error")
        if isinstance(value := record.get(name), str)
    )


def lines_backwards(path: Path, chunk: int = CHUNK, limit: int = MAX_SCAN) -> Iterator[bytes]:
    """The complete lines of ``path``, the last first, reading at most
    ``limit`` bytes from its end (a line cut by the limit is not given)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 (a generator: closed by the with below)
    except OSError:
        return
    with f:
        end = f.seek(0, os.SEEK_END)
        start = max(0, end - limit)
        tail = b""
        position = end
        while position > start:
            step = min(chunk, position - start)
            position -= step
            f.seek(position)
            block = f.read(step) + tail
            lines = block.split(b"\n")
            tail = lines[0]  # the start of a line, or a whole one at the file's start
            yield from reversed([line for line in lines[1:] if line])
        if start == 0 and tail:
            yield tail


class JobSource:
    """A job dir's figures, pages and commands (see the module)."""

    def __init__(self, job_dir: str | Path) -> None:
        from ..output.jobdir import JobDir

        self.path = Path(job_dir)
        self.job = JobDir(self.path)

    def live(self) -> dict[str, Any] | None:
        try:
            found = json.loads((self.path / FILE).read_text())
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    def running(self) -> bool:
        return self.job.running_pid() is not None

    def status(self) -> dict[str, Any]:
        """The figures the page shows, as ``/api/status`` answers them."""
        live = self.live() or {}
        running = self.running()
        state: dict[str, Any] = {}
        try:
            _, job = self.job.read()
            state = {
                "state": job.state,
                "pages_saved": job.pages,
                "paused": job.paused,
                "paused_hosts": job.paused_hosts,
                "settings_set": job.overrides,
                "excluded": job.excluded,
                "message": job.message,
            }
        except Exception as exc:  # not yet written, being replaced, damaged: said, not fatal
            state = {"state": "unknown", "message": f"job.json unreadable: {exc}"}
        shown_state = state.get("state", "unknown")
        if running and not live.get("running", False):
            shown_state = "starting"
        elif running:
            shown_state = "running"
        elif shown_state == "running":
            shown_state = "stopped: not running (killed?); rerun the same command to resume"
        pages = live.get("pages", state.get("pages_saved", 0))
        return {
            "job_dir": str(self.path),
            "running": running,
            "state": shown_state,
            "pages": pages,
            "errors": live.get("errors", 0),
            "pages_per_s": live.get("pages_per_s", 0.0) if running else 0.0,
            **{k: v for k, v in live.items() if k not in ("running", "state", "pages", "pid")},
            "paused": state.get("paused", live.get("paused", False)),
            "paused_hosts": state.get("paused_hosts", []),
            "settings_set": state.get("settings_set", {}),
            "excluded": state.get("excluded", []),
            "message": state.get("message"),
            "commands": [
                {k: a.get(k) for k in ("id", "command", "args", "answer", "answered_at")}
                for a in answers(self.path, 10)
            ],
        }

    def journal(self) -> Path:
        live = self.live() or {}
        given = live.get("journal")
        if isinstance(given, str):
            return Path(given)
        try:
            settings, _ = self.job.read()
        except Exception:
            return self.path / "pages.jsonl"
        out = settings.get("out")
        if isinstance(out, list):  # --out is repeatable: the journal is its plain path
            out = next((o for o in out if o.endswith(".jsonl")), None)
        return Path(out) if isinstance(out, str) and out else self.path / "pages.jsonl"

    def pages(self, query: str = "", limit: int = 50) -> dict[str, Any]:
        """The last ``limit`` records, newest first, those that match
        ``query`` if one is given (see the module for the bound)."""
        query = query.strip().lower()
        found: list[dict[str, Any]] = []
        lines = lines_backwards(self.journal(), limit=MAX_SCAN if query else CHUNK)
        complete = True
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line a kill cut
            if isinstance(record, dict) and (not query or matches(record, query)):
                found.append(record_row(record))
                if len(found) >= limit:
                    complete = False
                    break
        return {"query": query, "pages": found, "complete": complete}

    def send(self, name: str, args: dict[str, Any]) -> tuple[str, str | None]:
        """Check and write the command (``control.send_to_job``): its id, and
        its answer now if the crawl will give none; ValueError in one line."""
        return send_to_job(self.path, name, args, self.running())

    def answer(self, ident: str) -> str | None:
        return answer_of(self.path, ident)


class SharedSource:
    """A shared crawl's figures and commands, in its Redis."""

    def __init__(self, redis_url: str, crawl: str) -> None:
        from ..frontier.redis.client import connect, key_prefix

        self.url, self.crawl = redis_url, crawl
        self.client = connect(redis_url)
        self.prefix = key_prefix(crawl)
        self._last: tuple[float, dict[str, Any]] | None = None

    def status(self) -> dict[str, Any]:
        from ..frontier.redis.status import crawl_status

        found = crawl_status(self.url, self.crawl)
        alive = [row for row in found["nodes"] if row.get("alive")]
        return {
            **found,
            "running": bool(alive),
            "state": "running" if alive else "no node running",
            "pages": found.get("done", 0),
            "pages_per_s": found.get("pages_per_s", 0.0),
            "shared": True,
            "at": round(time.time(), 3),
        }

    def pages(self, query: str = "", limit: int = 50) -> dict[str, Any]:
        return {"query": query, "pages": [], "complete": True, "shared": True}

    def send(self, name: str, args: dict[str, Any]) -> tuple[str, str | None]:
        from ..control.shared import live_nodes, send

        parse_command({"command": name, "args": args})  # as every node will check it
        nodes = live_nodes(self.client, self.prefix)
        if name == "stop" and not nodes:
            raise ValueError(f"no node of crawl {self.crawl!r} is running: nothing to stop")
        ident = send(self.client, self.prefix, name, args)
        if not nodes:
            return ident, "no node is running; each applies it at its start"
        return ident, None

    def answer(self, ident: str) -> str | None:
        from ..control.shared import answers_of, live_nodes

        nodes = live_nodes(self.client, self.prefix)
        found = answers_of(self.client, self.prefix, ident)
        if not set(nodes) <= found.keys():
            return None
        return "; ".join(f"{node}: {text}" for node, text in sorted(found.items()))
