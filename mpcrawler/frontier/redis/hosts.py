"""HostsHeld: the hosts one node of a shared crawl holds, and what it has told
Redis of them.

Owned by a :class:`~mpcrawler.frontier.redis.frontier.RedisFrontier`.  A
node leases only from hosts it owns (see that module); this part keeps, on
the node's side:

- ``owned``: the hosts Redis has made the node's, as each call's claims and
  releases said (a heartbeat lists them all again when the count
  disagrees: ``resync``);
- ``blocks``: the hosts the scheduler said must wait, and until when;
- ``paced``: when each host may next be started on, as the last ack of it
  said (the scheduler's politeness, which a block FOREVER hides): a host
  given up carries the later of the two to its next owner (``wait_ms``);
- ``draining``: the hosts over the node's fair share, being shed (none is
  leased from; each goes once idle);
- which of them Redis has as blocked here (``told``): a host blocked or
  draining is told once (op ``Block``), and again when that ends
  (``Unblock``), never at each call.

No I/O: the frontier sends the operations ``changes`` returns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..base import FOREVER
from ..hostblocks import HostBlocks
from . import protocol as wire

__all__ = ["HostsHeld", "fair_share", "hosts_to_shed"]


def fair_share(hosts: int, nodes: int) -> int:
    """The hosts one node may hold: ``ceil(hosts / nodes)`` (the Lua script
    applies the same rule when it lets a node claim a host)."""
    return math.ceil(hosts / max(1, nodes))


def hosts_to_shed(held: Iterable[str], busy: set[str], share: int) -> list[str]:
    """The hosts a node holding ``held`` should give up to get down to
    ``share``: those it has nothing leased from first (they can go at once),
    then busy ones (they go once their work is done); in name order, so the
    choice is stable from one heartbeat to the next."""
    held = list(held)
    excess = len(held) - share
    if excess <= 0:
        return []
    held.sort()
    idle = [h for h in held if h not in busy]
    return (idle + [h for h in held if h in busy])[:excess]


class HostsHeld:
    """The node's hosts: owned, blocked, draining, and told."""

    def __init__(self) -> None:
        self.blocks = HostBlocks()
        self.owned: set[str] = set()  # as the calls' claims and releases said
        self.draining: set[str] = set()
        self.resync = True  # the next heartbeat lists every host held here
        self.paced: dict[str, float] = {}  # host -> its next start here (monotonic)
        self._told: set[str] = set()  # hosts Redis has as blocked here (blk:NODE)
        self._retell: set[str] = set()  # hosts whose block changed since the last call

    def block(self, host: str, until: float) -> bool:
        """The scheduler's block (0: none); True if it changed."""
        changed = self.blocks.set(host, until)
        if changed:
            self._retell.add(host)
        return changed

    def pace(self, host: str, wait: float, now: float) -> None:
        """An ack of ``host`` said it may be started on ``wait`` seconds after ``now``."""
        if wait > 0:
            self.paced[host] = now + wait
        else:
            self.paced.pop(host, None)

    def wait_ms(self, host: str, now: float) -> int:
        """How long the next owner of ``host`` must wait (ms): this node's
        block on it, or its pace, whichever ends later."""
        until = self.blocks.get(host)
        wait = max(0.0 if until == FOREVER else until - now, self.paced.get(host, 0.0) - now)
        return max(0, int(wait * 1000))

    def wake(self, now: float) -> bool:
        """Unblock the hosts whose time has come; True if any did."""
        woken = self.blocks.wake(now)
        self._retell.update(woken)
        return bool(woken)

    def new_session(self) -> None:
        """The node registered again: Redis knows none of its blocks."""
        self._told.clear()
        self._retell.update(self.blocks.until, self.draining)

    def changes(self) -> list[wire.Op]:
        """Block and Unblock for the hosts whose state changed since they
        were last told (told as sent: a call that fails keeps them in the
        outbox)."""
        ops: list[wire.Op] = []
        for host in self._retell:
            blocked = host in self.blocks or host in self.draining
            if blocked != (host in self._told):
                ops.append(wire.Block(host) if blocked else wire.Unblock(host))
                if blocked:
                    self._told.add(host)
                else:
                    self._told.discard(host)
        self._retell.clear()
        return ops

    def took(self, claimed: Iterable[str], released: Iterable[str]) -> None:
        """A call released these hosts (its ops), then claimed those (its lease)."""
        self.owned.difference_update(released)
        for host in released:
            self.paced.pop(host, None)
        self.owned.update(claimed)

    def beat(self, held: int | list[str]) -> None:
        """What a heartbeat said the node holds: all of them, or a count."""
        if isinstance(held, list):
            self.owned, self.resync = set(held), False
        elif held != len(self.owned):  # a reply lost to a fault: ask for them all
            self.resync = True

    def shed(self, busy: set[str], share: int) -> list[str]:
        """Mark exactly the hosts over ``share`` as draining now (those with
        nothing leased, not in ``busy``, first); the idle ones among them,
        to give up at once.  A host marked at an earlier beat and no longer
        over the share is leased from again (kept marked, it would be owned,
        queued and never leased: the crawl would not end)."""
        shed = hosts_to_shed(self.owned, busy, share)
        self._retell |= self.draining.symmetric_difference(shed)
        self.draining = set(shed)
        return [host for host in shed if host not in busy]

    def forget(self) -> None:
        """The node was declared dead: it holds no host now."""
        self.draining.clear()
        self.paced.clear()
        self.owned = set()
        self.resync = True

    def kept(self) -> tuple[int, int]:
        """The hosts owned, and how many of them are kept (not being shed)."""
        return len(self.owned), len(self.owned) - len(self.draining & self.owned)
