"""How a run ends, besides finishing: its budgets (--max-duration,
--max-total-bytes), a crawl that fetched nothing, and the failed pages a
run tries again.  Pure values and functions; the engine and the crawler
route them, the command turns them into exit codes:

- ``RunBudget.spent``: the engine asks at every turn, with the run's time
  and the body bytes its pages downloaded, and stops gracefully (in-flight
  requests finish, the job is saved) when a budget is spent.  Both count
  this run only: the same command goes on with the job, and with a new
  budget (a nightly job's 2 hours each night).
- ``fetched_nothing``: a job none of whose pages got an answer from a
  server (its seeds unreachable: a closed port, DNS failing, robots.txt
  unreachable) has not succeeded, whatever it recorded: it ends ``failed``
  and its next run tries its seeds again.
- ``retryable``: a record of a page that failed for want of an answer (a
  connection, DNS, a timeout, a body cut short, robots.txt unreachable) or
  with a 5xx or 429: what --retry-failed fetches again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..settings import Settings

__all__ = ["RunBudget", "fetched_nothing", "format_bytes", "format_duration", "retryable"]

# Error kinds of a page that got no answer worth keeping: another try may.
RETRYABLE_KINDS = frozenset({"connection", "dns", "timeout", "broken_body", "robots", "http_5xx"})


@dataclass(frozen=True)
class RunBudget:
    """This run's budgets (None: none); ``spent`` names the one spent."""

    max_duration: float | None = None  # seconds
    max_bytes: int | None = None  # body bytes downloaded

    @classmethod
    def from_settings(cls, settings: Settings) -> RunBudget:
        return cls(settings.limits.max_duration, settings.limits.max_total_bytes)

    def spent(self, elapsed: float, body_bytes: int) -> str | None:
        """The budget this run has spent after ``elapsed`` seconds and
        ``body_bytes`` downloaded, as its option says it, or None."""
        if self.max_duration is not None and elapsed >= self.max_duration:
            return f"--max-duration {format_duration(self.max_duration)}"
        if self.max_bytes is not None and body_bytes >= self.max_bytes:
            return f"--max-total-bytes {format_bytes(self.max_bytes)}"
        return None


def format_duration(seconds: float) -> str:
    """``90s``, ``30m``, ``2h``, ``1d``, ``1h30m``: as the option takes it."""
    left = round(seconds)
    if left < 60:
        return f"{seconds:g}s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    return "".join(parts)


def format_bytes(count: int) -> str:
    """``5GB``, ``500MB``, ``600KB``, or bytes: the largest unit that divides it."""
    for unit, size in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count % size == 0:
            return f"{count // size}{unit}"
    return str(count)


def fetched_nothing(statuses: Mapping[str, int]) -> bool:
    """A job's records by status (``none``: no answer) say that none of its
    pages was answered by a server, and it has some."""
    return bool(statuses) and all(
        status == "none" or not count for status, count in statuses.items()
    )


def retryable(record: Mapping[str, Any]) -> bool:
    """A page's record that failed for want of an answer, or with a 5xx or
    a 429: another run may get it (``RETRYABLE_KINDS``)."""
    if record.get("kind", "page") != "page" or not record.get("error"):
        return False
    return record.get("error_kind") in RETRYABLE_KINDS or record.get("status") == 429
