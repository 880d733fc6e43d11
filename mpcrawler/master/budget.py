"""A run's budgets (--max-duration, --max-total-bytes): which one is spent.

A pure value: the engine asks ``spent`` at every turn, with the run's time
and the body bytes its pages downloaded, and stops gracefully (in-flight
requests finish, the job is saved) when one is; the command says which
and exits ``EXIT_BUDGET``.  Both count this run only: the same command goes
on with the job, and with a new budget (a nightly job's 2 hours each night).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import Settings

__all__ = ["RunBudget", "format_bytes", "format_duration"]


@dataclass(frozen=True)
class RunBudget:
    max_duration: float | None = None  # seconds
    max_bytes: int | None = None  # body bytes downloaded

    @classmethod
    def from_settings(cls, settings: Settings) -> RunBudget:
        return cls(settings.max_duration, settings.max_total_bytes)

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
