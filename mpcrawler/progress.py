"""The progress line on stderr: pages done, queued, in flight, pages/s.

A thin wrapper over tqdm, used by the master only.  tqdm's monitor thread is
turned off: the master forks nothing after it starts, but a thread that
nobody needs is one less thing to reason about.
"""

from __future__ import annotations

import sys
from typing import Any

from tqdm import tqdm

__all__ = ["Progress"]

tqdm.monitor_interval = 0


class Progress:
    def __init__(self, *, disabled: bool, total: int | None = None, initial: int = 0) -> None:
        self._bar: tqdm[Any] | None = None
        self._done = initial
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
        self._done = 0

    def update(self, done: int, fields: dict[str, Any]) -> None:
        if self._bar is None:
            return
        if done != self._done:
            self._bar.update(done - self._done)
            self._done = done
        self._bar.set_postfix(fields, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
