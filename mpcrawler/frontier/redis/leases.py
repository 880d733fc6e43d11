"""LeasesHeld: the URLs one node of a shared crawl holds on lease.

Owned by a :class:`~mpcrawler.frontier.redis.frontier.RedisFrontier`.
Redis records each lease under the node's id (``leased``); this part keeps
the node's side of them:

- ``held``: every lease, by its sequence number, with its host and its
  queue member as Redis has it (an ack sends both back), and the UrlInfo
  handed out for it (``holds`` compares by identity: a lease that passed to
  another node and came back is another lease);
- ``waiting``: those leased by the last call and not yet taken by ``lease``;
- ``dry_until``: a call that found fewer URLs than it asked for is not made
  again before then (``LEASE_POLL``), unless something changed;
- ``excluded``: ``control exclude``'s rule, which drops a lease met here.

No I/O: the frontier sends the operations.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable
from typing import NamedTuple

from ...web.urls import host_key
from ..base import UrlInfo

__all__ = ["LEASE_POLL", "Lease", "LeasesHeld", "is_embed", "url_info"]

LEASE_POLL = 0.25  # seconds before a lease that found nothing asks again


def is_embed(member: str) -> bool:
    """A queue member (``[seq, url, depth, priority, kind, lastmod]``) of kind ``embed``."""
    return ',"embed",' in member


def url_info(member: str | bytes, entry: bytes = b"") -> UrlInfo:
    """The UrlInfo of a queue member, with the state of its revisit entry, if any."""
    seq, url, depth, priority, kind, lastmod, *_ = json.loads(member)  # 'R': a revisit's copy
    state = entry.split(b"\t", 5)[5].decode() if entry else None  # see step.lua's rv_fields
    return UrlInfo(url, int(depth), int(priority), int(seq), kind, lastmod or None, state)


class Lease(NamedTuple):
    """A lease this node holds: its host, its queue member, and the UrlInfo handed out."""

    host: str
    member: str
    item: UrlInfo


class LeasesHeld:
    """The node's leases: held, waiting to be taken, and when to ask again."""

    def __init__(self) -> None:
        self.held: dict[int, Lease] = {}
        self.waiting: collections.deque[UrlInfo] = collections.deque()
        self.dry_until = 0.0
        self.excluded: Callable[[str], bool] | None = None  # `control exclude`
        self.dropped = 0  # leases dropped by it here

    def add(self, member: bytes, entry: bytes) -> UrlInfo:
        """A lease a call returned: held from now on."""
        item = url_info(member, entry)
        self.held[item.seq] = Lease(host_key(item.url), member.decode(), item)
        return item

    def pop(self, item: UrlInfo) -> tuple[str, str]:
        """``item``'s lease ends here: its host and member ('' if not held)."""
        lease = self.held.pop(item.seq, None)
        return (lease.host, lease.member) if lease else (host_key(item.url), "")

    def holds(self, item: UrlInfo) -> bool:
        lease = self.held.get(item.seq)
        return lease is not None and lease.item is item

    def is_excluded(self, item: UrlInfo) -> bool:
        return self.excluded is not None and self.excluded(item.url)

    def busy(self) -> set[str]:
        """The hosts with a lease held here."""
        return {lease.host for lease in self.held.values()}

    def on(self, host: str) -> bool:
        """A lease on ``host`` is held here."""
        return any(lease.host == host for lease in self.held.values())

    def pages(self) -> int:
        """Leases of pages (not embeds) held here, taken or not."""
        return sum(1 for lease in self.held.values() if not is_embed(lease.member))

    def next(self) -> UrlInfo | None:
        return self.waiting.popleft() if self.waiting else None

    def clear(self) -> None:
        """Every lease is gone (given back, or other nodes' work now)."""
        self.held.clear()
        self.waiting.clear()
