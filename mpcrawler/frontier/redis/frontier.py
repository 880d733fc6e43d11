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
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, NoReturn

from ...errors import FrontierError, FrontierUnavailable, UsageError
from ...web.urls import host_key
from ..base import FOREVER, KINDS, Admission, Revisit, UrlInfo
from . import protocol as wire
from .client import key_prefix, lost_message
from .hosts import HostsHeld, fair_share, hosts_to_shed
from .link import Link, Refused

__all__ = [
    "CrawlLost",
    "NodeTaken",
    "RedisFrontier",
    "fair_share",
    "hosts_to_shed",
]

log = logging.getLogger(__name__)

_MAX_PRIORITY = 1 << 19  # |priority| below this keeps scores exact in a double
FLUSH_AFTER = 0.1  # seconds an ack may wait in the outbox for a call to ride on
COUNTS_STALE = 0.5  # seconds before idle counts are read again


def _is_embed(member: str) -> bool:
    """A queue member (see the module's docstring) of kind ``embed``."""
    return ',"embed",' in member


LEASE_POLL = 0.25  # seconds before a lease that found nothing asks again
BATCH_WINDOW = 0.02  # seconds the master gathers finished pages for one call
ADMIT_CHUNK = 1000  # URLs admitted in one call at most (a call blocks Redis while it runs)
# A node starts no fetch once its last good heartbeat is older than this
# share of the lease timeout short of it (its own clock, from when it was sent).
FENCE_MARGIN = 0.25


class CrawlLost(FrontierError):
    """The crawl's state in Redis is gone, or the name holds another crawl."""


class NodeTaken(UsageError):
    """Another live process is this node of the crawl."""


DROP_CHUNK = 500  # queue members dropped in one call at most


@dataclass
class _Step:
    admitted: list[bool]
    leased: list[UrlInfo]
    checked: list[bool]


class _Lease(NamedTuple):
    """A lease this node holds: its host, its queue member as Redis has it,
    and the UrlInfo handed out for it (``holds`` compares by identity)."""

    host: str
    member: str
    item: UrlInfo


class _Taken(Exception):
    """The script's TAKEN: a live node has this id."""

    def __init__(self, age_s: float, info: dict[str, Any]) -> None:
        super().__init__(age_s)
        self.age_s, self.pid, self.host = age_s, info.get("pid"), info.get("host")

    def dead_here(self) -> bool:
        """That node was a process of this host that is gone (or this one)."""
        if self.host != socket.gethostname() or not isinstance(self.pid, int):
            return False
        if self.pid == os.getpid():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False


def _digest(url: str) -> bytes:
    return hashlib.blake2b(url.encode("utf-8"), digest_size=16).digest()


def _seen_slot(url: str) -> tuple[str, bytes]:
    """(bucket, field) of ``url`` in the seen set: 65,536 small hashes keyed
    by the digest's first two bytes, so each stays a compact listpack (about
    20 bytes a URL) up to about 8 million URLs."""
    digest = _digest(url)
    return digest[:2].hex(), digest[2:]


def _item(member: str | bytes, entry: bytes = b"") -> UrlInfo:
    """The UrlInfo of a queue member, with the state of its revisit entry, if any."""
    seq, url, depth, priority, kind, lastmod, *_ = json.loads(member)  # 'R': a revisit's copy
    state = entry.split(b"\t", 5)[5].decode() if entry else None  # see step.lua's rv_fields
    return UrlInfo(url, int(depth), int(priority), int(seq), kind, lastmod or None, state)


class RedisFrontier:
    """The Frontier of crawl ``crawl`` on the Redis server at ``url``, for node ``node``.

    ``crawl_id`` is the id this node knew the crawl by (its job dir's), if
    any: a crawl whose id is gone or another is lost (:class:`CrawlLost`).
    ``max_pages`` caps the pages of the whole crawl (records plus leases);
    ``max_pages_per_host`` the URLs queued per host, crawl-wide (those
    refused are counted in ``over_budget``); ``per_host`` caps the URLs of
    one host in one batch of leases.
    Raises :class:`FrontierError` if the server cannot be reached.
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
    ) -> None:
        self.link = Link(url, client)
        self.url, self.crawl, self.node = self.link.url, crawl, node
        self.partition, self.prefix = partition, key_prefix(crawl, partition)
        self.lease_timeout, self.redis_timeout = lease_timeout, redis_timeout
        self.beat_interval = min(lease_timeout / 3, 1.0)
        self.max_pages, self.per_host = max_pages, per_host
        self._embeds_only = False  # the next call leases embeds only (lease_embeds)
        self.max_pages_per_host = max_pages_per_host
        self.over_budget = 0  # URLs not admitted: their host's budget was spent
        self.node_info: Callable[[], dict[str, Any]] = dict
        self.host_wait: Callable[[str], float] | None = None  # seconds to a host's next start
        self.last_reaped = 0
        self._new_id = new_id  # the id this partition gets if it is new (default: a new uuid)
        self.excluded: Callable[[str], bool] | None = None  # `control exclude`
        self.dropped = 0  # URLs dropped by it (here)
        self.outbox = wire.Outbox()
        self._held: dict[int, _Lease] = {}  # seq -> each lease held here
        self._prefetch: collections.deque[UrlInfo] = collections.deque()
        self._dry_until = 0.0
        self.hosts = HostsHeld()
        self._counts = wire.Counts()
        self.lag_ms: int | None = None  # revisits off
        self.before_ms = -1  # none
        self._counts_at = 0.0
        self._last_beat = 0.0
        self._closed = False
        self.crawl_id = crawl_id or ""
        self.epoch = "0"  # none yet: the next call registers
        self._beat_sent = -math.inf  # when the last good heartbeat was sent (monotonic)
        self._lost: str | None = None
        self.fenced = 0  # times this node found it was declared dead
        # A partitioned crawl shares its hosts crawl-wide (partitions.py):
        # the hosts of the other partitions, and how many of them this node keeps.
        self.elsewhere: Callable[[RedisFrontier], tuple[int, int]] | None = None
        self.beat_hosts, self.beat_alive = 0, 1  # as the last heartbeat found them
        # Page permits (partition 0 of a partitioned crawl): this node's, as
        # Redis has them after the last call; spent and out crawl-wide.
        self.permits, self.spent, self.permits_out = 0, 0, 0
        try:
            self._register()  # its old session's leases go back, if it had one
        except FrontierUnavailable as exc:
            raise FrontierError(str(exc)) from None

    @property
    def r(self) -> Any:
        """The redis-py client (the crawl's control commands use it too)."""
        return self.link.r

    # ------------------------------------------------------------ protocol
    def admit(
        self,
        url: str,
        depth: int = 0,
        priority: int = 0,
        kind: str = "page",
        lastmod: str | None = None,
    ) -> bool:
        return self.admit_many([(url, depth, priority, kind, lastmod)])[0]

    def admit_many(self, items: Sequence[Admission], want: int = 0) -> list[bool]:
        """Admit every ``(url, depth, priority, kind, lastmod)`` in one call;
        True for each one queued.  ``want`` leases that many more URLs in the
        same call, for the next ``lease`` calls to take."""
        for _url, _depth, priority, kind, _lastmod in items:
            if not -_MAX_PRIORITY < priority < _MAX_PRIORITY:
                raise ValueError(f"priority {priority} is out of range (|p| < {_MAX_PRIORITY})")
            if kind not in KINDS:
                raise ValueError(f"unknown URL kind {kind!r}")
        if not items:
            return []
        self._check_up()
        admitted: list[bool] = []
        for start in range(0, len(items), ADMIT_CHUNK):
            chunk = items[start : start + ADMIT_CHUNK]
            last = start + ADMIT_CHUNK >= len(items)
            top_up = max(0, want - len(self._prefetch)) if last else 0
            step = self._call(admits=chunk, want=top_up)
            self._prefetch.extend(step.leased)
            admitted += step.admitted
        self._dry_until = 0.0 if len(step.leased) >= top_up else time.monotonic() + LEASE_POLL
        return admitted

    def is_seen(self, url: str) -> bool:
        self._check_up()
        return self._call(checks=[url]).checked[0]

    def lease(self, now: float | None = None, want: int = 1) -> UrlInfo | None:
        """The next URL leased to this node, from the batch leased last or
        from a new batch of up to ``want`` (None when Redis is down)."""
        now = time.monotonic() if now is None else now
        self._wake(now)
        while not self._prefetch:
            if self.link.down or now < self._dry_until:
                return None
            dropped = self.dropped
            try:
                step = self._call(want=want)
            except FrontierUnavailable:
                return None
            self._prefetch.extend(step.leased)
            if step.leased or self.dropped == dropped:  # (all dropped as excluded: ask again)
                if len(step.leased) < want:
                    self._dry_until = now + LEASE_POLL
                break
        return self._prefetch.popleft() if self._prefetch else None

    def lease_embeds(self, now: float | None = None, want: int = 1) -> UrlInfo | None:
        """``lease``, of embeds only (a partitioned crawl whose page permits
        are spent: embeds need none)."""
        self._embeds_only = True
        try:
            return self.lease(now, want)
        finally:
            self._embeds_only = False

    def embeds_queued(self) -> int:
        """Embeds queued crawl-wide, as of the last call."""
        return self._counts.equeued

    def ack(
        self, item: UrlInfo, seen: list[str] | tuple[str, ...] = (), error: bool = False
    ) -> None:
        lease = self._held.pop(item.seq, None)
        host, member = (lease.host, lease.member) if lease else (host_key(item.url), "")
        slots = tuple(_seen_slot(url) for url in seen)
        self._queue_op(wire.Ack(item.seq, host, member, self._wait_ms(host), error, slots))
        draining = host in self.hosts.draining
        if draining and all(held.host != host for held in self._held.values()):
            self._queue_op(wire.GiveUp(host, self._wait_ms(host)))  # shed: it goes once idle

    def mark_seen(self, urls: Sequence[str]) -> None:
        """Mark ``urls`` seen with the next call (a redirect's hops in this
        partition, whose page was acked in another)."""
        if urls:
            self._queue_op(wire.MarkSeen(tuple(_seen_slot(url) for url in urls)))

    def schedule(self, revisits: Sequence[Revisit]) -> None:
        for url, due, depth, priority, kind, state, fetched in revisits:
            host = host_key(url)
            due_ms, fetched_ms = int(due * 1000), int(fetched * 1000)
            op = wire.Schedule(host, url, depth, priority, kind, due_ms, fetched_ms, state)
            self._queue_op(op)

    def set_revisits(self, lag: float | None, before: float = math.inf) -> None:
        self.lag_ms = None if lag is None else int(lag * 1000)
        self.before_ms = -1 if math.isinf(before) else int(before * 1000)
        self._dry_until = 0.0

    def next_due(self) -> float | None:
        first = self._counts.next_due
        if self.lag_ms is None or first < 0 or 0 <= self.before_ms <= first:
            return None
        return (first + self.lag_ms) / 1000.0

    def expedite(self, items: Sequence[tuple[str, float]]) -> int:
        for url, since in items:
            self._queue_op(wire.Expedite(url, int(since * 1000)))
        return len(items)

    def exclude(self, match: Callable[[str], bool], *, drop_queued: bool = True) -> int:
        """From now on this node drops the URLs ``match`` says True of when
        it leases them; with ``drop_queued``, every host's queue is read
        through (ZSCAN) and what matches dropped, crawl-wide, a host at a
        time (``drop.lua``).  Raises FrontierUnavailable if Redis is down."""
        self.excluded = match
        before = len(self._prefetch)  # leased here, not taken: queued as far as anyone knows
        self._prefetch = collections.deque(i for i in self._prefetch if not self._drop_held(i))
        dropped = before - len(self._prefetch)
        if not drop_queued:
            return dropped
        self._check_up()
        self._call()  # releases in the outbox go back to their queues first
        try:
            r = self.link.r
            for key in r.scan_iter(match=self.prefix + "q:*", count=1000):
                host = key.decode()[len(self.prefix) + 2 :]
                gone = [m for m, _ in r.zscan_iter(key, count=1000) if match(_item(m).url)]
                for start in range(0, len(gone), DROP_CHUNK):
                    chunk = gone[start : start + DROP_CHUNK]
                    dropped += self.link.drop(self.prefix + "seq", [self.prefix, host, *chunk])
        except self.link.faults as exc:
            raise self.link.fault(exc) from None
        self.dropped += dropped - (before - len(self._prefetch))
        self._call()  # the counts, as they are now
        return dropped

    def _drop_held(self, item: UrlInfo) -> bool:
        """``item``, leased here, is excluded: its lease is dropped (True)."""
        if self.excluded is None or not self.excluded(item.url):
            return False
        lease = self._held.pop(item.seq, None)
        host = lease.host if lease else host_key(item.url)
        self._queue_op(wire.Drop(item.seq, host, self._wait_ms(host)))
        self.dropped += 1
        return True

    def release(self, item: UrlInfo) -> None:
        self._held.pop(item.seq, None)
        self._queue_op(wire.Release(item.seq))
        self._dry_until = 0.0

    def block(self, host: str, until: float) -> None:
        if self.hosts.block(host, until) and until <= 0:
            self._dry_until = 0.0  # a host may be leased from again

    def next_ready(self, now: float) -> float | None:
        self._wake(now)
        timed = self.hosts.blocks.next_time(now)
        times = [] if timed is None else [timed]
        if self._dry_until > now:
            times.append(self._dry_until)
        return min(times) if times else None

    def sync(self) -> None:
        """Send the outbox now: everything so far survives this process being killed."""
        self.tick()
        if self.outbox and not self.link.down:
            with contextlib.suppress(FrontierUnavailable):
                self._call()

    def tick(self) -> None:
        """Send what has waited long enough (acks older than FLUSH_AFTER, the
        heartbeat every ``beat_interval``, stale counts); while Redis is
        down, try again with backoff, and raise FrontierError after
        ``redis_timeout``.  An ack not yet sent is never lost: a crash
        before it re-queues its URL."""
        now = time.monotonic()
        if self.link.down_since is not None:
            if now - self.link.down_since > self.redis_timeout:
                raise FrontierError(
                    f"Redis at {self.url} unreachable for {self.redis_timeout:g} s; stopping"
                )
            if not self.link.may_retry(now):
                return
            with contextlib.suppress(FrontierUnavailable):
                self._call(beat=True)
            return
        beat = now - self._last_beat >= self.beat_interval
        stale = now - self._counts_at >= COUNTS_STALE
        flush = bool(self.outbox) and now - self.outbox.since >= FLUSH_AFTER
        if beat or stale or flush:
            with contextlib.suppress(FrontierUnavailable):
                self._call(beat=beat)

    def heartbeat(self) -> int:
        """Renew this node's leases now, and give back those of nodes whose
        heartbeat ran out; returns how many were given back."""
        self._check_up()
        self._call(beat=True)
        return self.last_reaped

    def checkpoint(self) -> None:
        """Nothing to do: Redis's own persistence (AOF) makes it durable."""

    def available(self) -> bool:
        """Redis answered the last call, and this node's last good heartbeat
        is recent enough that its leases are still its own."""
        up = not self.link.down and self._lost is None
        return up and time.monotonic() < self.fetch_deadline()

    def fetch_deadline(self) -> float:
        """The monotonic time after which this node may start no fetch unless
        a heartbeat comes through: the lease timeout, less FENCE_MARGIN of
        it, after its last good heartbeat was sent."""
        return self._beat_sent + self.lease_timeout * (1 - FENCE_MARGIN)

    def holds(self, item: UrlInfo) -> bool:
        """``item``'s lease is still this node's (False once it was fenced)."""
        lease = self._held.get(item.seq)
        return lease is not None and lease.item is item

    def stats(self) -> dict[str, Any]:
        up = not self.link.down and self._lost is None
        if up and time.monotonic() - self._counts_at >= COUNTS_STALE:
            with contextlib.suppress(FrontierUnavailable):
                self._call()
        c = self._counts
        return {
            "queued": len(self) - len(self._prefetch),
            "taken": self.taken,
            "seen": c.seen,
            "done": c.done,
            "hosts_held": len(self.hosts.owned),
            "hosts_blocked": len(self.hosts.blocks),
            "scheduled": c.scheduled,
            "redis_round_trips": self.link.round_trips,
            "fenced": self.fenced,
            **({"excluded": self.dropped} if self.dropped else {}),
        }

    def __len__(self) -> int:
        """URLs queued crawl-wide (as of the last call, with this node's
        releases still in the outbox), plus those leased here and not yet taken."""
        releases = self.outbox.count(wire.Release)
        return self._counts.queued + releases + len(self._prefetch)

    @property
    def taken(self) -> int:
        """URLs leased crawl-wide (as of the last call, less this node's acks
        and releases still in the outbox)."""
        pending = self.outbox.count(wire.Ack, wire.Release, wire.Drop)
        return max(0, self._counts.leased - pending)

    def leased_elsewhere(self) -> int:
        """URLs leased and not yet acked by other nodes (as of the last call)."""
        return max(0, self.taken - len(self._held))

    def set_budget(
        self,
        max_pages: int | None,
        max_pages_per_host: int | None,
        *,
        done: int = 0,
        host_pages: Mapping[str, int] | None = None,
    ) -> None:
        self.max_pages, self.max_pages_per_host = max_pages, max_pages_per_host

    def set_max_pages(self, max_pages: int | None) -> None:
        self.max_pages = max_pages
        self._dry_until = 0.0

    def take_over_budget(self) -> int:
        taken, self.over_budget = self.over_budget, 0
        return taken

    def budget_left(self) -> bool:
        """The crawl-wide page budget (records plus leases) is not spent, or
        this node holds leases not yet taken (they are in the budget)."""
        if self.max_pages is None or self._prefetch or self._counts.equeued > 0:
            return True  # embeds are leased past the pages' budget
        ops = self.outbox.ops
        acks = sum(1 for op in ops if isinstance(op, wire.Ack) and not _is_embed(op.member))
        counts = self._counts
        pages = counts.done - counts.edone + acks + self.taken - counts.eleased
        return pages < self.max_pages

    def close(self) -> None:
        """Send the acks, give back every lease and idle host held here at
        once (the other nodes take them over), leave, and disconnect.  A
        second call does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self.link.down and self._lost is None:
                # Each host it may hold (those claimed since the last beat
                # too) goes with its politeness wait; GA gives up the rest.
                held = self.hosts
                hosts = {*held.owned, *held.blocks.until, *(h.host for h in self._held.values())}
                for seq in list(self._held):
                    self._queue_op(wire.Release(seq))
                self._held.clear()
                self._prefetch.clear()
                for host in sorted(hosts):
                    self._queue_op(wire.GiveUp(host, self._wait_ms(host)))
                self._queue_op(wire.GiveUpAll())
                self._call(beat=True)  # its last figures, for status
                self._queue_op(wire.Leave())
                self._call()
        except (FrontierUnavailable, *self.link.faults) as exc:
            log.warning(
                "could not give work back to Redis (%s): it returns after %g s",
                exc,
                self.lease_timeout,
            )
        finally:
            self.link.close()

    def abandon(self) -> None:
        """Disconnect as a killed node would: its leases stay recorded (for tests)."""
        self._closed = True
        self.link.close()

    # ------------------------------------------- page permits (partition 0)
    def take_permits(self, n: int, max_pages: int) -> int:
        """Ask for up to ``n`` more page permits, at once (one call); how many
        this node holds now.  Raises FrontierUnavailable if Redis is down."""
        self._check_up()
        self._queue_op(wire.TakePermits(n, max_pages))
        self._call()
        return self.permits

    def end_permits(self, spent: int = 0, unused: int = 0) -> None:
        """``spent`` permits were pages done, ``unused`` go back: in the
        outbox, merged with what is waiting there (one op each a call)."""
        now = time.monotonic()
        if spent > 0:
            self.outbox.add_permits(wire.SpendPermits(spent), now)
        if unused > 0:
            self.outbox.add_permits(wire.ReturnPermits(unused), now)

    # ------------------------------- what the partitioned frontier asks of one
    @property
    def prefetched(self) -> int:
        """URLs leased here by the last call and not yet taken."""
        return len(self._prefetch)

    def may_lease(self, now: float) -> bool:
        """A lease call may find something at ``now``: Redis is up, and the
        last call did not come back dry less than LEASE_POLL ago (a host
        whose block ran out by ``now`` is news enough to ask again)."""
        self._wake(now)
        return not self.link.down and now >= self._dry_until

    def refresh(self) -> None:
        """A round trip now: the outbox sent, the counts read again."""
        self._call()

    def figures(self) -> tuple[int, int, int, int]:
        """This partition's (queued, leased, done, ever), as of the last call."""
        c = self._counts
        return c.queued, c.leased, c.done, c.ever

    @property
    def leases_held(self) -> int:
        """Pages (not embeds) this node holds on lease here (taken or not)."""
        return sum(1 for held in self._held.values() if not _is_embed(held.member))

    def owned(self) -> tuple[int, int]:
        """The hosts this node owns here, and how many of them it keeps
        (those being shed do not count)."""
        return self.hosts.kept()

    @property
    def permits_ending(self) -> int:
        """Page permits spent or given back in the outbox, not yet sent."""
        return self.outbox.permits_ending()

    # ----------------------------------------------------------- internals
    def _queue_op(self, op: wire.Op) -> None:
        self.outbox.add(op, time.monotonic())

    def _wait_ms(self, host: str) -> int:
        """How long the next owner of ``host`` must wait: this node's block
        on it, and (``host_wait``, the scheduler's) the time until its next
        start here, which a block FOREVER (requests held for it) hides."""
        until = self.hosts.blocks.get(host)
        now = time.monotonic()
        wait = 0.0 if until == FOREVER else until - now
        if self.host_wait is not None:
            wait = max(wait, self.host_wait(host))
        return max(0, int(wait * 1000))

    def _wake(self, now: float) -> None:
        if self.hosts.wake(now):
            self._dry_until = 0.0  # a host may be leased from again

    def _check_up(self) -> None:
        self.link.check_up()

    def _call(
        self,
        admits: Sequence[Admission] = (),
        checks: Sequence[str] = (),
        want: int = 0,
        beat: bool = False,
        force: bool = False,
    ) -> _Step:
        """One round trip: the outbox, then ``admits``, ``checks``, up to
        ``want`` leases and the heartbeat (registering first if this node
        has no epoch; ``force`` takes its id over from a dead process)."""
        if self._lost is not None:
            raise CrawlLost(self._lost)
        register = self.epoch == "0"
        beat = beat or register or self.link.down
        if register:  # a new session says every block afresh
            self.hosts.new_session()
        for op in self.hosts.changes():
            self._queue_op(op)
        ops = list(self.outbox.ops)
        args = self._arguments(ops, admits, checks, want, beat, force, register)
        sent = time.monotonic()
        try:
            answer = wire.decode(self.link.step(self.prefix + "seq", args))
        except Refused as refusal:
            self._refused(refusal)
        if register:
            self.permits = 0  # a new session holds none
        self.spent, self.permits_out = answer.spent, answer.permits_out
        ending = sum(op.k for op in ops if isinstance(op, wire.SpendPermits | wire.ReturnPermits))
        self.permits = max(0, self.permits + answer.granted - ending)
        self.outbox.sent(len(ops))
        if beat:
            self._beat_sent = sent
        leased = self._take(answer)
        if self.link.reconcile:
            self.link.reconcile = False
            self._give_back_strays()
        self.over_budget += sum(1 for a in answer.admitted if a == 2)
        return _Step([a == 1 for a in answer.admitted], leased, answer.checked)

    def _arguments(
        self,
        ops: Sequence[wire.Op],
        admits: Sequence[Admission],
        checks: Sequence[str],
        want: int,
        beat: bool,
        force: bool,
        register: bool,
    ) -> list[Any]:
        """The script's arguments for a call (see ``_call``)."""
        new_id = (self._new_id or uuid.uuid4().hex) if register else ""
        header = wire.Header(self.prefix, self.node, self.epoch, self.crawl_id, new_id, force)
        to_admit = [
            wire.AdmitArgs(
                _seen_slot(url), host_key(url), url, depth, priority, kind, lastmod or ""
            )
            for url, depth, priority, kind, lastmod in admits
        ]
        max_pages = -1 if self.max_pages is None else self.max_pages
        if self._embeds_only:
            max_pages = 0  # no page fits: embeds only
        others, kept = (0, 0) if self.elsewhere is None else self.elsewhere(self)
        lease = wire.LeaseArgs(
            want, self.per_host, max_pages, self.lag_ms, self.before_ms, others, kept
        )
        heartbeat = None
        if beat:
            figures = {"pid": os.getpid(), "host": socket.gethostname(), **self.node_info()}
            info = json.dumps(figures, separators=(",", ":"))
            heartbeat = wire.Beat(int(self.lease_timeout * 1000), info, self.hosts.resync)
        budget = self.max_pages_per_host or 0
        checked = [_seen_slot(url) for url in checks]
        return wire.encode(header, ops, to_admit, budget, checked, lease, heartbeat)

    def _take(self, answer: wire.Reply) -> list[UrlInfo]:
        """What a call's ``answer`` says of this node: the hosts it holds,
        its session, the counts, its heartbeat; the URLs it leased (those
        excluded here are dropped)."""
        self.hosts.took(answer.claimed, answer.released)
        self.epoch, self.crawl_id = answer.epoch, answer.crawl_id
        now = time.monotonic()
        self._counts, self._counts_at = answer.counts, now
        leased = []
        for member, entry in zip(answer.leased, answer.entries, strict=True):
            item = _item(member, entry)
            self._held[item.seq] = _Lease(host_key(item.url), member.decode(), item)
            if not self._drop_held(item):
                leased.append(item)
        if answer.beat is not None:
            self._after_beat(answer.beat, now)
        return leased

    def _register(self) -> None:
        """Join the crawl with a new epoch.  If a live node has this id:
        take it over when that node is this host's and its process is gone
        (a node restarted after a crash), else raise NodeTaken."""
        try:
            self._call(beat=True)
        except _Taken as taken:
            if not taken.dead_here():
                raise NodeTaken(
                    f"node {self.node} is already running in crawl {self.crawl} "
                    f"(last heartbeat {taken.age_s:.1f} s ago); give this one another --node"
                ) from None
            log.info("node %s: its last process (%s) is gone; taking over", self.node, taken.pid)
            self._call(beat=True, force=True)

    def _refused(self, refusal: Refused) -> NoReturn:
        """The script refused a call (nothing was written): act on why, and raise."""
        word, rest = refusal.word, refusal.detail
        if word == "TAKEN":
            age, _, info = rest.partition(" ")
            raise _Taken(int(age) / 1000, json.loads(info or "{}"))
        if word == "LOST":
            self._lost = lost_message(self.crawl, self.url, rest)
            raise CrawlLost(self._lost)
        # FENCED: declared dead (paused past the lease timeout) or replaced.
        dropped = len(self._held)
        self.fenced += 1
        log.warning(
            "node %s was declared dead by the crawl (%s): dropping its %d leases, which "
            "are other nodes' work now, and joining again",
            self.node,
            rest,
            dropped,
        )
        self._held.clear()
        self._prefetch.clear()
        self.hosts.forget()
        self.epoch = "0"  # the acks in the outbox ride on the registration: late ones count apart
        self._register()
        raise FrontierUnavailable(f"node {self.node} joined the crawl again") from None

    def _after_beat(self, reply: wire.BeatReply, now: float) -> None:
        self._last_beat, self.last_reaped = now, reply.reaped
        self.beat_hosts, self.beat_alive = reply.hosts, max(1, reply.alive)
        if reply.reaped:
            log.info("gave back %d leases of nodes whose heartbeat ran out", reply.reaped)
        self.hosts.beat(reply.held)
        busy = {lease.host for lease in self._held.values()}
        others, kept = (0, 0) if self.elsewhere is None else self.elsewhere(self)
        share = max(0, fair_share(self.beat_hosts + others, self.beat_alive) - kept)
        for host in self.hosts.shed(busy, share):
            self._queue_op(wire.GiveUp(host, self._wait_ms(host)))

    def _give_back_strays(self) -> None:
        """Give back every lease recorded under this node's id that it does not hold."""
        try:
            for seq, raw in self.link.r.hscan_iter(self.prefix + "leased", count=1000):
                if json.loads(raw)[2] == self.node and int(seq) not in self._held:
                    self._queue_op(wire.Release(int(seq)))
        except self.link.faults as exc:
            self.link.fault(exc)
            return
        if self.outbox:
            with contextlib.suppress(FrontierUnavailable):
                self._call()
