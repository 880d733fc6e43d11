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
``web.robots.RobotsRules`` parses and matches it (RFC 9309).

Hosts in memory are bounded: those with work (held, in flight, robots.txt
being fetched) and the ``max_hosts`` idle ones given work last.  An idle host
beyond those is parked (:mod:`mpcrawler.master.parked`) with its robots.txt,
spacing and pace, and comes back as it was when it is next given work; a
group (``--politeness-key``) is parked with its last host.

The scheduler owns no I/O of its own but its parked hosts: the engine sends
what it dispatches to the workers and feeds back how each host answered
(``answered``, ``finished``, and ``wake`` after a robots.txt answer).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..frontier import FOREVER, Frontier
from ..messages import PageResult
from ..robots.rules import RobotsRules
from ..settings import Settings
from ..web.dns import DnsCache
from ..web.urls import hostname_of, registered_domain
from .outcome import parse_retry_after, probe_path, soft_404_answer
from .parked import GroupRow, HostRow, ParkedHosts
from .request import Request

__all__ = ["MAX_CRAWL_DELAY", "Group", "Host", "Refusal", "Request", "Scheduler"]

log = logging.getLogger(__name__)

MAX_CRAWL_DELAY = 30.0
MAX_REFUSED_PER_DISPATCH = 1000  # a host given up drains this fast, and no faster
SLOWED_KEPT = 256  # groups slowed by their answers that ``slowed`` names (the latest)

# Pacing a struggling host (429, 503, timeouts in a row): its request rate is
# halved (its spacing doubled, from FIRST_PACE, capped), and after each run of
# GOOD_RUN answers it grows back by RATE_STEP requests a second until the
# host is at its own pace again: additive increase, multiplicative decrease.
# As TCP cuts its window once per loss event, not once per lost packet, only
# the answer to a request sent after the last cut may cut again: the answers
# to the requests in flight at one moment of overload are one event.  And at
# a spacing over a second one good answer is a run: it took that long to get.
FIRST_PACE = 0.5
GOOD_RUN = 3
RATE_STEP = 2.0
TIMEOUTS_IN_A_ROW = 2


def next_pace(pace: float, good_run: int, throttled: bool, cap: float) -> tuple[float, int]:
    """A host's spacing (0: its own pace) and run of good answers, after one
    more answer.  Pure: the scheduler's pacing decision."""
    if throttled:
        return min(cap, max(FIRST_PACE, 2 * pace)), 0
    if not pace:
        return 0.0, 0
    good_run += 1
    if good_run < (1 if pace > 1.0 else GOOD_RUN):
        return pace, good_run
    faster = 1 / (1 / pace + RATE_STEP)
    return (0.0 if faster < FIRST_PACE / 2 else faster), 0


@dataclass(slots=True, eq=False)
class Group:
    """The politeness unit (``--politeness-key``): the hosts that share one
    concurrency budget, one spacing between starts and one pace."""

    key: str
    members: dict[str, Host] = field(default_factory=dict)
    in_flight: int = 0
    next_start: float = 0.0
    last_start: float = -math.inf  # the last dispatch (a new --delay counts from it)
    limit: int = 1
    delay: float = 0.0
    crawl_delay: float = 0.0  # the largest Crawl-delay of its hosts' robots.txt (capped)
    pace: float = 0.0  # spacing the answers asked for (0: none)
    good_run: int = 0
    cut_at: float = -1.0  # when the pace was last cut (answers to older requests echo it)
    timeouts: int = 0  # in a row
    hold_until: float = 0.0  # Retry-After or a throttled answer: nothing starts before


@dataclass(slots=True, eq=False)
class Host:
    """One origin (``scheme://host[:port]``): its robots.txt, and the
    requests held for it; its politeness is its group's."""

    key: str
    group: Group
    queue: deque[Request] = field(default_factory=deque)
    robots: RobotsRules | None = None
    robots_state: str = "unknown"  # unknown | fetching | ready | failed
    robots_failures: int = 0
    robots_retry_at: float = 0.0
    robots_error: str = ""  # why the last robots.txt fetch failed
    robots_error_kind: str = "robots"
    robots_expires: float = math.inf  # when its copy is fetched again (finite: it has one)
    in_flight: int = 0  # this host's own requests in flight (its group counts them too)
    scheduled: bool = False
    blocked_until: float = 0.0  # what the frontier was last told
    probe_state: str = "unknown"  # --soft-404-probe: unknown | queued | done
    soft_404: str | None = None  # the text digest of its answer to a path that cannot exist
    paused: bool = False  # ``control pause-host``: nothing of it starts (never parked)


# What a parked host keeps as it is (besides its robots.txt's text).
_HOST_STATE = tuple(name for name in HostRow._fields if name != "robots_text")

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
        self.host_concurrency = host_concurrency
        self.delay = delay
        self.use_robots = robots
        self.user_agent = user_agent
        self.robots_retry_delay = robots_retry_delay
        self.robots_ttl = robots_ttl  # a copy older than this is fetched again (RFC 9309 2.4)
        self.retries, self.retry_delay = retries, retry_delay
        self.clock = clock
        self.max_hosts = max_hosts
        self.max_pace = max_pace
        self.frontier = frontier  # None: only what is submitted is dispatched
        self.pace_changes = 0
        self.hosts: dict[str, Host] = {}  # in memory, least recently given work first
        self.groups: dict[str, Group] = {}  # in memory, by politeness key
        self.parked = ParkedHosts() if parked is None else parked  # idle ones beyond max_hosts
        self.paced_parked = 0  # parked groups slowed down by their answers
        self.politeness_key = politeness_key
        self.probe = probe  # ask each host for a path that cannot exist (its soft-404 answer)
        self.dns = DnsCache() if politeness_key == "ip" else None
        self._ready: list[tuple[float, int, str]] = []
        self._delayed: list[tuple[float, int, Request]] = []
        self._order = itertools.count()
        self.queued = 0  # requests in host queues and the retry heap
        self.subs_held = 0  # of those, browsers' requests (kind "sub")
        self.paused_hosts: set[str] = set()  # host names (any scheme, any port)
        # groups slowed down by their answers, the last SLOWED_KEPT (the web view's list)
        self.slowed: OrderedDict[str, None] = OrderedDict()

    @classmethod
    def from_settings(
        cls,
        s: Settings,
        frontier: Frontier,
        clock: Callable[[], float] = time.monotonic,
        parked: ParkedHosts | None = None,
    ) -> Scheduler:
        return cls(
            host_concurrency=s.host_concurrency,
            delay=s.delay,
            robots=s.robots,
            user_agent=s.user_agent,
            robots_retry_delay=s.robots_retry_delay,
            robots_ttl=s.robots_ttl,
            retries=s.retries,
            retry_delay=s.retry_delay,
            max_hosts=s.max_active_hosts,
            max_pace=s.max_retry_after,
            politeness_key=s.politeness_key,
            probe=s.soft_404_probe and s.dedup,
            frontier=frontier,
            parked=parked,
            clock=clock,
        )

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
        if self.use_robots and not self._robots_fresh(host, now):
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
        if self.use_robots and host.robots_state == "ready" and not self._robots_fresh(host, now):
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
            and (not self.use_robots or self._robots_fresh(host, now))
        )

    @staticmethod
    def _robots_fresh(host: Host, now: float) -> bool:
        """The host's robots.txt is known and not expired (--robots-ttl)."""
        return host.robots_state == "ready" and now < host.robots_expires

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
        """How a host answered a page: a 429 or a 503, or TIMEOUTS_IN_A_ROW
        timeouts, slows the whole host down (``next_pace``); Retry-After also
        holds it back until then.  Other answers are good ones.  (The host
        may have been parked since its download ended: it comes back.)"""
        group = self._host(request.host).group
        status, timed_out = result.status, result.error_kind == "timeout"
        retry_after = parse_retry_after(result.retry_after, time.time())
        group.timeouts = group.timeouts + 1 if timed_out else 0
        throttled = status in (429, 503) or group.timeouts >= TIMEOUTS_IN_A_ROW
        if status is None and not timed_out:
            return  # a connection failure says nothing about the host's load
        before = group.pace
        echo = throttled and request.sent_at <= group.cut_at  # sent before the last cut
        if not echo:
            group.pace, group.good_run = next_pace(
                group.pace, group.good_run, throttled, self.max_pace
            )
        if throttled:  # the next request waits from now, not from the last start
            group.timeouts = 0
            group.hold_until = max(group.hold_until, self.clock() + group.pace)
            if not echo:
                group.cut_at = self.clock()
        if retry_after:
            group.hold_until = max(group.hold_until, self.clock() + min(retry_after, self.max_pace))
        group.next_start = max(group.next_start, group.hold_until)
        self._wake(group, self.clock())
        if group.pace or group.hold_until > self.clock():
            self.slowed[group.key] = None
            self.slowed.move_to_end(group.key)
            if len(self.slowed) > SLOWED_KEPT:
                self.slowed.popitem(last=False)
        else:
            self.slowed.pop(group.key, None)
        if group.pace != before:
            self.pace_changes += 1
            why = f"HTTP {status}" if status in (429, 503) else "timeouts" if throttled else "ok"
            if group.pace:
                log.info("pace of %s: a request every %.2f s (%s)", group.key, group.pace, why)
            else:
                log.info("pace of %s: back to its own", group.key)

    def set_politeness(self, delay: float, host_concurrency: int) -> None:
        """New --delay and --host-concurrency for every group, now (a
        Crawl-delay still makes its group one at a time, and no faster); a
        group's next start is at least the new delay after its last one."""
        self.delay, self.host_concurrency = delay, host_concurrency
        now = self.clock()
        for group in self.groups.values():
            self._politeness(group, respace=True)
            self._wake(group, now)

    def pause_host(self, name: str, paused: bool = True) -> None:
        """``control pause-host`` (``paused``) or ``resume-host``: no request
        of the host ``name`` (any scheme, any port) starts while it is paused;
        those in flight finish.  Its URLs stay queued, and the frontier is
        told it must wait (a paused host is never parked, so its resume
        finds it here)."""
        (self.paused_hosts.add if paused else self.paused_hosts.discard)(name)
        now = self.clock()
        for host in [h for key, h in self.hosts.items() if hostname_of(key) == name]:
            host.paused = paused
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
        if known is not None:
            return max(0.0, known.group.next_start - self.clock())
        key = self.group_key(host)
        group = self.groups.get(key)
        if group is None:
            row = self.parked.group(key) if self.parked.groups else None
            if row is None:
                return 0.0
            group = self._restored_group(key, row)
        return max(0.0, group.next_start - self.clock())

    def hosts_paced(self) -> int:
        """Hosts slowed down by their answers."""
        return sum(1 for g in self.groups.values() if g.pace) + self.paced_parked

    def host_counts(self) -> dict[str, int]:
        """Hosts and groups held in memory, and parked (stats.json's ``hosts``)."""
        return {
            "in_memory": len(self.hosts),
            "groups_in_memory": len(self.groups),
            "parked": self.parked.hosts,
            "groups_parked": self.parked.groups,
        }

    def hosts_waiting(self) -> int:
        """Hosts whose URLs wait for another try at their robots.txt."""
        now = self.clock()
        return sum(
            1
            for h in self.hosts.values()
            if h.robots_state == "unknown" and h.robots_retry_at > now and h.queue
        )

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
        """The host ``key`` (unparked, or new), moved to the most recent end
        of ``hosts``."""
        host = self.hosts.pop(key, None)
        if host is None:
            group = self._group(key)
            host = group.members[key] = Host(key, group)
            row = self.parked.take_host(key) if self.parked.hosts else None
            if row is not None:
                self._restore_host(host, row)
            elif not self.use_robots:
                host.robots_state = "ready"
            if self.paused_hosts and hostname_of(key) in self.paused_hosts:
                host.paused = True
            if self.max_hosts is not None and len(self.hosts) >= self.max_hosts:
                self._park_idle_hosts()
        self.hosts[key] = host
        return host

    def _park_idle_hosts(self, scan: int = 64) -> None:
        """Park the least recent idle hosts (nothing held, in flight or
        being fetched) to stay within ``max_hosts``, and a group with its
        last host.  Looks at ``scan`` hosts at most."""
        for key in list(itertools.islice(self.hosts, scan)):
            if len(self.hosts) < self.max_hosts:  # type: ignore[operator]
                return
            host = self.hosts[key]
            busy = host.queue or host.in_flight or host.scheduled or host.paused
            if busy or host.robots_state == "fetching":
                continue
            del self.hosts[key]
            group = host.group
            del group.members[key]
            text = None if host.robots is None else host.robots.text
            state = {name: getattr(host, name) for name in _HOST_STATE}
            self.parked.park_host(key, HostRow(robots_text=text, **state))
            if not group.members and not group.in_flight:
                del self.groups[group.key]
                self.paced_parked += bool(group.pace)
                row = GroupRow(*(getattr(group, name) for name in GroupRow._fields))
                self.parked.park_group(group.key, row)

    def _restore_host(self, host: Host, row: HostRow) -> None:
        for name in _HOST_STATE:
            setattr(host, name, getattr(row, name))
        if row.robots_text is not None:
            host.robots = RobotsRules.parse(row.robots_text, self.user_agent)

    def _restored_group(self, key: str, row: GroupRow) -> Group:
        """The group ``key`` as it was parked, under today's settings (a
        ``set_politeness`` since applies to it as to the others)."""
        group = Group(key)
        for name, value in zip(GroupRow._fields, row, strict=True):
            setattr(group, name, value)
        self._politeness(group)
        return group

    def _politeness(self, group: Group, respace: bool = False) -> None:
        """``group``'s limit and delay under the settings now and its
        Crawl-delay (one at a time, and no faster); its next start at least
        the delay after its last one.  ``respace`` (a new --delay): the
        spacing already waited for moves by the change, either way (a
        shorter delay brings the next start closer), never before a hold
        (Retry-After, a throttled answer)."""
        before = max(group.delay, group.pace)
        group.delay = max(self.delay, group.crawl_delay)
        group.limit = 1 if group.crawl_delay else self.host_concurrency
        if respace and group.last_start > -math.inf:
            moved = group.next_start + max(group.delay, group.pace) - before
            group.next_start = max(group.hold_until, moved)
        group.next_start = max(group.next_start, group.last_start + group.delay)

    def group_key(self, host: str) -> str:
        """The politeness key of the host ``scheme://host[:port]``: its host
        name (any scheme, any port: NUTCH-2623), its registered domain, or
        its address (the name itself if it has none)."""
        name = hostname_of(host)
        if self.politeness_key == "domain":
            return registered_domain(name)
        if self.dns is not None:
            return self.dns.address(name) or name
        return name

    def _group(self, host: str) -> Group:
        """The group of the host ``host``: in memory, unparked, or new."""
        key = self.group_key(host)
        group = self.groups.get(key)
        if group is None:
            row = self.parked.take_group(key) if self.parked.groups else None
            if row is None:
                group = Group(key, limit=self.host_concurrency, delay=self.delay)
            else:
                group = self._restored_group(key, row)
                self.paced_parked -= bool(group.pace)
            self.groups[key] = group
        return group

    def _wake(self, group: Group, now: float) -> None:
        """The group's state changed: each of its hosts is scheduled again
        and the frontier told until when it must wait."""
        when = max(now, group.next_start)
        for host in group.members.values():
            self._schedule(host, when)
            self._sync(host, now)

    def _sync(self, host: Host, now: float) -> None:
        """Tell the frontier until when ``host`` must wait (``ready_at``)."""
        until = self.ready_at(host, now)
        if until != host.blocked_until:
            host.blocked_until = until
            if self.frontier is not None:
                self.frontier.block(host.key, until)

    def ready_at(self, host: Host, now: float) -> float:
        """When the frontier may hand out ``host``'s next URL: 0 (now), a
        time, or FOREVER (until something here changes).  Pure politeness:
        requests held here go first; then the concurrency limit, robots.txt
        being fetched or waited for, and the spacing between starts."""
        group = host.group
        if host.queue or group.in_flight >= group.limit or host.paused:
            return FOREVER
        if self.use_robots and host.robots_state == "fetching":
            return FOREVER
        if group.next_start > now:
            return group.next_start
        return 0.0

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
