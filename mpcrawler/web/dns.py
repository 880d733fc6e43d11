"""A DNS cache that honours TTLs, bounded in size: host name -> one address.

Used by the scheduler's ``--politeness-key ip``, which must know a host's
address before it schedules the host (the workers' connections resolve
again, through the system).  Where an answer comes from:

- an IP literal is its own address;
- a name in ``/etc/hosts`` gets its address there (cached for HOSTS_TTL);
- any other name is asked of DNS (dnspython; A, then AAAA) and cached for
  the answer's TTL, within [MIN_TTL, MAX_TTL]: Scrapy's cache ignores TTLs
  (scrapy#905), so a host that moved is grouped by its old address for
  the whole crawl;
- a name DNS cannot answer falls back to the system resolver, and failing
  that has no address (None) for NEGATIVE_TTL.

Of several addresses the lowest is taken, so that a name whose records
rotate keeps one group.  The cache holds ``size`` names at most, the least
recently used going first.  Blocking: a lookup costs the master up to
``timeout`` seconds, once per name per TTL.
"""

from __future__ import annotations

import collections
import ipaddress
import socket
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["DnsCache", "read_hosts_file"]

HOSTS_TTL = 3600.0
NEGATIVE_TTL = 60.0
MIN_TTL = 5.0
MAX_TTL = 86400.0


def read_hosts_file(path: str = "/etc/hosts") -> dict[str, str]:
    """name -> its first IPv4 address in the hosts file (else its first address)."""
    found: dict[str, list[str]] = {}
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        for name in fields[1:]:
            found.setdefault(name.lower(), []).append(fields[0])
    return {
        name: next((a for a in addresses if ":" not in a), addresses[0])
        for name, addresses in found.items()
    }


def _dns_lookup(name: str, timeout: float) -> tuple[str | None, float]:
    """(lowest address, TTL) from DNS, or (None, 0) if it does not answer."""
    try:
        import dns.exception
        import dns.resolver
    except ImportError:  # pragma: no cover - a dependency
        return None, 0.0
    resolver = dns.resolver.Resolver()
    resolver.lifetime = timeout
    for rdtype in ("A", "AAAA"):
        try:
            answer = resolver.resolve(name, rdtype)
        except (dns.exception.DNSException, OSError):
            continue
        addresses = sorted(r.address for r in answer)
        if addresses and answer.rrset is not None:
            return addresses[0], float(answer.rrset.ttl)
    return None, 0.0


def _system_lookup(name: str) -> str | None:
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return None
    addresses = sorted({str(info[4][0]) for info in infos}, key=lambda a: (":" in a, a))
    return addresses[0] if addresses else None


class DnsCache:
    """Host names to addresses, each kept for its TTL, at most ``size`` of them."""

    def __init__(
        self,
        size: int = 10_000,
        timeout: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        hosts: dict[str, str] | None = None,
        lookup: Callable[[str, float], tuple[str | None, float]] = _dns_lookup,
    ) -> None:
        self.size, self.timeout, self.clock = size, timeout, clock
        self.hosts = read_hosts_file() if hosts is None else hosts
        self.lookup = lookup
        self._entries: collections.OrderedDict[str, tuple[str | None, float]] = (
            collections.OrderedDict()
        )
        self.lookups = 0  # names asked of DNS or the system (not from the cache)

    def __len__(self) -> int:
        return len(self._entries)

    def address(self, name: str) -> str | None:
        """One address of host name ``name`` (no port, no brackets), or None."""
        name = name.lower()
        try:
            return str(ipaddress.ip_address(name))
        except ValueError:
            pass
        now = self.clock()
        entry = self._entries.get(name)
        if entry is not None and entry[1] > now:
            self._entries.move_to_end(name)
            return entry[0]
        self.lookups += 1
        if name in self.hosts:
            address, ttl = self.hosts[name], HOSTS_TTL
        else:
            address, ttl = self.lookup(name, self.timeout)
            if address is None:
                address = _system_lookup(name)
                ttl = HOSTS_TTL if address is not None else NEGATIVE_TTL
            else:
                ttl = min(MAX_TTL, max(MIN_TTL, ttl))
        self._entries[name] = (address, now + ttl)
        self._entries.move_to_end(name)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return address
