"""PartitionedFrontier: one shared crawl over K partitions of Redis keys,
so that a Redis Cluster spreads the crawl over its shards.

Used by the master in place of a single
:class:`~mpcrawler.frontier.redis.frontier.RedisFrontier` when a crawl has
``--redis-partitions K`` above 1 (:func:`open_shared` picks).  Each host
belongs to one partition (:func:`partition_of`: CRC-32 of its key, modulo
K), and each partition is a whole RedisFrontier of its own under its own
hash tag (:func:`~.client.key_prefix`): seen buckets, queues, owners,
leases, its own ``alive`` set and epochs.  Every script call touches one
partition, so a cluster runs each partition's calls on the shard that
holds its slot.  Ownership, fair shares, reaping and fencing are those of
one partition, per partition, each as that module proves them.

What the composite adds:

* **Routing.**  Admits, seen checks, acks, releases, blocks and revisits go
  to their host's partition; a batch touching several partitions costs one
  call per partition touched.  Leases are drawn from the partitions in
  turn: a partition's batch is used up before the next one is asked, so
  priority order holds within a partition (and per host), not across
  partitions.
* **The crawl's identity.**  Partition 0 carries the crawl's id and how
  many partitions it has (``partitions``); partition p's id is
  ``ID/p``.  A node that knew the crawl (its job dir) refuses a partition
  whose id is gone (CrawlLost), as for one partition; a node joining for
  the first time refuses one holding another id, and one whose keys are
  gone though partition 0 lists it as made (``made``): it would make it
  again, empty, under the same id, and the nodes in the crawl would not
  see the loss.  A node given another K than the crawl's is refused
  before it joins (UsageError).
* **A crawl-wide page budget.**  ``--max-pages`` is kept with page
  *permits* in partition 0 (``step.lua``, ops PT, PS, PR): a node takes
  permits before leasing, an ack spends one, and permits not used go back
  when no partition has anything for the node (or it leaves; a dead node's
  go back when partition 0 reaps it).  Granted plus spent never pass the
  budget.
* **The crawl's end.**  Each partition's counts come from its own call, at
  its own time, so a lease acked in one partition after its links were
  admitted to another could be missed by one read of each.  A node decides
  nothing is left only when two rounds of fresh calls to every partition
  find nothing leased elsewhere, nothing leasable, and every partition's
  counts (queued, leased, done, URLs queued ever) the same in both.
* **Fair shares, crawl-wide.**  A node may hold its share of all the
  crawl's hosts, ``ceil(hosts / live nodes)``, wherever they fall: each
  partition's call carries the other partitions' hosts and how many of them
  the node keeps, for its lease and its shedding.
* **Liveness of the node.**  It is available only while every partition is
  (its fetch deadline is the earliest of theirs).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...errors import FrontierError, FrontierUnavailable, UsageError
from ...web.urls import host_key
from ..base import Admission, Frontier, Revisit, UrlInfo
from .client import PARTITIONS_KEY, connect, key_prefix, lost_message
from .content import RedisContentIndex
from .frontier import BATCH_WINDOW, LEASE_POLL, CrawlLost, RedisFrontier
from .permits import Permits

__all__ = ["PartitionedFrontier", "open_shared", "partition_of"]

MAX_PARTITIONS = 1024
MADE_KEY = "made"  # in partition 0: the partitions made so far (a set)


def partition_of(host: str, partitions: int) -> int:
    """The partition of ``host`` (a host key): stable across nodes and runs."""
    return zlib.crc32(host.encode("utf-8")) % partitions if partitions > 1 else 0


def check_partitions(client: Any, crawl: str, partitions: int) -> None:
    """Record ``partitions`` for a new crawl, or check it against the
    crawl's (UsageError if they differ: the hosts would map elsewhere)."""
    import redis

    key = key_prefix(crawl) + PARTITIONS_KEY
    try:
        if partitions > 1 and client.exists(key_prefix(crawl) + "id") == 0:
            client.set(key, partitions, nx=True)  # a new crawl (or a race of its first nodes)
        raw = client.get(key)
    except (redis.RedisError, OSError) as exc:
        raise FrontierError(f"cannot read crawl {crawl!r} from Redis: {exc}") from None
    had = int(raw) if raw is not None else 1
    if had != partitions:
        raise UsageError(
            f"crawl {crawl!r} is split into {had} partition(s), not {partitions}: "
            f"give every node --redis-partitions {had}"
        )


def open_shared(
    url: str, crawl: str, node: str, *, partitions: int = 1, **options: Any
) -> RedisFrontier | PartitionedFrontier:
    """The crawl's frontier: one RedisFrontier, or a PartitionedFrontier of
    ``partitions`` (FrontierError if unreachable, UsageError if the crawl
    has another number of partitions)."""
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise UsageError(f"--redis-partitions must be 1 to {MAX_PARTITIONS}")
    if partitions == 1:
        client = connect(url)
        try:
            check_partitions(client, crawl, 1)  # before joining
        finally:
            client.close()
        return RedisFrontier(url, crawl, node, **options)
    return PartitionedFrontier(url, crawl, node, partitions=partitions, **options)


class PartitionedFrontier(Frontier):
    """The Frontier of crawl ``crawl`` over ``partitions`` partitions of the
    Redis server (or cluster) at ``url``, for node ``node``; the options are
    RedisFrontier's, and ``max_pages`` is crawl-wide through permits."""

    batch_window = BATCH_WINDOW

    def __init__(
        self,
        url: str,
        crawl: str,
        node: str,
        *,
        partitions: int,
        max_pages: int | None = None,
        crawl_id: str | None = None,
        **options: Any,
    ) -> None:
        self.r = connect(url)
        self.crawl, self.node, self.max_pages = crawl, node, max_pages
        self.parts: list[RedisFrontier] = []
        self._turn = 0  # the partition asked first for the next lease
        self._quiet_retry = 0.0
        try:
            check_partitions(self.r, crawl, partitions)
            first = RedisFrontier(
                url,
                crawl,
                node,
                crawl_id=crawl_id,
                client=self.r,
                elsewhere=self._elsewhere,
                **options,
            )
            self.parts.append(first)
            self.permits = Permits(first.caller, self._pages_held)
            self.permits.max_pages = max_pages
            base = first.crawl_id
            for p in range(1, partitions):
                self._check_not_lost(url, p)
                part = RedisFrontier(
                    url,
                    crawl,
                    node,
                    crawl_id=f"{crawl_id}/{p}" if crawl_id else None,
                    client=self.r,
                    partition=p,
                    new_id=f"{base}/{p}",
                    elsewhere=self._elsewhere,
                    **options,
                )
                self.parts.append(part)
                if part.crawl_id != f"{base}/{p}":
                    raise CrawlLost(
                        f"partition {p} of crawl {crawl!r} holds another crawl "
                        f"(id {part.crawl_id}, not {base}/{p}): start afresh with a new "
                        f"--crawl name (or 'mpcrawler reset --redis URL --crawl {crawl}' first)"
                    )
                self._made(p)
        except BaseException:
            self.close()
            raise
        self.prefix = first.prefix  # control commands live in partition 0

    def _check_not_lost(self, url: str, p: int) -> None:
        """Partition ``p`` was made once (partition 0 says so) and its keys
        are gone: its shard lost them (a restart without persistence).  A
        node joining now would make it afresh, empty, and the nodes already
        in would find their crawl id there again: its URLs lost unseen."""
        import redis

        try:
            made = self.r.sismember(key_prefix(self.crawl) + MADE_KEY, p)
            gone = made and not self.r.exists(key_prefix(self.crawl, p) + "id")
        except (redis.RedisError, OSError) as exc:
            raise FrontierError(f"cannot read crawl {self.crawl!r} from Redis: {exc}") from None
        if gone:
            why = f"partition {p}'s keys are gone (its Redis restarted without its data?)"
            raise CrawlLost(lost_message(self.crawl, url, why))

    def _made(self, p: int) -> None:
        """Partition ``p`` exists: from now on its keys' loss is an error."""
        import redis

        try:
            self.r.sadd(key_prefix(self.crawl) + MADE_KEY, p)
        except (redis.RedisError, OSError) as exc:
            raise FrontierError(f"cannot write crawl {self.crawl!r} to Redis: {exc}") from None

    # ------------------------------------------------------------ routing
    def _part(self, url: str) -> RedisFrontier:
        return self.parts[partition_of(host_key(url), len(self.parts))]

    def _host_part(self, host: str) -> RedisFrontier:
        return self.parts[partition_of(host, len(self.parts))]

    def _split(self, items: Sequence[Any], url_of: Callable[[Any], str]) -> dict[int, list[int]]:
        """The positions of ``items`` by partition, in order."""
        groups: dict[int, list[int]] = {}
        for k, item in enumerate(items):
            groups.setdefault(partition_of(host_key(url_of(item)), len(self.parts)), []).append(k)
        return groups

    def _elsewhere(self, partition: int) -> tuple[int, int]:
        """For the share of hosts in ``partition``: the crawl's hosts in the other
        partitions (as their last heartbeats found them, or as many as this
        node holds there if more), and how many of them it keeps (those
        being shed do not count).  Shares worked out a partition at a time
        would round up in each: with few hosts a partition, the first node
        kept one in each, and a third node had none."""
        others = kept = 0
        for p, part in enumerate(self.parts):
            if p != partition:
                owned, keeps = part.hosts.kept()
                others += max(part.session.hosts, owned)
                kept += keeps
        return others, kept

    def _pages_held(self) -> int:
        """Pages (not embeds) this node holds on lease, taken or not."""
        return sum(part.leases.pages() for part in self.parts)

    @property
    def crawl_id(self) -> str:
        return self.parts[0].crawl_id

    def content_index(self) -> RedisContentIndex:
        """The fingerprints of the crawl's pages, crawl-wide: in partition 0."""
        return self.parts[0].content_index()

    def report(self, figures: Mapping[str, Any]) -> None:
        for part in self.parts:
            part.report(figures)

    # ------------------------------------------------------------ protocol
    def admit_many(self, items: Sequence[Admission], want: int = 0) -> list[bool]:
        """One call per partition the URLs fall in; ``want`` more leases ride
        on the call to the partition whose turn it is, if it is one of them."""
        admitted = [False] * len(items)
        turn = self._turn % len(self.parts)
        for p, positions in self._split(items, lambda item: item[0]).items():
            extra = self.permits.permitted(want) if p == turn else 0
            flags = self.parts[p].admit_many([items[k] for k in positions], want=extra)
            for k, flag in zip(positions, flags, strict=True):
                admitted[k] = flag
        return admitted

    def is_seen(self, url: str) -> bool:
        return self._part(url).is_seen(url)

    def lease(self, now: float | None = None, want: int = 1) -> UrlInfo | None:
        """The next URL leased here: from the batch a partition leased last,
        else from the partitions in turn, each asked for up to ``want``."""
        now = time.monotonic() if now is None else now
        k = len(self.parts)
        order = [(self._turn + step) % k for step in range(k)]
        for p in order:  # a batch already leased goes first
            part = self.parts[p]
            if part.leases.waiting:
                return self._taken_from(p, part.lease(now, want))
        for p in order:
            part = self.parts[p]
            if not part.may_lease(now):
                continue
            try:
                room = self.permits.permitted(want, take=True)
            except FrontierUnavailable:  # partition 0 is down: its permits with it
                return None
            if room <= 0:  # the pages are spent: embeds need no permit
                item = part.lease_embeds(now, want) if part.embeds_queued() else None
                if item is not None:
                    return self._taken_from(p, item)
                continue
            item = part.lease(now, room)
            if item is not None:
                return self._taken_from(p, item)
        self._give_back_permits(now)
        return None

    def _taken_from(self, p: int, item: UrlInfo | None) -> UrlInfo | None:
        """Partition ``p`` gave ``item``: it is asked first again while its batch lasts."""
        self._turn = p if self.parts[p].leases.waiting else (p + 1) % len(self.parts)
        return item

    def ack(
        self,
        item: UrlInfo,
        seen: list[str] | tuple[str, ...] = (),
        error: bool = False,
        wait: float = 0.0,
    ) -> None:
        """The ack goes to the page's partition with the redirect hops that
        fall in it; hops of other partitions are marked seen there, in the
        same turn of calls."""
        home = partition_of(host_key(item.url), len(self.parts))
        elsewhere = self._split(seen, lambda url: url)
        for p, positions in elsewhere.items():
            if p != home:
                self.parts[p].mark_seen([seen[k] for k in positions])
        here = [seen[k] for k in elsewhere.get(home, [])]
        self.parts[home].ack(item, here, error, wait)
        if item.kind != "embed":
            self.permits.spend()

    def release(self, item: UrlInfo) -> None:
        self._part(item.url).release(item)  # its permit stays here, for the next lease

    def schedule(self, revisits: Sequence[Revisit]) -> None:
        for p, positions in self._split(revisits, lambda r: r[0]).items():
            self.parts[p].schedule([revisits[k] for k in positions])

    def set_revisits(self, lag: float | None, before: float = float("inf")) -> None:
        for part in self.parts:
            part.set_revisits(lag, before)

    def next_due(self) -> float | None:
        return min((d for part in self.parts if (d := part.next_due()) is not None), default=None)

    def expedite(self, items: Sequence[tuple[str, float]]) -> int:
        for p, positions in self._split(items, lambda item: item[0]).items():
            self.parts[p].expedite([items[k] for k in positions])
        return len(items)

    def exclude(self, match: Callable[[str], bool], *, drop_queued: bool = True) -> int:
        return sum(part.exclude(match, drop_queued=drop_queued) for part in self.parts)

    def block(self, host: str, until: float) -> None:
        self._host_part(host).block(host, until)

    def next_ready(self, now: float) -> float | None:
        times = [t for part in self.parts if (t := part.next_ready(now)) is not None]
        return min(times) if times else None

    def sync(self) -> None:
        for part in self.parts:
            part.sync()

    def tick(self) -> None:
        for part in self.parts:
            part.tick()

    def heartbeat(self) -> int:
        """Every partition's heartbeat (each is tried: one that refused, as a
        fenced partition does, raises once the others are done)."""
        refused: FrontierUnavailable | None = None
        for part in self.parts:
            try:
                part.heartbeat()
            except FrontierUnavailable as exc:
                refused = refused or exc
        if refused is not None:
            raise refused
        return self.last_reaped

    @property
    def fenced(self) -> int:
        """Times a partition found this node declared dead there."""
        return sum(part.session.fenced for part in self.parts)

    @property
    def last_reaped(self) -> int:
        return sum(part.session.reaped for part in self.parts)

    def checkpoint(self) -> None:
        """Nothing to do: Redis's own persistence (AOF) makes it durable."""

    def available(self) -> bool:
        return all(part.available() for part in self.parts)

    def fetch_deadline(self) -> float:
        return min(part.fetch_deadline() for part in self.parts)

    def holds(self, item: UrlInfo) -> bool:
        return self._part(item.url).holds(item)

    def stats(self) -> dict[str, Any]:
        total: dict[str, Any] = {}
        for part in self.parts:
            for key, value in part.stats().items():
                total[key] = total.get(key, 0) + value
        total["partitions"] = len(self.parts)
        return total

    def __len__(self) -> int:
        return sum(len(part) for part in self.parts)

    @property
    def taken(self) -> int:
        return sum(part.taken for part in self.parts)

    def leased_elsewhere(self) -> int:
        """URLs leased by other nodes, as of each partition's last call; when
        that says none, two rounds of fresh calls must agree (see above)."""
        elsewhere = sum(part.leased_elsewhere() for part in self.parts)
        if elsewhere:
            return elsewhere
        return 0 if self._quiet() else 1

    def _quiet(self) -> bool:
        now = time.monotonic()
        if now < self._quiet_retry:
            return False
        self._quiet_retry = now + LEASE_POLL  # asked again no sooner, if not quiet
        rounds = []
        try:
            for _ in range(2):
                for part in self.parts:
                    part.refresh()
                rounds.append([part.figures() for part in self.parts])
        except FrontierUnavailable:
            return False
        if rounds[0] != rounds[1] or any(part.leased_elsewhere() for part in self.parts):
            return False
        return not (len(self) and self.budget_left())

    # -------------------------------------------------------------- budget
    def set_budget(
        self,
        max_pages: int | None,
        max_pages_per_host: int | None,
        *,
        done: int = 0,
        host_pages: Mapping[str, int] | None = None,
    ) -> None:
        self.max_pages = self.permits.max_pages = max_pages
        for part in self.parts:  # a host's budget is its partition's
            part.set_budget(None, max_pages_per_host)

    def set_max_pages(self, max_pages: int | None) -> None:
        self.max_pages = self.permits.max_pages = max_pages
        for part in self.parts:
            part.set_max_pages(None)  # the crawl's budget is here; ask each again

    def take_over_budget(self) -> int:
        return sum(part.take_over_budget() for part in self.parts)

    @property
    def over_budget(self) -> int:
        return sum(part.budget.over_budget for part in self.parts)

    def _give_back_permits(self, now: float) -> None:
        """No partition has anything for this node now: its unused permits go back."""
        if not any(part.may_lease(now) for part in self.parts):
            self.permits.give_back()

    def budget_left(self) -> bool:
        """The crawl-wide page budget is not spent, or this node holds
        permits or leases not yet taken."""
        if any(part.leases.waiting for part in self.parts):
            return True
        if any(part.embeds_queued() for part in self.parts):
            return True  # embeds need no permit
        return self.permits.left()

    # ---------------------------------------------------------------- end
    def close(self) -> None:
        """Every partition gives its work back (partition 0 last, with this
        node's permits); a second call does nothing."""
        try:
            for part in self.parts[1:]:
                part.close()
            if self.parts:
                self.parts[0].close()  # its leave (op L) gives back this node's permits
        finally:
            self.r.close()

    def abandon(self) -> None:
        for part in self.parts:
            part.abandon()
        self.r.close()
