"""The scheduler: per-host politeness over the frontier, in the master.

``dispatch(free)`` picks up to ``free`` requests to start now (the pool owns
the free slots and says how many there are).  New work comes from the
frontier the scheduler holds, leased one URL at a time, and the frontier
only hands out URLs of hosts that may be fetched now: the scheduler tells it
(``Frontier.block``) which hosts must wait (delay, Crawl-delay,
Retry-After, pacing, the concurrency limit, robots.txt not yet known) and
until when.  So no host's backlog can delay another host, and a page budget
the frontier keeps ends the leasing by itself.

What the scheduler itself holds is only work already leased: requests that
wait for their host's robots.txt, redirect hops, requests given back by a
crashed worker, and retries (in a heap of their own, holding no slot).  They
wait in one FIFO per host, ahead of the frontier's URLs of that host (the
host stays blocked in the frontier while its FIFO holds any), and a heap
orders those hosts by the time each may be hit next.

A browser's request (kind ``sub``, --render) is held like any other, in
its host's FIFO, so it waits for the same robots.txt, delay and concurrency;
but it takes no slot (its worker's renderer makes it), so ``dispatch``
starts it even when no slot is free.

robots.txt is fetched once per host, before any other request to that host,
as a request of kind ``robots`` that goes through the same slots.  The master
feeds the answer back through :mod:`mpcrawler.robots.answers` (``take_answer``);
``robots.rules.RobotsRules`` parses and matches it (RFC 9309).

The hosts and their politeness groups (``--politeness-key``) are held in a
``HostTable`` (:mod:`mpcrawler.master.hosttable`): those with work in memory,
idle ones beyond ``max_hosts`` parked, and each back as it was when it is
next given work.

The scheduler owns no I/O of its own but its parked hosts: the engine sends
what it dispatches to the workers and feeds back how each host answered
(``answered``, ``finished``, and ``wake`` after a robots.txt answer).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable

from ..frontier import Frontier
from ..messages import PageResult
from .hosttable import Group, Host, HostTable
from .outcome import probe_path, soft_404_answer
from .pacing import Pacing
from .parked import ParkedHosts
from .request import Request

__all__ = ["MAX_CRAWL_DELAY", "Refusal", "Scheduler"]

MAX_CRAWL_DELAY = 30.0
MAX_REFUSED_PER_DISPATCH = 1000  # a host given up drains this fast, and no faster

Refusal = tuple[Request, str, str]  # a request never to be fetched: (request, why, error kind)


class Scheduler:
    """Picks the requests to start now, politely.

    ``host_concurrency`` requests in flight per host; ``delay`` seconds at
    least between the starts of two requests to one host.  A robots.txt
    Crawl-delay makes that host one-at-a-time, spaced by the larger of it
    (capped at 30 s) and ``delay``.
    """

    def __init__(
        self,
        *,
        host_concurrency: int = 8,
        delay: float = 0.0,
        robots: bool = True,
        user_agent: str = "mpcrawler",
        robots_retry_delay: float = 30.0,
        robots_ttl: float = math.inf,
        retries: int = 2,
        retry_delay: float = 1.0,
        max_hosts: int | None = None,
        max_pace: float = 60.0,
        politeness_key: str = "host",
        probe: bool = False,
        frontier: Frontier | None = None,
        parked: ParkedHosts | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.table = HostTable(
            host_concurrency=host_concurrency,
            delay=delay,
            robots=robots,
            user_agent=user_agent,
            max_hosts=max_hosts,
            politeness_key=politeness_key,
            parked=parked,
        )
        self.hosts, self.groups = self.table.hosts, self.table.groups  # the table's, not copies
        self.parked = self.table.parked
        self.use_robots = robots
        self.user_agent = user_agent
        self.robots_retry_delay = robots_retry_delay
        self.robots_ttl = robots_ttl  # a copy older than this is fetched again (RFC 9309 2.4)
        self.retries, self.retry_delay = retries, retry_delay
        self.clock = clock
        self.pacing = Pacing(max_pace)
        self.slowed = self.pacing.slowed  # the web view's list: the pacing's, not a copy
        self.frontier = frontier  # None: only what is submitted is dispatched
        self.probe = probe  # ask each host for a path that cannot exist (its soft-404 answer)
        self._ready: list[tuple[float, int, str]] = []
        self._delayed: list[tuple[float, int, Request]] = []
        self._order = itertools.count()
        self.queued = 0  # requests in host queues and the retry heap
        self.subs_held = 0  # of those, browsers' requests (kind "sub")

    # ------------------------------------------------------------- requests
    def new_request(self, url: str, **fields: object) -> Request:
        return Request.new(url, **fields)

    def submit(self, request: Request, now: float | None = None) -> None:
        """Hold ``request`` until its host may be hit (ahead of the host's
        URLs still in the frontier)."""
        host = self._host(request.host)
        host.queue.append(request)
        self.queued += 1
        self.subs_held += request.kind == "sub"
        now = self.clock() if now is None else now
        self._schedule(host, now)
        self._sync(host, now)

    def retry_later(self, request: Request, when: float) -> None:
        heapq.heappush(self._delayed, (when, next(self._order), request))
        self.queued += 1

    def finished(self, request: Request, started: float | None = None) -> None:
        """A dispatched request came back (or its worker died); ``started``:
        when its worker began the download (monotonic, one clock for every
        process here).  The host's next start counts from then, not from the
        dispatch: a request that waited in its worker (a busy machine) does
        not bring the next one closer to it than the delay.  With a delay or
        a pace (a host that answered 429), one at a time (a concurrency of
        1), the next start also waits that long after this download ended,
        as wget's --wait does: a request held up on its way (a stalled
        process) reaches the server late, and the next one must not follow
        it closer than that."""
        host = self.hosts[request.host]
        group = host.group
        host.in_flight -= 1
        group.in_flight -= 1
        if request.kind == "robots":
            return  # its answer wakes the host (robots.take_answer)
        now = self.clock()
        if started is not None:
            spacing = max(group.delay, group.pace)
            after = now if group.limit == 1 and spacing else started
            group.next_start = max(group.next_start, after + spacing)
        self._wake(group, now)

    def wake(self, host: Host) -> None:
        """``host``'s state changed outside (its robots.txt answer): its
        group's hosts are scheduled again and the frontier told."""
        self._wake(host.group, self.clock())

    # ------------------------------------------------------------- dispatch
    def dispatch(self, free: int) -> tuple[list[Request], list[Refusal]]:
        """Up to ``free`` requests to start now: those held here first, then
        new ones leased from the frontier (its best URL of a host not
        blocked); and, beyond ``free``, the browsers' requests that may start
        (they take no slot).

        Returns ``(assigned, refused)``: the requests to send, and requests
        that will never be fetched, with the reason and its error kind.
        """
        now = self.clock()
        self._release_delayed(now)
        assigned: list[Request] = []
        refused: list[Refusal] = []
        ready = self._ready
        subs = 0  # of ``assigned``, those that take no slot
        deferred: list[str] = []  # hosts whose next request needs a slot, none being free
        while len(refused) < MAX_REFUSED_PER_DISPATCH:
            room = len(assigned) - subs < free
            if ready and ready[0][0] <= now:
                if not room and self._needs_slot(self.hosts[ready[0][2]], now):
                    deferred.append(heapq.heappop(ready)[2])
                    continue
                held = self._next_held(now, assigned, refused)
                if held is None:
                    continue
                host, request = held
                subs += request.kind == "sub"
            elif room:
                leased = self._lease(now, 2 * (free - len(assigned) + subs))  # and the next turn
                if leased is None:
                    break
                host, request = self._host(leased.host), leased
                if not self._may_start(host, now):
                    self.submit(leased, now)  # it waits here, ahead of the host's other URLs
                    continue
                # the common case: straight out, never held nor blocked in the frontier
            else:
                break
            if host.robots is not None and not host.robots.allows(request.url):
                refused.append((request, "disallowed by robots.txt", "robots"))
                subs -= request.kind == "sub"
                self._schedule(host, now)
                self._sync(host, now)
                continue
            self._start(host, request, now, assigned)
        for key in deferred:  # first on the heap at the next turn
            host = self.hosts[key]
            host.scheduled = False
            self._schedule(host, now)
        return assigned, refused

    def _needs_slot(self, host: Host, now: float) -> bool:
        """Would ``host``'s turn now take a slot: its next request is not a
        browser's, or its robots.txt must be fetched first?"""
        if not host.queue:
            return False
        if self.use_robots and not host.robots_fresh(now):
            return host.robots_state != "failed" and host.robots_state != "fetching"
        return host.queue[0].kind != "sub"

    def _next_held(
        self, now: float, assigned: list[Request], refused: list[Refusal]
    ) -> tuple[Host, Request] | None:
        """The host first on the ready heap: its next held request, with it,
        if one may start now; else None, having done what the host needs (its
        robots.txt fetched or waited for, its URLs refused if that failed, or
        the host scheduled for its next start)."""
        _, _, key = heapq.heappop(self._ready)
        host = self.hosts[key]
        group = host.group
        host.scheduled = False
        if not host.queue or group.in_flight >= group.limit or host.paused:
            return None  # finished() (or resume_host) puts it back
        if self.use_robots and host.robots_state == "ready" and not host.robots_fresh(now):
            host.robots_state = "unknown"  # expired: fetched again before its next request
            host.robots_retry_at = 0.0
        if self.use_robots and host.robots_state != "ready":
            if host.robots_state == "failed":
                reason = f"robots.txt unavailable: {host.robots_error}"
                refused.extend((r, reason, host.robots_error_kind) for r in host.queue)
                self.queued -= len(host.queue)
                self.subs_held -= sum(r.kind == "sub" for r in host.queue)
                host.queue.clear()
                self._sync(host, now)  # its URLs come out of the frontier to be refused
            elif host.robots_state == "unknown":
                if now < host.robots_retry_at:
                    self._schedule(host, host.robots_retry_at)
                    return None
                robots = self.new_request(host.key + "/robots.txt", kind="robots")
                host.robots_state = "fetching"
                host.in_flight += 1
                group.in_flight += 1
                robots.sent_at = now
                assigned.append(robots)
                self._wake(group, now)
            return None
        if now < group.next_start:
            self._schedule(host, group.next_start)
            return None
        self.queued -= 1
        request = host.queue.popleft()
        self.subs_held -= request.kind == "sub"
        return host, request

    def _may_start(self, host: Host, now: float) -> bool:
        """May a request of ``host`` start now, none being held for it?"""
        group = host.group
        return (
            not host.queue
            and not host.paused
            and group.in_flight < group.limit
            and now >= group.next_start
            and (not self.use_robots or host.robots_fresh(now))
        )

    def _start(self, host: Host, request: Request, now: float, assigned: list[Request]) -> None:
        """``request`` of ``host`` starts now: into ``assigned``, counted in
        flight, and the group's next start set after it."""
        group = host.group
        host.in_flight += 1
        group.in_flight += 1
        group.next_start = now + max(group.delay, group.pace)
        group.last_start = now
        request.sent_at = now
        assigned.append(request)
        self._wake(group, now)
        if self.probe and host.probe_state == "unknown" and request.kind == "page":
            self._queue_probe(host, now)

    def _queue_probe(self, host: Host, now: float) -> None:
        """The first page of ``host`` started: its soft-404 probe is next
        (a path that cannot exist, unless robots.txt keeps it out)."""
        url = host.key + probe_path()
        if host.robots is not None and not host.robots.allows(url):
            host.probe_state = "done"
            return
        host.probe_state = "queued"
        host.queue.appendleft(self.new_request(url, kind="probe"))
        self.queued += 1
        self._schedule(host, now)
        self._sync(host, now)

    def probed(self, request: Request, result: PageResult | None) -> None:
        """A host's soft-404 probe answered (``result``), or will not: a
        200 with a text is its soft-404 answer (``outcome.soft_404_answer``)."""
        host = self._host(request.host)
        host.probe_state = "done"
        host.soft_404 = soft_404_answer(result)

    def soft_404_of(self, key: str) -> str | None:
        """The text digest of the soft-404 answer of the host ``key``, if it
        has one and is in memory (a parked host's is kept with it)."""
        host = self.hosts.get(key)
        return None if host is None else host.soft_404

    def _lease(self, now: float, want: int) -> Request | None:
        """The frontier's best URL of a host that may be fetched now, as a
        request (None: none, or the frontier's page budget is spent)."""
        item = self.frontier.lease(now, want) if self.frontier is not None else None
        return None if item is None else Request.leased(item)

    def answered(self, request: Request, result: PageResult) -> None:
        """How a host answered a page, for its group's pace
        (:class:`mpcrawler.master.pacing.Pacing` decides); the group woken.
        (The host may have been parked since its download ended: it comes back.)"""
        group = self._host(request.host).group
        if self.pacing.answered(group, request.sent_at, result, self.clock()):
            self._wake(group, self.clock())

    @property
    def pace_changes(self) -> int:
        """How many times a group's pace changed (stats.json)."""
        return self.pacing.changes

    def set_politeness(self, delay: float, host_concurrency: int) -> None:
        """New --delay and --host-concurrency for every group, now (a
        Crawl-delay still makes its group one at a time, and no faster); a
        group's next start is at least the new delay after its last one."""
        self.table.set_politeness(delay, host_concurrency)
        now = self.clock()
        for group in self.groups.values():
            self._wake(group, now)

    def pause_host(self, name: str, paused: bool = True) -> None:
        """``control pause-host`` (``paused``) or ``resume-host``: no request
        of the host ``name`` (any scheme, any port) starts while it is paused;
        those in flight finish.  Its URLs stay queued, and the frontier is
        told it must wait (a paused host is never parked, so its resume
        finds it here)."""
        now = self.clock()
        for host in self.table.set_paused(name, paused):
            self._schedule(host, now)
            self._sync(host, now)

    def take_back(self, match: Callable[[str], bool]) -> list[Request]:
        """The requests held here, not yet tried, whose URL ``match`` says
        True of, out of their hosts' queues (``control exclude``: the caller
        gives their leases back for the frontier to drop)."""
        now = self.clock()
        taken: list[Request] = []
        for host in self.hosts.values():
            if not host.queue:
                continue
            kept: list[Request] = []
            for request in host.queue:
                fresh = not request.attempts and not request.hops and request.info is not None
                (taken if fresh and match(request.url) else kept).append(request)
            if len(kept) < len(host.queue):
                self.queued -= len(host.queue) - len(kept)
                host.queue.clear()
                host.queue.extend(kept)
                self._sync(host, now)
        return taken

    def wait_before(self, host: str) -> float:
        """Seconds until ``host``'s group may start its next request (0: now),
        whatever else holds the host back."""
        known = self.hosts.get(host)
        group = known.group if known is not None else self.table.group_of(host)
        return 0.0 if group is None else max(0.0, group.next_start - self.clock())

    def hosts_paced(self) -> int:
        """Hosts slowed down by their answers."""
        return self.table.paced()

    def host_counts(self) -> dict[str, int]:
        """Hosts and groups held in memory, and parked (stats.json's ``hosts``)."""
        return self.table.counts()

    def hosts_waiting(self) -> int:
        """Hosts whose URLs wait for another try at their robots.txt."""
        return self.table.waiting_for_robots(self.clock())

    def next_event(self, free: int) -> float | None:
        """Seconds until a request may become dispatchable (None: nothing waits
        for a time).  With no ``free`` slot nothing but a browser's request
        can be dispatched before a worker frees one, which the master hears
        as a message."""
        if not free:
            if not self.subs_held:
                return None
            now = self.clock()
            due = [
                when
                for when, _, key in self._ready
                if key in self.hosts and not self._needs_slot(self.hosts[key], now)
            ]
            return max(0.0, min(due) - now) if due else None
        times = []
        if self._ready:
            times.append(self._ready[0][0])
        if self._delayed:
            times.append(self._delayed[0][0])
        if not times:
            return None
        return max(0.0, min(times) - self.clock())

    # ------------------------------------------------------------ internals
    def _host(self, key: str) -> Host:
        """The host ``key`` (unparked, or new), the most recently given work."""
        return self.table.host(key)

    def _wake(self, group: Group, now: float) -> None:
        """The group's state changed: each of its hosts is scheduled again
        and the frontier told until when it must wait."""
        when = max(now, group.next_start)
        for host in group.members.values():
            self._schedule(host, when)
            self._sync(host, now)

    def _sync(self, host: Host, now: float) -> None:
        """Tell the frontier until when ``host`` must wait (``Host.ready_at``)."""
        until = host.ready_at(now, self.use_robots)
        if until != host.blocked_until:
            host.blocked_until = until
            if self.frontier is not None:
                self.frontier.block(host.key, until)

    def _schedule(self, host: Host, when: float) -> None:
        group = host.group
        if host.scheduled or not host.queue or group.in_flight >= group.limit or host.paused:
            return
        host.scheduled = True
        heapq.heappush(self._ready, (when, next(self._order), host.key))

    def _release_delayed(self, now: float) -> None:
        while self._delayed and self._delayed[0][0] <= now:
            _, _, request = heapq.heappop(self._delayed)  # stays counted in queued
            host = self._host(request.host)
            host.queue.appendleft(request)
            self._schedule(host, now)
            self._sync(host, now)
