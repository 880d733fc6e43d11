"""HostTable: the hosts and politeness groups the scheduler holds, in memory
and parked.

A ``Host`` is one origin (``scheme://host[:port]``): its robots.txt and the
requests held for it.  A ``Group`` is the politeness unit
(``--politeness-key``: host name, registered domain or address): the hosts
that share one concurrency budget, one spacing between starts and one pace.

The table keeps in memory only the hosts with work (held, in flight,
robots.txt being fetched) and the ``max_hosts`` idle ones given work last,
least recently given work first.  An idle host beyond those is parked
(:mod:`mpcrawler.master.parked`) with its robots.txt, spacing and pace, and
comes back as it was when it is next given work (``host``); a group is
parked with its last host.  A group's limit and delay are the settings'
now and its hosts' Crawl-delay (``politeness``), whether it stayed in memory
or comes back from the parked rows.

The scheduler (:mod:`mpcrawler.master.scheduler`) decides what starts; this
only finds, makes, parks and restores what it decides on.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from dataclasses import dataclass, field

from ..frontier.base import FOREVER
from ..robots.rules import RobotsRules
from ..web.dns import DnsCache
from ..web.urls import hostname_of, registered_domain
from .parked import GroupRow, HostRow, ParkedHosts
from .request import Request

__all__ = ["Group", "Host", "HostTable"]


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

    def robots_fresh(self, now: float) -> bool:
        """Its robots.txt is known and not expired (--robots-ttl)."""
        return self.robots_state == "ready" and now < self.robots_expires

    def ready_at(self, now: float, use_robots: bool) -> float:
        """When the frontier may hand out its next URL: 0 (now), a time, or
        FOREVER (until something in the scheduler changes).  Pure
        politeness: requests held for it go first; then the concurrency
        limit, robots.txt being fetched or waited for, and the spacing
        between starts."""
        group = self.group
        if self.queue or group.in_flight >= group.limit or self.paused:
            return FOREVER
        if use_robots and self.robots_state == "fetching":
            return FOREVER
        if group.next_start > now:
            return group.next_start
        return 0.0


# What a parked host keeps as it is (besides its robots.txt's text).
_HOST_STATE = tuple(name for name in HostRow._fields if name != "robots_text")


class HostTable:
    """The hosts and groups in memory, by key, and the parked ones."""

    def __init__(
        self,
        *,
        host_concurrency: int,
        delay: float,
        robots: bool,
        user_agent: str,
        max_hosts: int | None,
        politeness_key: str,
        parked: ParkedHosts | None = None,
    ) -> None:
        self.host_concurrency = host_concurrency
        self.delay = delay
        self.use_robots = robots
        self.user_agent = user_agent
        self.max_hosts = max_hosts
        self.politeness_key = politeness_key
        self.hosts: dict[str, Host] = {}  # in memory, least recently given work first
        self.groups: dict[str, Group] = {}  # in memory, by politeness key
        self.parked = ParkedHosts() if parked is None else parked  # idle ones beyond max_hosts
        self.paced_parked = 0  # parked groups slowed down by their answers
        self.paused_hosts: set[str] = set()  # host names (any scheme, any port)
        self.dns = DnsCache() if politeness_key == "ip" else None

    def host(self, key: str) -> Host:
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
                self.park_idle()
        self.hosts[key] = host
        return host

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

    def group_of(self, host: str) -> Group | None:
        """The group of the host ``host`` as it is now, in memory or parked
        (left parked), without making one (None: none is known)."""
        key = self.group_key(host)
        group = self.groups.get(key)
        if group is None:
            row = self.parked.group(key) if self.parked.groups else None
            group = None if row is None else self._restored_group(key, row)
        return group

    def politeness(self, group: Group, respace: bool = False) -> None:
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

    def set_politeness(self, delay: float, host_concurrency: int) -> None:
        """New --delay and --host-concurrency, for every group in memory now
        (and for each parked one as it comes back)."""
        self.delay, self.host_concurrency = delay, host_concurrency
        for group in self.groups.values():
            self.politeness(group, respace=True)

    def set_paused(self, name: str, paused: bool) -> list[Host]:
        """The host name ``name`` (any scheme, any port) paused or resumed,
        for those in memory now and those met later; the ones in memory."""
        (self.paused_hosts.add if paused else self.paused_hosts.discard)(name)
        found = [host for key, host in self.hosts.items() if hostname_of(key) == name]
        for host in found:
            host.paused = paused
        return found

    def waiting_for_robots(self, now: float) -> int:
        """Hosts whose URLs wait for another try at their robots.txt."""
        return sum(
            1
            for h in self.hosts.values()
            if h.robots_state == "unknown" and h.robots_retry_at > now and h.queue
        )

    def paced(self) -> int:
        """Groups slowed down by their answers, in memory and parked."""
        return sum(1 for g in self.groups.values() if g.pace) + self.paced_parked

    def counts(self) -> dict[str, int]:
        """Hosts and groups held in memory, and parked (stats.json's ``hosts``)."""
        return {
            "in_memory": len(self.hosts),
            "groups_in_memory": len(self.groups),
            "parked": self.parked.hosts,
            "groups_parked": self.parked.groups,
        }

    def park_idle(self, scan: int = 64) -> None:
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
        self.politeness(group)
        return group

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
