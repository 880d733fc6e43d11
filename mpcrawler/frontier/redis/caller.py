"""Caller: one round trip of a shared crawl's node to ``step.lua``, and what its answer means.

Owned by a :class:`~mpcrawler.frontier.redis.frontier.RedisFrontier`,
which says *what* to send (admissions, seen checks, leases wanted, a
heartbeat); this part says *how*: the operations waiting in the outbox and
the hosts' block changes go first, the arguments are built
(:mod:`.protocol`), the link runs the script (:mod:`.link`), and the answer
is handed to the parts it concerns:

- the session (:mod:`.session`): epoch, crawl id, heartbeat; a refusal
  (TAKEN, LOST raise; FENCED drops every lease and registers again);
- the budget (:mod:`.budget`): permits, URLs over a host's budget;
- the hosts (:mod:`.hosts`): those claimed and released, those to shed
  after a heartbeat (given up with their politeness wait);
- the leases (:mod:`.leases`): those leased, less those ``control exclude``
  drops here; after an outage, those recorded under this node that it does
  not hold go back (:func:`.scans.stray_leases`).

::

    frontier --call(admits, checks, want, beat)--> Caller --step--> Link --> Redis
        ^                                            |
        +---- _Step(admitted, leased, checked) <-----+-- answer --> session, budget,
                                                                    hosts, leases, counts
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from ...errors import FrontierUnavailable
from ...web.urls import host_key
from ..base import Admission, UrlInfo
from . import protocol as wire
from .budget import Budget
from .hosts import HostsHeld, fair_share
from .leases import LeasesHeld
from .link import Link, Refused
from .scans import stray_leases
from .session import Session, Taken

__all__ = ["FLUSH_AFTER", "Caller", "Elsewhere", "Step", "seen_slot"]

log = logging.getLogger(__name__)

FLUSH_AFTER = 0.1  # seconds an ack may wait in the outbox for a call to ride on
COUNTS_STALE = 0.5  # seconds before idle counts are read again

# A partitioned crawl shares its hosts crawl-wide (partitions.py): given a
# partition, the hosts of the others and how many of them this node keeps.
Elsewhere = Callable[[int], tuple[int, int]]


@dataclass
class Step:
    """What one call found: per admission, queued; the URLs leased; per check, seen."""

    admitted: list[bool]
    leased: list[UrlInfo]
    checked: list[bool]


def seen_slot(url: str) -> tuple[str, bytes]:
    """(bucket, field) of ``url`` in the seen set: 65,536 small hashes keyed
    by the first two bytes of its 16-byte BLAKE2b digest, so each stays a
    compact listpack (about 20 bytes a URL) up to about 8 million URLs."""
    digest = hashlib.blake2b(url.encode("utf-8"), digest_size=16).digest()
    return digest[:2].hex(), digest[2:]


class Caller:
    """Round trips of node ``session.node`` to partition ``partition`` (keys under ``prefix``)."""

    def __init__(
        self,
        link: Link,
        prefix: str,
        partition: int,
        session: Session,
        budget: Budget,
        elsewhere: Elsewhere | None = None,
    ) -> None:
        self.link, self.prefix, self.partition = link, prefix, partition
        self.session = session
        self.budget = budget
        self.leases = LeasesHeld()
        self.hosts = HostsHeld()
        self.outbox = wire.Outbox()
        self.counts, self.counts_at = wire.Counts(), 0.0
        self.elsewhere = elsewhere

    def queue(self, op: wire.Op) -> None:
        """``op`` goes with the next call."""
        self.outbox.add(op, time.monotonic())

    def call(
        self,
        admits: Sequence[Admission] = (),
        checks: Sequence[str] = (),
        want: int = 0,
        beat: bool = False,
        force: bool = False,
    ) -> Step:
        """One round trip: the outbox, then ``admits``, ``checks``, up to
        ``want`` leases and the heartbeat (registering first if this node
        has no epoch; ``force`` takes its id over from a dead process)."""
        self.session.check()
        register = self.session.registering
        beat = beat or register or self.link.down
        if register:  # a new session says every block afresh
            self.hosts.new_session()
        for op in self.hosts.changes():
            self.queue(op)
        ops = list(self.outbox.ops)
        args = self._arguments(ops, admits, checks, want, beat, force)
        sent = time.monotonic()
        try:
            answer = wire.decode(self.link.step(self.prefix + "seq", args))
        except Refused as refusal:
            self._refused(refusal)
        self.outbox.sent(len(ops))
        self.budget.answered(answer, ops, register)
        self.session.answered(answer, sent, beat)
        leased = self._take(answer)
        if self.link.reconcile:
            self.link.reconcile = False
            self._give_back_strays()
        return Step([a == 1 for a in answer.admitted], leased, answer.checked)

    def stale(self, now: float) -> bool:
        """The counts are older than COUNTS_STALE."""
        return now - self.counts_at >= COUNTS_STALE

    def upkeep(self) -> None:
        """A call if anything has waited long enough: an ack older than
        FLUSH_AFTER, the heartbeat (every ``beat_interval``), stale counts.
        While Redis is down, a heartbeat after each backoff, and
        FrontierError once the outage outlasts the link's timeout."""
        now = time.monotonic()
        if self.link.down:
            if self.link.may_retry(now):
                with contextlib.suppress(FrontierUnavailable):
                    self.call(beat=True)
            return
        beat = self.session.beat_due(now)
        flush = bool(self.outbox) and now - self.outbox.since >= FLUSH_AFTER
        if beat or flush or self.stale(now):
            with contextlib.suppress(FrontierUnavailable):
                self.call(beat=beat)

    def register(self) -> None:
        """Join the crawl with a new epoch, taking the id over from a dead
        process of this host if need be (else NodeTaken)."""
        try:
            self.call(beat=True)
        except Taken as taken:
            self.session.taken_over(taken)
            node = self.session.node
            log.info("node %s: its last process (%s) is gone; taking over", node, taken.pid)
            self.call(beat=True, force=True)

    def leave(self) -> None:
        """Give back every lease and host held here at once (each host
        claimed since the last beat too, with its politeness wait; the rest
        with GiveUpAll), send the last heartbeat (its figures stay for
        status), and leave the crawl."""
        hosts = {*self.hosts.owned, *self.hosts.blocks.until, *self.leases.busy()}
        for seq in list(self.leases.held):
            self.queue(wire.Release(seq))
        self.leases.clear()
        now = time.monotonic()
        for host in sorted(hosts):
            self.queue(wire.GiveUp(host, self.hosts.wait_ms(host, now)))
        self.queue(wire.GiveUpAll())
        self.call(beat=True)
        self.queue(wire.Leave())
        self.call()

    def drop(self, item: UrlInfo) -> bool:
        """``item``, leased here, is excluded: its lease is dropped (True)."""
        if not self.leases.is_excluded(item):
            return False
        host, _ = self.leases.pop(item)
        self.queue(wire.Drop(item.seq, host, self.hosts.wait_ms(host, time.monotonic())))
        self.leases.dropped += 1
        return True

    def _arguments(
        self,
        ops: Sequence[wire.Op],
        admits: Sequence[Admission],
        checks: Sequence[str],
        want: int,
        beat: bool,
        force: bool,
    ) -> list[Any]:
        """The script's arguments for a call (see ``call``)."""
        header = self.session.header(self.prefix, force)
        to_admit = [
            wire.AdmitArgs(seen_slot(url), host_key(url), url, depth, priority, kind, lastmod or "")
            for url, depth, priority, kind, lastmod in admits
        ]
        others, kept = self._elsewhere()
        lease = self.budget.lease_args(want, others, kept)
        heartbeat = self.session.beat(self.hosts.resync) if beat else None
        per_host = self.budget.max_pages_per_host or 0
        checked = [seen_slot(url) for url in checks]
        return wire.encode(header, ops, to_admit, per_host, checked, lease, heartbeat)

    def _elsewhere(self) -> tuple[int, int]:
        return (0, 0) if self.elsewhere is None else self.elsewhere(self.partition)

    def _take(self, answer: wire.Reply) -> list[UrlInfo]:
        """What a call's ``answer`` says of this node: the hosts it holds,
        the counts, its heartbeat; the URLs it leased (those excluded here
        are dropped)."""
        self.hosts.took(answer.claimed, answer.released)
        self.counts, self.counts_at = answer.counts, time.monotonic()
        leased = []
        for member, entry in zip(answer.leased, answer.entries, strict=True):
            item = self.leases.add(member, entry)
            if not self.drop(item):
                leased.append(item)
        if answer.beat is not None:
            self._after_beat(answer.beat)
        return leased

    def _refused(self, refusal: Refused) -> NoReturn:
        """The script refused a call (nothing was written): act on why, and raise."""
        why = self.session.refused(refusal, self.link.url)  # TAKEN, LOST raise
        log.warning(
            "node %s was declared dead by the crawl (%s): dropping its %d leases, which "
            "are other nodes' work now, and joining again",
            self.session.node,
            why,
            len(self.leases.held),
        )
        self.leases.clear()
        self.hosts.forget()
        self.register()
        raise FrontierUnavailable(f"node {self.session.node} joined the crawl again") from None

    def _after_beat(self, reply: wire.BeatReply) -> None:
        """Log what the heartbeat reaped; shed the hosts over this node's share."""
        if reply.reaped:
            log.info("gave back %d leases of nodes whose heartbeat ran out", reply.reaped)
        self.hosts.beat(reply.held)
        others, kept = self._elsewhere()
        session = self.session
        share = max(0, fair_share(session.hosts + others, session.alive) - kept)
        now = time.monotonic()
        for host in self.hosts.shed(self.leases.busy(), share):
            self.queue(wire.GiveUp(host, self.hosts.wait_ms(host, now)))

    def _give_back_strays(self) -> None:
        """Give back every lease recorded under this node's id that it does not hold."""
        try:
            for seq in stray_leases(self.link, self.prefix, self.session.node, self.leases.held):
                self.queue(wire.Release(seq))
        except FrontierUnavailable:
            return
        if self.outbox:
            with contextlib.suppress(FrontierUnavailable):
                self.call()
