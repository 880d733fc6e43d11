"""RedisFrontier: the Frontier protocol on a Redis server, shared by the nodes of one crawl.

Used by the master of each node in place of
:class:`~mpcrawler.frontier.local.LocalFrontier`; redis-py talks to the
server.  Redis is the source of truth for every URL not yet recorded: what a
node discovers is admitted to Redis before the page that found it is
recorded, and what it fetches stays leased under its node id until acked.

**Hosts are owned.**  A node leases only from hosts it owns; it claims a
free host when it holds fewer than its fair share (``ceil(hosts / live
nodes)``, worked out in Redis), gives a host up when the host has nothing
queued or leased, and sheds hosts over its share (see :func:`hosts_to_shed`)
when nodes join.  A host given up carries a ``free_at`` time (Redis's clock:
the last owner's delay), before which nobody claims it, so ``--delay``,
Crawl-delay and the concurrency limit hold across nodes as if one machine
did the crawl.

**Leases expire, and are fenced.**  Each node renews a heartbeat (``tick``);
any node's heartbeat gives back the leases and hosts of a node whose
heartbeat ran out for ``lease_timeout``.  ``close`` gives everything back at
once.  A node registers first and gets an *epoch* from Redis (a fencing
token); a node declared dead loses its epoch, so the script refuses every
later call of it (FENCED).  Such a node drops what it held (its leases are
others' work now: ``holds`` says no for them, and the master discards
their results), logs one warning, and registers again as a new member.  A
node also fences itself: it starts no fetch and writes no record while its
last successful heartbeat, timed on its own monotonic clock from when it
was sent, is older than ``(1 - FENCE_MARGIN) x lease_timeout``
(``available``, ``fetch_deadline``): Redis cannot have declared it dead
before then.  Two live processes never share a node id: registering with
the id of a live node is refused (:class:`NodeTaken`), unless that node is
this host's and its process is gone.

**Revisits.**  ``schedule`` is an op of the next step, sent before the
ack that follows it: a hash ``rv`` keeps each scheduled URL's host, depth,
priority, kind, fetch time and state, and a sorted set ``due`` its due
time.  Every step of a node with revisits on (``set_revisits``) first
queues the URLs whose time has come (``step.lua``), and each lease returns
its URL's ``rv`` entry.  A crawl that never revisits writes neither key.

**A lost crawl is an error.**  A crawl has an id, created with its first
registration and kept in each node's job dir; a call that finds it gone
(Redis restarted without persistence, keys deleted) or another crawl's
leaves a tombstone (``lost``) and raises :class:`CrawlLost`: every node
stops (exit 1) and ``status --redis`` says so.  ``reset_crawl`` deletes the
crawl's keys, for a deliberate fresh start.

**One round trip.**  Everything a node says to Redis goes through one Lua
script, ``step.lua``: the acks and releases waiting in the outbox, the
URLs to admit, the seen checks, a batch of leases and the heartbeat, in one
call.  Acks wait in the outbox for the next call (at most ``FLUSH_AFTER``
seconds), so a busy node makes about one call per turn of its loop.  The
one exception is ``exclude`` (``control exclude``), rare and crawl-wide: it
reads every host's queue and drops what matches with ``drop.lua``; from
then on a lease of an excluded URL is dropped (op ``D``), not fetched.

**Faults.**  When Redis cannot be reached, calls raise
:class:`FrontierUnavailable` (``lease`` just returns None), the outbox is
kept, and ``sync`` retries with backoff; after ``redis_timeout`` seconds it
raises :class:`FrontierError`.  A call whose answer was lost may have leased
URLs: once Redis is back, the node gives back every lease recorded under its
id that it does not hold.

Every key of a crawl is under ``mpc:{CRAWL}:`` (the braces are a Redis
Cluster hash tag: all of a crawl's keys live in one slot).  A crawl split
into partitions (:mod:`.partitions`) is one RedisFrontier a partition, the
others under ``mpc:{CRAWL/p}:``; partition 0 then also keeps ``partitions``
and the page permits (``permits``, ``permits_out``, ``spent``)::

    seq, seen, queued, done, errors   counters
    late         records written twice: acks of leases that had passed to another node
    id           the crawl's id;  lost  why its state was lost (a tombstone)
    epochs       counter;  epoch  HASH node -> its current epoch
    seen:XXXX    HASHes of every URL seen, by the first two bytes (XXXX) of
                 its 16-byte BLAKE2b digest; the field is the rest
    q:HOST       ZSET of one host's URLs, scored -priority * 2**33 + seq
    hosts        ZSET of the free hosts with URLs queued, by their best score
    own:NODE     ZSET of NODE's hosts with URLs queued that it may lease from,
                 by their best score;  ownb:NODE  the same of those it may not
    blk:NODE     SET of the hosts NODE said it may not lease from now (ops B, U)
    owner        HASH host -> node;  held:NODE  SET of NODE's hosts
    hostpages    HASH host -> URLs queued (with --max-pages-per-host)
    inflight     HASH host -> URLs leased;  free_at  HASH host -> 'MS|last owner'
    leased       HASH seq -> [host, member, node]
    alive        ZSET node -> heartbeat deadline (Redis's clock, ms)
    nodes, beats HASH node -> its own figures (JSON), last heartbeat (ms)
    started      when the first node's heartbeat came (ms)

A queue member is the JSON array ``[seq, url, depth, priority, kind,
lastmod]``: nothing on Redis is pickle.  A host's best URL is the lowest
score of its queue, and a lease takes, step by step, the best of this
node's hosts not blocked here (the head of ``own:NODE``: a node says when
a host is blocked and unblocked, once, not its whole list at each call)
and (while under its share) of the free ones.  Each call says which hosts
it made the node's and which it gave up, so a heartbeat sends back only
how many the node holds (all of them when the node's count disagrees).

The parts, each with its own state: ``caller.py`` (one round trip, and
what its answer means for each part), ``session.py`` (epoch, heartbeat,
refusals), ``leases.py`` (the leases held), ``budget.py`` (page budgets,
what a lease asks), ``hosts.py`` (hosts held, blocked, paced, shed),
``link.py`` (the connection and its outages), ``protocol.py`` (the
operations and replies, by name), ``scans.py`` (exclude's drop, stray
leases).  This class is the Frontier protocol over them.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...errors import FrontierError, FrontierUnavailable
from ...web.urls import host_key
from ..base import Admission, Frontier, Revisit, UrlInfo
from . import protocol as wire
from .budget import Budget
from .caller import Caller, Elsewhere, seen_slot
from .client import key_prefix
from .content import RedisContentIndex
from .hosts import fair_share, hosts_to_shed
from .leases import LEASE_POLL
from .link import Link
from .scans import drop_matching
from .session import CrawlLost, NodeTaken, Session

__all__ = [
    "CrawlLost",
    "NodeTaken",
    "RedisFrontier",
    "fair_share",
    "hosts_to_shed",
]

log = logging.getLogger(__name__)

BATCH_WINDOW = 0.02  # seconds the master gathers finished pages for one call
ADMIT_CHUNK = 1000  # URLs admitted in one call at most (a call blocks Redis while it runs)


class RedisFrontier(Frontier):
    """The Frontier of crawl ``crawl`` on the Redis server at ``url``, for node ``node``.

    ``crawl_id``: the id this node knew the crawl by (its job dir's), if any;
    ``max_pages`` caps the crawl's pages (records plus leases),
    ``max_pages_per_host`` the URLs queued per host (those refused count in
    ``over_budget``), ``per_host`` a host's URLs in one batch of leases; the
    rest are a partitioned crawl's.  FrontierError if Redis is unreachable.
    """

    batch_window = BATCH_WINDOW

    def __init__(
        self,
        url: str,
        crawl: str,
        node: str,
        *,
        lease_timeout: float = 30.0,
        redis_timeout: float = 300.0,
        max_pages: int | None = None,
        max_pages_per_host: int | None = None,
        per_host: int = 1 << 30,
        crawl_id: str | None = None,
        partition: int = 0,
        client: Any = None,
        new_id: str | None = None,
        elsewhere: Elsewhere | None = None,
    ) -> None:
        self.link = Link(url, client, redis_timeout)
        self.url, self.crawl, self.node = self.link.url, crawl, node
        self.partition, self.prefix = partition, key_prefix(crawl, partition)
        self.session = Session(node, crawl, lease_timeout, crawl_id, new_id)
        budget = Budget(max_pages, max_pages_per_host, per_host)
        caller = Caller(self.link, self.prefix, partition, self.session, budget, elsewhere)
        self.caller, self._call, self._queue_op = caller, caller.call, caller.queue
        # The parts the caller keeps, by name here: what each call changes.
        self.budget, self.leases, self.hosts, self.outbox = (
            budget,
            caller.leases,
            caller.hosts,
            caller.outbox,
        )
        self._closed = False
        try:
            self.caller.register()  # its old session's leases go back, if it had one
        except FrontierUnavailable as exc:
            raise FrontierError(str(exc)) from None

    @property
    def r(self) -> Any:
        """The redis-py client (the crawl's control commands use it too)."""
        return self.link.r

    @property
    def crawl_id(self) -> str:
        return self.session.crawl_id

    # ------------------------------------------------------------ protocol
    def admit_many(self, items: Sequence[Admission], want: int = 0) -> list[bool]:
        """Admit every ``(url, depth, priority, kind, lastmod)`` in one call;
        True for each one queued.  ``want`` leases that many more URLs in the
        same call, for the next ``lease`` calls to take."""
        wire.check_admissions(items)
        if not items:
            return []
        self.link.check_up()
        admitted: list[bool] = []
        waiting = self.leases.waiting
        for start in range(0, len(items), ADMIT_CHUNK):
            chunk = items[start : start + ADMIT_CHUNK]
            last = start + ADMIT_CHUNK >= len(items)
            top_up = max(0, want - len(waiting)) if last else 0
            step = self._call(admits=chunk, want=top_up)
            waiting.extend(step.leased)
            admitted += step.admitted
        dry = len(step.leased) < top_up
        self.leases.dry_until = time.monotonic() + LEASE_POLL if dry else 0.0
        return admitted

    def is_seen(self, url: str) -> bool:
        self.link.check_up()
        return self._call(checks=[url]).checked[0]

    def lease(self, now: float | None = None, want: int = 1) -> UrlInfo | None:
        """The next URL leased to this node, from the batch leased last or
        from a new batch of up to ``want`` (None when Redis is down)."""
        now = time.monotonic() if now is None else now
        self._wake(now)
        leases = self.leases
        while not leases.waiting:
            if self.link.down or now < leases.dry_until:
                return None
            dropped = leases.dropped
            try:
                step = self._call(want=want)
            except FrontierUnavailable:
                return None
            leases.waiting.extend(step.leased)
            if step.leased or leases.dropped == dropped:  # (all dropped as excluded: ask again)
                if len(step.leased) < want:
                    leases.dry_until = now + LEASE_POLL
                break
        return leases.next()

    def lease_embeds(self, now: float | None = None, want: int = 1) -> UrlInfo | None:
        """``lease``, of embeds only (a partitioned crawl whose page permits
        are spent: embeds need none)."""
        self.budget.embeds_only = True
        try:
            return self.lease(now, want)
        finally:
            self.budget.embeds_only = False

    def embeds_queued(self) -> int:
        """Embeds queued crawl-wide, as of the last call."""
        return self.caller.counts.equeued

    def ack(
        self,
        item: UrlInfo,
        seen: list[str] | tuple[str, ...] = (),
        error: bool = False,
        wait: float = 0.0,
    ) -> None:
        now = time.monotonic()
        host, member = self.leases.pop(item)
        self.hosts.pace(host, wait, now)
        slots = tuple(seen_slot(url) for url in seen)
        wait_ms = self.hosts.wait_ms(host, now)
        self._queue_op(wire.Ack(item.seq, host, member, wait_ms, error, slots))
        if host in self.hosts.draining and not self.leases.on(host):
            self._queue_op(wire.GiveUp(host, wait_ms))  # shed: it goes once idle

    def mark_seen(self, urls: Sequence[str]) -> None:
        """Mark ``urls`` seen with the next call (a redirect's hops in this
        partition, whose page was acked in another)."""
        if urls:
            self._queue_op(wire.MarkSeen(tuple(seen_slot(url) for url in urls)))

    def schedule(self, revisits: Sequence[Revisit]) -> None:
        for url, due, depth, priority, kind, state, fetched in revisits:
            host = host_key(url)
            due_ms, fetched_ms = int(due * 1000), int(fetched * 1000)
            op = wire.Schedule(host, url, depth, priority, kind, due_ms, fetched_ms, state)
            self._queue_op(op)

    def set_revisits(self, lag: float | None, before: float = math.inf) -> None:
        self.budget.lag_ms = None if lag is None else int(lag * 1000)
        self.budget.before_ms = -1 if math.isinf(before) else int(before * 1000)
        self.leases.dry_until = 0.0

    def next_due(self) -> float | None:
        first = self.caller.counts.next_due
        lag, before = self.budget.lag_ms, self.budget.before_ms
        if lag is None or first < 0 or 0 <= before <= first:
            return None
        return (first + lag) / 1000.0

    def expedite(self, items: Sequence[tuple[str, float]]) -> int:
        for url, since in items:
            self._queue_op(wire.Expedite(url, int(since * 1000)))
        return len(items)

    def exclude(self, match: Callable[[str], bool], *, drop_queued: bool = True) -> int:
        """From now on this node drops the URLs ``match`` says True of when
        it leases them; with ``drop_queued``, every host's queue is read
        through and what matches dropped, crawl-wide (:mod:`.scans`).
        Raises FrontierUnavailable if Redis is down."""
        leases = self.leases
        leases.excluded = match
        before = len(leases.waiting)  # leased here, not taken: queued as far as anyone knows
        leases.waiting = type(leases.waiting)(i for i in leases.waiting if not self.caller.drop(i))
        here = before - len(leases.waiting)
        if not drop_queued:
            return here
        self.link.check_up()
        self._call()  # releases in the outbox go back to their queues first
        dropped = drop_matching(self.link, self.prefix, match)
        leases.dropped += dropped
        self._call()  # the counts, as they are now
        return here + dropped

    def release(self, item: UrlInfo) -> None:
        self.leases.pop(item)
        self._queue_op(wire.Release(item.seq))
        self.leases.dry_until = 0.0

    def block(self, host: str, until: float) -> None:
        if self.hosts.block(host, until) and until <= 0:
            self.leases.dry_until = 0.0  # a host may be leased from again

    def next_ready(self, now: float) -> float | None:
        self._wake(now)
        dry = self.leases.dry_until
        times = [
            t
            for t in (self.hosts.blocks.next_time(now), dry if dry > now else None)
            if t is not None
        ]
        return min(times) if times else None

    def content_index(self) -> RedisContentIndex:
        """The fingerprints of the crawl's pages, crawl-wide (in this partition's keys)."""
        return RedisContentIndex(self.link, self.prefix)

    def report(self, figures: Mapping[str, Any]) -> None:
        """This node's figures (pages, errors, rate...), carried by its next heartbeat."""
        self.session.figures = dict(figures)

    def sync(self) -> None:
        """Send the outbox now: everything so far survives this process being killed."""
        self.tick()
        if self.outbox and not self.link.down:
            with contextlib.suppress(FrontierUnavailable):
                self._call()

    def tick(self) -> None:
        """Send what has waited long enough (``Caller.upkeep``).  An ack not
        yet sent is never lost: a crash before it re-queues its URL."""
        self.caller.upkeep()

    def heartbeat(self) -> int:
        """Renew this node's leases now, and give back those of nodes whose
        heartbeat ran out; returns how many were given back."""
        self.link.check_up()
        self._call(beat=True)
        return self.session.reaped

    def checkpoint(self) -> None:
        """Nothing to do: Redis's own persistence (AOF) makes it durable."""

    def available(self) -> bool:
        """Redis answered the last call, and this node's last good heartbeat
        is recent enough that its leases are still its own."""
        up = not self.link.down and self.session.lost is None
        return up and time.monotonic() < self.fetch_deadline()

    def fetch_deadline(self) -> float:
        return self.session.fetch_deadline()

    def holds(self, item: UrlInfo) -> bool:
        """``item``'s lease is still this node's (False once it was fenced)."""
        return self.leases.holds(item)

    def stats(self) -> dict[str, Any]:
        up = not self.link.down and self.session.lost is None
        if up and self.caller.stale(time.monotonic()):
            with contextlib.suppress(FrontierUnavailable):
                self._call()
        c = self.caller.counts
        return {
            "queued": len(self) - len(self.leases.waiting),
            "taken": self.taken,
            "seen": c.seen,
            "done": c.done,
            "hosts_held": len(self.hosts.owned),
            "hosts_blocked": len(self.hosts.blocks),
            "scheduled": c.scheduled,
            "redis_round_trips": self.link.round_trips,
            "fenced": self.session.fenced,
            **({"excluded": self.leases.dropped} if self.leases.dropped else {}),
        }

    def __len__(self) -> int:
        """URLs queued crawl-wide (as of the last call, with this node's
        releases still in the outbox), plus those leased here and not yet taken."""
        releases = self.outbox.count(wire.Release)
        return self.caller.counts.queued + releases + len(self.leases.waiting)

    @property
    def taken(self) -> int:
        """URLs leased crawl-wide (as of the last call, less this node's acks
        and releases still in the outbox)."""
        pending = self.outbox.count(wire.Ack, wire.Release, wire.Drop)
        return max(0, self.caller.counts.leased - pending)

    def leased_elsewhere(self) -> int:
        """URLs leased and not yet acked by other nodes (as of the last call)."""
        return max(0, self.taken - len(self.leases.held))

    def set_budget(
        self,
        max_pages: int | None,
        max_pages_per_host: int | None,
        *,
        done: int = 0,
        host_pages: Mapping[str, int] | None = None,
    ) -> None:
        self.budget.max_pages, self.budget.max_pages_per_host = max_pages, max_pages_per_host

    def set_max_pages(self, max_pages: int | None) -> None:
        self.budget.max_pages = max_pages
        self.leases.dry_until = 0.0

    def take_over_budget(self) -> int:
        return self.budget.take_over_budget()

    def budget_left(self) -> bool:
        """The crawl-wide page budget (records plus leases) is not spent, or
        this node holds leases not yet taken (they are in the budget)."""
        return bool(self.leases.waiting) or self.budget.left(
            self.caller.counts, self.outbox.ops, self.taken
        )

    def close(self) -> None:
        """Send the acks, give back every lease and idle host held here at
        once (the other nodes take them over), leave, and disconnect.  A
        second call does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self.link.down and self.session.lost is None:
                self.caller.leave()
        except (FrontierUnavailable, *self.link.faults) as exc:
            log.warning(
                "could not give work back to Redis (%s): it returns after %g s",
                exc,
                self.session.lease_timeout,
            )
        finally:
            self.link.close()

    def abandon(self) -> None:
        """Disconnect as a killed node would: its leases stay recorded (for tests)."""
        self._closed = True
        self.link.close()

    # ------------------------------- what the partitioned frontier asks of one
    def may_lease(self, now: float) -> bool:
        """A lease call may find something at ``now``: Redis is up, and the
        last call did not come back dry less than LEASE_POLL ago (a host
        whose block ran out by ``now`` is news enough to ask again)."""
        self._wake(now)
        return not self.link.down and now >= self.leases.dry_until

    def refresh(self) -> None:
        """A round trip now: the outbox sent, the counts read again."""
        self._call()

    def figures(self) -> tuple[int, int, int, int]:
        """This partition's (queued, leased, done, ever), as of the last call."""
        c = self.caller.counts
        return c.queued, c.leased, c.done, c.ever

    # ----------------------------------------------------------- internals
    def _wake(self, now: float) -> None:
        if self.hosts.wake(now):
            self.leases.dry_until = 0.0  # a host may be leased from again
