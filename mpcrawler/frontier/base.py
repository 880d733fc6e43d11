"""The Frontier protocol: what the master asks of any frontier implementation.

A frontier owns both the seen set (dedup) and the queue of URLs to fetch,
kept per host.  The master admits URLs, leases the best URL of a host that
may be fetched now, and acks it once its record is written (or releases it,
to be handed out again).  The scheduler tells the frontier which hosts must
wait (``block``); the frontier never decides politeness itself.

The ordering convention, written down once:

* every URL has an integer **priority**; higher is fetched first;
* within a host, URLs leave highest priority first, and first-in, first-out
  among equal priorities (the order ``admit`` saw them);
* across hosts that may be fetched now, the host whose best URL has the
  highest priority goes first; ties go to the URL admitted first.

With no host blocked this is exactly one global order: priority, then
admission order.  Implementations: :class:`mpcrawler.frontier.local.LocalFrontier`
(files in the job directory; the default).  The contract test
(``tests/test_frontier_contract.py``) runs against every implementation.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..errors import FrontierError

__all__ = ["FOREVER", "KINDS", "Frontier", "FrontierError", "UrlInfo"]

FOREVER = math.inf  # block(host, FOREVER): until the host is blocked again with a time


KINDS = ("page", "sitemap")  # what a URL is fetched as


class UrlInfo(NamedTuple):
    """One queued URL.  ``seq`` is its admission number, unique per frontier;
    ``kind`` one of KINDS; ``lastmod`` what a sitemap said of it, if any."""

    url: str
    depth: int
    priority: int
    seq: int
    kind: str = "page"
    lastmod: str | None = None


@runtime_checkable
class Frontier(Protocol):
    """Dedup plus per-host, priority-ordered queues, crash-safe."""

    def admit(
        self,
        url: str,
        depth: int = 0,
        priority: int = 0,
        kind: str = "page",
        lastmod: str | None = None,
    ) -> bool:
        """Queue ``url`` unless it was ever admitted or marked seen; True if queued."""

    def is_seen(self, url: str) -> bool:
        """``url`` was admitted or marked seen."""

    def lease(self, now: float | None = None) -> UrlInfo | None:
        """The best URL of a host not blocked at ``now`` (monotonic seconds),
        or None.  It stays taken until ``ack`` or ``release``; after a crash
        it is queued again in its place."""

    def ack(self, item: UrlInfo, seen: list[str] | tuple[str, ...] = ()) -> None:
        """``item`` is done; ``seen`` (the URLs its redirect chain went
        through) are marked seen in the same step."""

    def release(self, item: UrlInfo) -> None:
        """Give a leased ``item`` back, to its place in its host's queue."""

    def block(self, host: str, until: float) -> None:
        """``host`` (see :func:`mpcrawler.urls.host_key`) may not be leased
        from before ``until`` (monotonic seconds; ``FOREVER`` until blocked
        again; 0 to unblock).  Not persisted: a reopened frontier has every
        host ready."""

    def next_ready(self, now: float) -> float | None:
        """The earliest time (monotonic) after ``now`` a blocked host becomes
        ready, or None."""

    def sync(self) -> None:
        """Everything so far survives this process being killed."""

    def checkpoint(self) -> None:
        """Everything so far is durable (survives a power cut)."""

    def stats(self) -> dict[str, Any]:
        """Counts: at least ``queued`` and ``taken``; ``seen`` if known."""

    def __len__(self) -> int:
        """URLs queued (not counting those taken)."""

    def close(self) -> None:
        """Checkpoint and release everything; taken URLs are queued again on reopening."""
