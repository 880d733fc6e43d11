"""Budget: how much one node of a shared crawl may lease, and what it was told.

Owned by a :class:`~mpcrawler.frontier.redis.frontier.RedisFrontier`.  The
page budgets are crawl-wide and enforced in ``step.lua``; this part keeps
what the node sends (``max_pages``, ``max_pages_per_host``, ``per_host``
leases of one host in a batch, ``embeds_only``, and the revisits it may
lease: ``lag_ms``, None with revisits off, and ``before_ms``, -1 for no
end) and what comes back: URLs
refused over their host's budget (``over_budget``), and the page permits
of a partitioned crawl's partition 0 (this node's, and those spent and out
crawl-wide).  Embeds count against no page budget: ``left`` leaves them out.

No I/O: the frontier makes the calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import protocol as wire
from .leases import is_embed

__all__ = ["Budget"]


@dataclass
class Budget:
    """This node's page budget and revisit window, as sent to and read from Redis."""

    max_pages: int | None = None
    max_pages_per_host: int | None = None
    per_host: int = 1 << 30
    embeds_only: bool = False  # the next call leases embeds only (lease_embeds)
    over_budget: int = 0  # URLs not admitted: their host's budget was spent
    permits: int = 0  # this node's page permits, as Redis has them after the last call
    spent: int = 0  # crawl-wide
    permits_out: int = 0  # crawl-wide
    lag_ms: int | None = None
    before_ms: int = -1

    def lease_args(self, want: int, others: int, kept: int) -> wire.LeaseArgs:
        """What a call asks to lease (``max_pages`` -1 for none, 0 for embeds
        only; ``others``, ``kept``: a partitioned crawl's hosts elsewhere)."""
        most = 0 if self.embeds_only else -1 if self.max_pages is None else self.max_pages
        return wire.LeaseArgs(want, self.per_host, most, self.lag_ms, self.before_ms, others, kept)

    def answered(self, answer: wire.Reply, ops: Sequence[wire.Op], registered: bool) -> None:
        """A call that sent ``ops`` came back with ``answer`` (``registered``:
        a new session, which holds no permit)."""
        if registered:
            self.permits = 0
        self.spent, self.permits_out = answer.spent, answer.permits_out
        ending = sum(op.k for op in ops if isinstance(op, wire.SpendPermits | wire.ReturnPermits))
        self.permits = max(0, self.permits + answer.granted - ending)
        self.over_budget += sum(1 for a in answer.admitted if a == 2)

    def take_over_budget(self) -> int:
        taken, self.over_budget = self.over_budget, 0
        return taken

    def left(self, counts: wire.Counts, ops: Sequence[wire.Op], taken: int) -> bool:
        """Pages (records plus leases, ``taken`` crawl-wide as this node
        knows it, with the acks of ``ops`` not yet sent) are fewer than
        ``max_pages``; embeds are leased past it."""
        if self.max_pages is None or counts.equeued > 0:
            return True
        acks = sum(1 for op in ops if isinstance(op, wire.Ack) and not is_embed(op.member))
        pages = counts.done - counts.edone + acks + taken - counts.eleased
        return pages < self.max_pages
