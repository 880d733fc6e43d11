"""Permits: a partitioned crawl's page budget, as permits kept in partition 0.

Owned by a :class:`~mpcrawler.frontier.redis.partitions.PartitionedFrontier`.
``--max-pages`` is crawl-wide, but a partition's script sees only its own
keys; so partition 0 keeps the budget as permits (``permits``,
``permits_out``, ``spent``, see ``step.lua``), and a node takes a batch of
them (one call to partition 0) before it leases pages from any partition.
A page leased holds one until its ack spends it; permits not on a lease go
back when no partition has work for this node.  Embeds need none.

Spending and giving back ride in partition 0's outbox, merged with what is
waiting there (one op each a call); taking is a call of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from . import protocol as wire
from .caller import Caller
from .leases import LEASE_POLL

__all__ = ["Permits"]


class Permits:
    """The permits of partition 0's ``first`` caller; ``pages_held`` counts
    the pages this node holds on lease in every partition."""

    def __init__(self, first: Caller, pages_held: Callable[[], int]) -> None:
        self.first, self.pages_held = first, pages_held
        self.max_pages: int | None = None
        self._retry = 0.0  # no permit was left: not asked again before this

    def free(self) -> int:
        """Permits held here and not on a lease (a lease's goes when it is acked)."""
        held = self.first.budget.permits - self.first.outbox.permits_ending()
        return max(0, held - self.pages_held())

    def permitted(self, want: int, take: bool = False) -> int:
        """How many of ``want`` leases the page budget allows now; with
        ``take``, asking partition 0 for more (a call) if short.  Raises
        FrontierUnavailable if ``take`` finds partition 0 down."""
        if self.max_pages is None or want <= 0:
            return max(0, want)
        free = self.free()
        now = time.monotonic()
        if free < want and take and now >= self._retry:
            self.first.link.check_up()
            self.first.queue(wire.TakePermits(2 * want - free, self.max_pages))  # a batch ahead
            self.first.call()
            free = self.free()
            if not free:
                self._retry = now + LEASE_POLL
        return min(want, free)

    def spend(self) -> None:
        """A page was done, crawl-wide."""
        self.first.outbox.add_permits(wire.SpendPermits(1), time.monotonic())

    def give_back(self) -> None:
        """The permits not on a lease go back (another node may have work for them)."""
        if self.max_pages is not None and (unused := self.free()) > 0:
            self.first.outbox.add_permits(wire.ReturnPermits(unused), time.monotonic())

    def left(self) -> bool:
        """Pages may still be leased: permits held here, or not all spent or out."""
        if self.max_pages is None or self.free() > 0:
            return True
        budget = self.first.budget
        return budget.spent + budget.permits_out < self.max_pages
