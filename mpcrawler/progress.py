"""The progress line on stderr: pages done, queued, in flight, pages/s.

A thin wrapper over tqdm, used by the master only.  tqdm's monitor thread is
turned off: the master forks nothing after it starts, but a thread that
nobody needs is one less thing to reason about.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

__all__ = ["Progress"]

tqdm.monitor_interval = 0


class Progress:
    def __init__(self, *, disabled: bool, total: int | None = None, initial: int = 0) -> None:
        self._bar: tqdm[Any] | None = None
        self._done = initial
        self._last = 0.0
        if not disabled:
            self._bar = tqdm(
                initial=initial,
                total=total,
                unit="page",
                file=sys.stderr,
                dynamic_ncols=True,
                mininterval=0.25,
                smoothing=0.1,
            )

    def update(self, done: int, fields: Callable[[], dict[str, Any]]) -> None:
        """Called on every turn of the master's loop; ``fields`` is computed
        only when the line is shown and at most every 0.25 s."""
        if self._bar is None:
            return
        now = time.monotonic()
        if now - self._last < 0.25:
            return
        self._last = now
        if done != self._done:
            self._bar.update(done - self._done)
            self._done = done
        self._bar.set_postfix(fields(), refresh=False)

    def close(self, done: int, fields: Callable[[], dict[str, Any]]) -> None:
        """Show the final state (updates may have been skipped) and end the line."""
        if self._bar is not None:
            self._bar.update(done - self._done)
            self._bar.set_postfix(fields(), refresh=False)
            self._bar.close()
            self._bar = None
