"""Which network addresses a crawl may connect to.

Owns the rule "private networks are off limits": the downloader asks
:class:`AddressGuard` about the address each connection actually reached
(not about the name, so DNS rebinding gains nothing), in the worker.  Pure
functions, plus a lazily filled set of the seed hosts' own addresses.

Blocked unless ``--allow-private-networks`` (see :data:`BLOCKED_NETWORKS`):
"this network", loopback, RFC 1918 private, carrier-grade NAT, link-local
(cloud metadata services live there), IETF protocol assignments, benchmarking,
multicast, reserved and broadcast; in IPv6 the unspecified and loopback
addresses, unique-local, link-local, site-local and multicast, and the IPv4
forms embedded in IPv4-mapped, NAT64 and 6to4 addresses by the IPv4 rules.
The exception: an address of a seed's own host, which the operator named.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import threading
from collections.abc import Iterable

__all__ = ["BLOCKED_NETWORKS", "AddressGuard", "blocked_network"]

BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",  # "this network"; 0.0.0.0 reaches the local host
        "10.0.0.0/8",  # RFC 1918
        "100.64.0.0/10",  # carrier-grade NAT (RFC 6598)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local, cloud metadata (169.254.169.254)
        "172.16.0.0/12",  # RFC 1918
        "192.0.0.0/24",  # IETF protocol assignments
        "192.168.0.0/16",  # RFC 1918
        "198.18.0.0/15",  # benchmarking
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
        "::/128",  # unspecified
        "::1/128",  # loopback
        "fc00::/7",  # unique-local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated, still routed by some)
        "ff00::/8",  # multicast
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


@functools.lru_cache(maxsize=4096)  # asked at each request; a crawl meets few addresses
def blocked_network(address: str) -> str | None:
    """The blocked network ``address`` (an IP literal) is in, or None.  An
    address that does not parse is blocked (it cannot be judged)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # no IPv6 zone
    except ValueError:
        return "unparsable address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or (ip.sixtofour if ip.sixtofour else None)
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            inner = blocked_network(str(embedded))
            return None if inner is None else f"{inner} (in {ip})"
    for network in BLOCKED_NETWORKS:
        if ip.version == network.version and ip in network:
            return str(network)
    return None


class AddressGuard:
    """Decides, for one worker, whether a connection may go on.

    ``seed_hosts`` are the seeds' host names: a connection for one of them
    may reach any address, and so may one that reaches an address a seed
    host resolves to (resolved once, the first time a private address is
    met).  ``allow_private`` turns the rule off.
    """

    def __init__(self, seed_hosts: Iterable[str], *, allow_private: bool = False) -> None:
        self.seed_hosts = frozenset(h.strip("[]").lower() for h in seed_hosts)
        self.allow_private = allow_private
        self._seed_addresses: frozenset[str] | None = None
        self._lock = threading.Lock()

    def refusal(self, host: str, address: str) -> str | None:
        """Why a connection for ``host`` that reached ``address`` must be
        dropped, or None if it may go on."""
        if self.allow_private:
            return None
        network = blocked_network(address)
        if network is None or host.strip("[]").lower() in self.seed_hosts:
            return None
        if address.split("%", 1)[0] in self.seed_addresses():
            return None
        return f"{host} is at {address}, in the private or reserved network {network}"

    def seed_addresses(self) -> frozenset[str]:
        with self._lock:
            if self._seed_addresses is None:
                found: set[str] = set()
                for host in self.seed_hosts:
                    try:
                        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
                    except (OSError, UnicodeError):
                        continue
                    found.update(str(info[4][0]).split("%", 1)[0] for info in infos)
                self._seed_addresses = frozenset(found)
            return self._seed_addresses
