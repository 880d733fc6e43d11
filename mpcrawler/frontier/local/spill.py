"""Spiller: the local queue's moves between memory and files, which bound its memory.

Owned by :class:`~mpcrawler.frontier.local.queue.UrlQueueManager` (the
tiers and their one invariant are described there: every URL in the log
sorts after every URL in memory, in blocks, or taken).  This part decides
where a URL goes and moves URLs when memory is too full or too empty:

- ``place``: a new URL goes to the log if it sorts after the log's head,
  else to memory (:mod:`.lanes`), which overflows past ``cache_size``;
- ``overflow``: memory back to 3/4 of the cache: the newest URLs of the
  lowest priority go to the log's front while the order allows, the rest
  to hosts' blocks (:mod:`.blocks`), blocked hosts and big lanes first;
  a blocked host left with nothing in memory is frozen (:mod:`.cold`);
- ``refill``: the log's head back into memory, up to 3/4 of the cache
  (the URLs of a blocked host with nothing here go straight to a frozen block);
- ``spill_hosts``: every URL in memory of some hosts to their blocks, when a
  lease must read the log past hosts that all have to wait.

A write that fails in a move is kept in the queue's guard (``moves``).
"""

from __future__ import annotations

from array import array

from ...web.urls import host_key
from ..base import UrlInfo
from .blocks import BlockStore
from .cold import ColdHosts
from .lanes import Guard, HostQueue, Lane, Lanes, Run, moves
from .segments import SegmentLog

__all__ = ["Spiller"]


class Spiller:
    """Keeps ``lanes`` within ``cache_size`` URLs, over ``log`` and ``store``;
    ``taken`` holds the URLs leased and not acked (they may come back)."""

    def __init__(
        self,
        lanes: Lanes,
        log: SegmentLog,
        store: BlockStore,
        cold: ColdHosts,
        taken: dict[int, UrlInfo],
        guard: Guard,
        cache_size: int,
    ) -> None:
        self.lanes, self.log, self.store, self.cold = lanes, log, store, cold
        self.taken, self.guard = taken, guard
        self.cache_size = cache_size
        self.batch = max(1, cache_size // 4)
        self.refill_below = max(1, cache_size // 2)
        self.spilled_total = 0

    def place(self, item: UrlInfo) -> None:
        """Queue ``item``: to the log if it sorts after the log's head, else memory."""
        if self.log.count and item.priority <= self.log.top:
            self.log.append(item)
            return
        self.lanes.to_memory(item)
        if self.lanes.mem > self.cache_size:
            self.overflow()

    def low(self) -> bool:
        """Memory runs low and the log holds URLs: a refill is due."""
        return self.lanes.mem < self.refill_below and bool(self.log.count)

    def full(self) -> bool:
        """Memory is near full (what it holds must all wait)."""
        return self.lanes.mem >= self.cache_size - self.batch

    def _limit(self) -> tuple[int, int] | None:
        """What a URL moved to the log's front must sort after: every URL in
        blocks and every URL taken (which may come back)."""
        limit = self.store.max
        if self.taken:
            taken = max((-i.priority, i.seq) for i in self.taken.values())
            limit = taken if limit is None else max(limit, taken)
        return limit

    @moves
    def overflow(self) -> None:
        """Bring memory back to 3/4 of the cache: the newest URLs of the lowest
        priority go to the front of the log while the order allows; the rest
        of the excess goes to hosts' blocks, blocked hosts and big lanes first."""
        lanes_here = self.lanes
        to_spill = lanes_here.mem - (self.cache_size - self.batch)
        limit = self._limit()
        while to_spill > 0:
            lanes: dict[int, list[Lane]] = {}
            for host in lanes_here.mem_hosts.values():
                for priority, lane in host.lanes.items():
                    if lane.back:
                        lanes.setdefault(priority, []).append(lane)
            if not lanes:
                break
            priority = min(lanes)
            seqs = sorted(
                (i.seq for lane in lanes[priority] for i in lane.back or ()), reverse=True
            )
            eligible = seqs
            if limit is not None:
                eligible = [s for s in seqs if (-priority, s) > limit]
            take = min(to_spill, len(eligible))
            if not take:
                break
            threshold = eligible[take - 1]
            spilled = self._cut_backs(lanes[priority], threshold)
            self.log.push_front(priority, spilled)
            self.spilled_total += len(spilled)
            to_spill -= take
            if take < len(seqs):
                break  # the rest of this priority sorts before what is left
        if to_spill > 0:
            blocked = lanes_here.blocked
            hosts = sorted(
                lanes_here.mem_hosts.values(), key=lambda h: (h.key not in blocked, -h.mem)
            )
            chosen = []
            for host in hosts:
                if to_spill <= 0:
                    break
                chosen.append(host)
                to_spill -= host.mem
            self.spill_hosts(chosen)

    def _cut_backs(self, lanes: list[Lane], threshold: int) -> list[UrlInfo]:
        """Remove every URL of seq >= ``threshold`` from the backs of ``lanes``."""
        cut: list[UrlInfo] = []
        for lane in lanes:
            back = lane.back
            assert back is not None
            while back and back[-1].seq >= threshold:
                cut.append(back.pop())
        cut.sort(key=lambda i: i.seq)
        here = self.lanes
        touched = set()
        for item in cut:
            key = host_key(item.url)
            host = here.hosts[key]
            host.mem -= 1
            host.size -= 1
            touched.add(key)
        here.mem -= len(cut)
        for key in touched:
            host = here.hosts[key]
            for priority in [
                p for p, lane in host.lanes.items() if not lane.back and not lane.blocks
            ]:
                del host.lanes[priority]
            if not host.mem:
                del here.mem_hosts[key]
            host.entry = None
            here.touch(host)
        return cut

    @moves
    def spill_hosts(self, hosts: list[HostQueue]) -> None:
        """Move every URL in memory of ``hosts`` to blocks of their lanes, in
        one waiting file: a lane's front becomes its first block, its back its last."""
        if not hosts:
            return
        here = self.lanes
        parts: list[tuple[Lane, bool, Run]] = []
        for host in hosts:
            for lane in host.lanes.values():
                parts += [(lane, True, lane.front)] if lane.front else []
                parts += [(lane, False, lane.back)] if lane.back else []
                lane.front = lane.back = None
            here.mem -= host.mem
            self.spilled_total += host.mem
            host.mem = 0
            del here.mem_hosts[host.key]
        blocks = self.store.write([part for _, _, part in parts])
        for (lane, first, _), block in zip(parts, blocks, strict=True):
            if lane.blocks is None:
                lane.blocks = block
            elif first:
                lane.blocks = block + lane.blocks
            else:
                lane.blocks.extend(block)
        here.freeze([host for host in hosts if host.key in here.blocked])

    @moves
    def refill(self) -> None:
        """Move the log's head into memory, up to 3/4 of the cache.  A URL
        of a host that is blocked and has nothing in memory or blocks (none
        at all, or frozen) goes straight to a block of its own and is frozen
        there: it would only be spilled and frozen again."""
        here = self.lanes
        want = max(1, self.cache_size - self.batch - here.mem)
        hosts, blocked = here.hosts, here.blocked
        waiting: dict[tuple[str, int], list[UrlInfo]] = {}
        held = 0  # URLs in ``waiting``: frozen a spill batch at a time
        while want > 0 and self.log:
            items = self.log.read_head(want)
            for item in here.drop_tombstones(items):
                key = host_key(item.url)
                if key in blocked and key not in hosts:
                    waiting.setdefault((key, item.priority), []).append(item)
                    held += 1
                else:
                    here.to_memory(item, key)
                    want -= 1
            if held >= self.batch:
                self._freeze_waiting(waiting)
                waiting, held = {}, 0
            if not items:
                want -= 1  # a segment of tombstones only: go on, but never forever
        if waiting:
            self._freeze_waiting(waiting)

    def _freeze_waiting(self, runs: dict[tuple[str, int], list[UrlInfo]]) -> None:
        """Each of ``runs`` (a blocked host's URLs of one priority, read from
        the log) as a block of one new waiting file, frozen at once."""
        lanes: dict[str, list[tuple[int, array[int]]]] = {}
        blocks = self.store.write(list(runs.values()))
        for (key, priority), block in zip(runs, blocks, strict=True):
            lanes.setdefault(key, []).append((priority, block))
        self.spilled_total += sum(map(len, runs.values()))
        self.cold.freeze(list(lanes.items()))
