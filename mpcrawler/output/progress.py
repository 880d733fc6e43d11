"""The progress line on stderr: pages done, pages/s, elapsed, then the
crawl's fields (errors, queued, buffered, downloading, parsing) in that
order, as many as fit the terminal's width (80 columns without one).

A thin wrapper over tqdm, used by the master only.  tqdm's monitor thread is
turned off: the master forks nothing after it starts, but a thread that
nobody needs is one less thing to reason about.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["Progress"]

# "1234 pages 56.7/s [01:23], errors=0 queued=789 ..." (tqdm puts the ", ")
_FORMAT = "{n_fmt} pages {rate_noinv_fmt} [{elapsed}]{postfix}"
_FORMAT_OF_TOTAL = "{n_fmt}/{total_fmt} pages {rate_noinv_fmt} [{elapsed}<{remaining}]{postfix}"


def _fit(fields: dict[str, Any], room: int) -> str:
    """``name=value`` pairs in their order, as many as fit in ``room`` columns."""
    text = ""
    for name, value in fields.items():
        item = f"{name}={value}"
        if len(text) + len(item) + 1 > room:
            break
        text = f"{text} {item}" if text else item
    return text


class Progress:
    """The progress line on the terminal (tqdm), when one is wanted."""

    def __init__(self, *, disabled: bool, total: int | None = None, initial: int = 0) -> None:
        self._bar: tqdm[Any] | None = None
        self._done = initial
        self._last = 0.0
        self._width = shutil.get_terminal_size((80, 24)).columns
        if not disabled:
            from tqdm import tqdm  # only with a progress line: it costs 40 ms to import

            tqdm.monitor_interval = 0
            self._bar = tqdm(
                initial=initial,
                total=total,
                unit="",
                file=sys.stderr,
                mininterval=0.25,
                smoothing=0.1,
                ncols=self._width,  # tqdm cuts the line there, whatever happens
                bar_format=_FORMAT if total is None else _FORMAT_OF_TOTAL,
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
        self._bar.set_postfix_str(_fit(fields(), self._room()), refresh=False)

    def _room(self) -> int:
        """Columns left for the fields after the bar's own start."""
        assert self._bar is not None
        start = self._bar.format_meter(**{**self._bar.format_dict, "postfix": ""})
        # The rate shown may be wider by the time the line is drawn ("?/s").
        return self._width - len(start) - len(", 12345.67/s")

    def close(self, done: int, fields: Callable[[], dict[str, Any]]) -> None:
        """Show the final state (updates may have been skipped) and end the line."""
        if self._bar is not None:
            self._bar.update(done - self._done)
            self._bar.set_postfix_str(_fit(fields(), self._room()), refresh=False)
            self._bar.close()
            self._bar = None
