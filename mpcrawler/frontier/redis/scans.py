"""Scans: the two reads of a shared crawl that go through whole keys, not one step.

Used by :class:`~mpcrawler.frontier.redis.frontier.RedisFrontier`, rarely:

- ``drop_matching`` (``control exclude``): every host's queue is read
  through (ZSCAN) and what matches dropped with ``drop.lua``, a host and
  ``DROP_CHUNK`` members at a time, so no call blocks Redis for long;
- ``stray_leases`` (after an outage): the leases recorded under this node's
  id that it does not hold, whose answer was lost to the fault.

Both raise :class:`~mpcrawler.errors.FrontierUnavailable` through the
link when Redis cannot be reached.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container

from .leases import url_info
from .link import Link

__all__ = ["DROP_CHUNK", "drop_matching", "stray_leases"]

DROP_CHUNK = 500  # queue members dropped in one call at most


def drop_matching(link: Link, prefix: str, match: Callable[[str], bool]) -> int:
    """Drop every queued URL of the crawl under ``prefix`` that ``match``
    says True of (it stays seen); how many were."""
    dropped = 0
    try:
        r = link.r
        for key in r.scan_iter(match=prefix + "q:*", count=1000):
            host = key.decode()[len(prefix) + 2 :]
            gone = [m for m, _ in r.zscan_iter(key, count=1000) if match(url_info(m).url)]
            for start in range(0, len(gone), DROP_CHUNK):
                chunk = gone[start : start + DROP_CHUNK]
                dropped += link.drop(prefix + "seq", [prefix, host, *chunk])
    except link.faults as exc:
        raise link.fault(exc) from None
    return dropped


def stray_leases(link: Link, prefix: str, node: str, held: Container[int]) -> list[int]:
    """The leases recorded under ``node`` that are not in ``held``."""
    try:
        return [
            int(seq)
            for seq, raw in link.r.hscan_iter(prefix + "leased", count=1000)
            if json.loads(raw)[2] == node and int(seq) not in held
        ]
    except link.faults as exc:
        raise link.fault(exc) from None
