"""The live file: what a running crawl says of itself once a second.

The master (the only writer of crawl state) writes ``DIR/live.json`` every
``INTERVAL`` seconds, atomically (a temporary file renamed over it), for
``mpcrawler web`` to read without the job's lock and without a word to the
crawl.  It is a view, not state: nothing reads it back, a failed write
(a full disk) is skipped and logged once, and it says ``running: false``
once the run ends.

What it holds, each part bounded whatever the crawl's size:

- the figures: pages and errors (the job's), by status class and error
  kind, this run's body bytes, the URLs by state, paused or not;
- ``history``: (seconds since the run began, pages, errors) a point a
  second, the last ``HISTORY`` of them (the page's charts);
- ``hosts``: the ``TOP`` hosts with most requests in flight or held, each
  with its queue (where the frontier can tell), delay, pace and wait; the
  paused hosts; the groups the answers slowed down (the latest ``TOP``);
- ``workers``: each with its slots in use and the restarts;
- ``settings`` that a person steering the crawl reads (``SHOWN``), and the
  ``budget`` left: pages, run time, bytes.

``view`` builds the dict from the crawl's parts (no I/O); ``LiveFile``
keeps the history and writes it when it is due (``update``).
"""

from __future__ import annotations

import collections
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..output.metrics import status_class

if TYPE_CHECKING:
    from ..frontier import Frontier
    from ..master.counters import Counters
    from ..master.pool import WorkerPool
    from ..master.scheduler import Scheduler
    from ..output.jobdir import JobState
    from ..settings import Settings

__all__ = ["FILE", "HISTORY", "INTERVAL", "SHOWN", "TOP", "LiveFile", "Parts", "view"]

log = logging.getLogger(__name__)

FILE = "live.json"
INTERVAL = 1.0  # seconds between writes
HISTORY = 300  # points of the charts: five minutes
TOP = 20  # hosts of each list
# The settings shown: what a person steering a crawl reads (and ``set`` changes).
SHOWN = (
    "seeds",
    "workers",
    "threads",
    "host_concurrency",
    "delay",
    "max_pages",
    "max_depth",
    "max_duration",
    "max_total_bytes",
    "robots",
    "dedup",
    "extract",
    "render",
    "downloader",
    "analyzer",
    "politeness_key",
    "redis",
)


@dataclass
class Parts:
    """What the live view reads: the crawl's parts (read only)."""

    settings: Settings
    counters: Counters
    scheduler: Scheduler
    pool: WorkerPool
    frontier: Frontier
    state: JobState  # paused, paused hosts, restarts before this run
    journal: Path  # the records, for the page's last pages and search


def view(parts: Parts, states: dict[str, int], now: float, started: float) -> dict[str, Any]:
    """The live figures of the crawl at ``now`` (monotonic; ``started``: the
    run's start), as plain JSON data."""
    s, counters, state = parts.settings, parts.counters, parts.state
    statuses: collections.Counter[str] = collections.Counter()
    for status, count in counters.statuses.items():
        statuses[status_class(status)] += count
    elapsed = now - started
    return {
        "running": True,
        "pid": os.getpid(),
        "at": round(time.time(), 3),
        "elapsed": round(elapsed, 1),
        "pages": counters.page_records,
        "errors": sum(counters.errors.values()),
        "pages_per_s": round(counters.rate(), 1),
        "statuses": dict(statuses),
        "errors_by_kind": dict(counters.errors),
        "bytes": counters.run_bytes,
        "states": states,
        "paused": state.paused,
        "hosts": hosts(parts, now),
        "workers": workers(parts),
        "settings": {name: shown(s.public(name)) for name in SHOWN},
        "budget": budget(parts, elapsed),
        "journal": str(parts.journal),
    }


def shown(value: Any) -> Any:
    """A setting as JSON shows it: a long list cut to its first ten."""
    if isinstance(value, (list, tuple)):
        return [*value[:10], f"and {len(value) - 10} more"] if len(value) > 10 else list(value)
    return value


def hosts(parts: Parts, now: float) -> dict[str, Any]:
    """The busiest hosts (requests in flight and held), the paused ones and
    the slowed groups: each list at most TOP long, read without a scan of
    every host (the in-flight requests are at most the slots)."""
    scheduler = parts.scheduler
    busy: collections.Counter[str] = collections.Counter(
        request.host for request in parts.pool.in_flight.values()
    )
    queued_of = getattr(parts.frontier, "queued_of", None)  # a local frontier's
    busiest = []
    for key, count in busy.most_common(TOP):
        host = scheduler.hosts.get(key)
        group = None if host is None else host.group
        busiest.append(
            {
                "host": key,
                "in_flight": count,
                "held": 0 if host is None else len(host.queue),
                "queued": None if queued_of is None else queued_of(key),
                "delay": None if group is None else group.delay,
                "pace": None if group is None else group.pace,
                "wait": None if group is None else round(max(0.0, group.next_start - now), 2),
                "paused": host is not None and host.paused,
            }
        )
    slowed = []
    for key in reversed(scheduler.slowed):
        group = scheduler.groups.get(key)
        if group is None:
            continue  # parked since
        held = sum(len(h.queue) for h in group.members.values())
        slowed.append(
            {
                "host": key,
                "pace": round(group.pace, 2),
                "hold": round(max(0.0, group.hold_until - now), 2),
                "held": held,
                "in_flight": group.in_flight,
            }
        )
        if len(slowed) >= TOP:
            break
    return {
        "busiest": busiest,
        "slowed": slowed,
        "paused": parts.state.paused_hosts[:TOP],
        "paused_count": len(parts.state.paused_hosts),
    }


def workers(parts: Parts) -> dict[str, Any]:
    """Each worker process: its slots in use of ``--threads``; the restarts."""
    pool = parts.pool
    return {
        "slots": parts.settings.startup.threads,
        "restarts": pool.restarts,
        "restarts_before": parts.state.worker_restarts,
        "processes": [
            {"index": w.index, "pid": w.pid, "busy": len(w.requests)}
            for w in list(pool.workers.values())[:256]
        ],
    }


def budget(parts: Parts, elapsed: float) -> dict[str, Any]:
    """What is left of each budget set (None: none set)."""
    s, counters = parts.settings, parts.counters
    pages_left = None
    if s.limits.max_pages is not None:
        pages_left = max(
            0, s.limits.max_pages - (counters.page_records - parts.state.pass_start_pages)
        )
    return {
        "pages_left": pages_left,
        "seconds_left": None
        if s.limits.max_duration is None
        else max(0.0, s.limits.max_duration - elapsed),
        "bytes_left": None
        if s.limits.max_total_bytes is None
        else max(0, s.limits.max_total_bytes - counters.run_bytes),
    }


@dataclass
class LiveFile:
    """``DIR/live.json``, written by the master: ``update`` it when due."""

    directory: Path
    parts: Parts
    started: float = field(default_factory=time.monotonic)  # the run's start
    due: float = 0.0
    history: collections.deque[tuple[float, int, int]] = field(
        default_factory=lambda: collections.deque(maxlen=HISTORY)
    )
    failed: bool = False  # a write failed: logged once

    @property
    def path(self) -> Path:
        return self.directory / FILE

    def update(self, now: float, states: dict[str, int]) -> None:
        """Write the view at ``now`` if it is due (every INTERVAL seconds)."""
        if now >= self.due:
            self.due = now + INTERVAL
            self.write(view(self.parts, states, now, self.started))

    def write(self, live: dict[str, Any]) -> None:
        """Write ``live`` with the history of its figures, atomically; a
        failure (a full disk) is logged once and skipped."""
        self.history.append((live["elapsed"], live["pages"], live["errors"]))
        staged = self.directory / f".{FILE}.tmp"
        try:
            staged.write_text(json.dumps({**live, "history": list(self.history)}))
            os.replace(staged, self.path)
        except OSError as exc:
            if not self.failed:
                log.warning(
                    "cannot write %s (the web view shows what it last said): %s", self.path, exc
                )
            self.failed = True

    def ended(self, states: dict[str, int], state: str) -> None:
        """The run is over: the last view, ``running: false`` with the job's ``state``."""
        live = view(self.parts, states, time.monotonic(), self.started)
        self.write({**live, "running": False, "state": state})
