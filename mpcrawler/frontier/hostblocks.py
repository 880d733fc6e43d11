"""HostBlocks: which hosts may not be leased from, and until when.

The scheduler decides politeness and tells a frontier, through
``Frontier.block``, that a host must wait; every frontier keeps those blocks
the same way, here: a dict of each blocked host's time (monotonic seconds,
or FOREVER: until blocked again with a time) and a heap of the timed ones,
so that ``wake`` finds the hosts whose time has come without a scan.  A heap
entry whose host was blocked again since is stale and skipped.  Not
persisted: a reopened frontier has every host ready.
"""

from __future__ import annotations

import heapq

from .base import FOREVER

__all__ = ["HostBlocks"]


class HostBlocks:
    """Blocked hosts and until when."""

    def __init__(self) -> None:
        self.until: dict[str, float] = {}
        self._timed: list[tuple[float, str]] = []

    def set(self, host: str, until: float) -> bool:
        """Block ``host`` until ``until`` (0 or less: unblock it).  True if
        that changed anything."""
        if until <= 0:
            return self.until.pop(host, None) is not None
        if self.until.get(host) == until:
            return False
        self.until[host] = until
        if until != FOREVER:
            heapq.heappush(self._timed, (until, host))
        return True

    def wake(self, now: float) -> list[str]:
        """Unblock the hosts whose time is ``now`` or before; those hosts."""
        timed, woken = self._timed, []
        while timed and timed[0][0] <= now:
            until, host = heapq.heappop(timed)
            if self.until.get(host) == until:
                del self.until[host]
                woken.append(host)
        return woken

    def next_time(self, now: float) -> float | None:
        """The earliest time after ``now`` a host's block runs out (None: none
        is timed)."""
        self.wake(now)
        return self._timed[0][0] if self._timed else None

    @property
    def timed(self) -> bool:
        """Some host is blocked until a time (``wake`` may unblock it)."""
        return bool(self._timed)

    def __contains__(self, host: str) -> bool:
        return host in self.until

    def __len__(self) -> int:
        return len(self.until)

    def get(self, host: str) -> float:
        """Until when ``host`` is blocked (0: it is not)."""
        return self.until.get(host, 0.0)
