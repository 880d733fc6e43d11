"""RedisFrontier: the Frontier protocol on a Redis server (the shared tier).

Used by the master of a node, like :class:`~mpcrawler.frontier.local.LocalFrontier`;
redis-py talks to the server.  This is the storage, the contract and the
leases: each lease is recorded under its node id, the node keeps them alive
with a heartbeat (``sync``), and any node's heartbeat gives back the leases
of a node that stopped beating for ``lease_timeout``; a node that comes back
with the same id gets its own back at once.  Sharing one crawl between live
nodes politely (host ownership, partitioning) is the next layer, and is not
here yet.

Every key of a crawl is under ``mpc:{CRAWL}:`` (the braces are a Redis
Cluster hash tag: all of a crawl's keys live in one slot, so each script
touches one slot)::

    seq          INCR counter: admission numbers
    seen:XXXX    HASHes of every URL admitted or marked seen, by the first two
                 bytes (XXXX) of its 16-byte BLAKE2b digest; the field is the rest
    seen         the number of URLs seen
    queued       the number of URLs queued (not leased)
    q:HOST       ZSET of one host's URLs, scored -priority * 2**33 + seq
    hosts        ZSET of the hosts with URLs queued, scored by their best URL's score
    leased       HASH seq -> [host, member, node]
    alive        ZSET node -> heartbeat deadline (Redis's clock, ms)

A queue member is the JSON array ``[seq, url, depth, priority, kind,
lastmod]``: nothing on Redis is pickle.  The order is the one
:mod:`mpcrawler.frontier.base` writes down: a host's best URL is the lowest
score of its queue, and ``lease`` takes the host of lowest head score among
those this node has not blocked.  Blocks are this node's politeness and live
in its memory, as for the local frontier.

Each operation is applied in Redis when it returns, so ``sync`` and
``checkpoint`` have nothing to do: what survives a crash of the node is
everything, and what survives a crash of Redis is what its persistence
keeps (AOF with ``appendfsync everysec`` loses at most about a second).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import time
from typing import Any

from ..errors import FrontierError
from ..urls import host_key
from .base import FOREVER, KINDS, UrlInfo

__all__ = ["RedisFrontier"]

_MAX_PRIORITY = 1 << 19  # |priority| below this keeps scores exact in a double

# KEYS: seen bucket, seq, queued, hosts, queue, seen count.
# ARGV: digest tail, host, url, depth, priority, kind, lastmod
_ADMIT = """
if redis.call('HSETNX', KEYS[1], ARGV[1], '') == 0 then return 0 end
redis.call('INCR', KEYS[6])
local seq = redis.call('INCR', KEYS[2]) - 1
local score = -tonumber(ARGV[5]) * 8589934592 + seq
local member = cjson.encode({seq, ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7]})
redis.call('ZADD', KEYS[5], score, member)
redis.call('ZADD', KEYS[4], 'LT', score, ARGV[2])
redis.call('INCR', KEYS[3])
return 1
"""

# KEYS: hosts, queue, leased, queued.  ARGV: host, node.  Returns the member or false.
_TAKE = """
local head = redis.call('ZPOPMIN', KEYS[2])
if #head == 0 then redis.call('ZREM', KEYS[1], ARGV[1]) return false end
local next = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #next == 0 then redis.call('ZREM', KEYS[1], ARGV[1])
else redis.call('ZADD', KEYS[1], next[2], ARGV[1]) end
local seq = cjson.decode(head[1])[1]
redis.call('HSET', KEYS[3], seq, cjson.encode({ARGV[1], head[1], ARGV[2]}))
redis.call('DECR', KEYS[4])
return head[1]
"""

# Shared by the scripts that put a lease back in its host's queue, in its place.
_GIVE_BACK = """
local function give_back(leased, hosts, queued, prefix, seq, lease)
  local entry = cjson.decode(lease)
  local item = cjson.decode(entry[2])
  local score = -item[4] * 8589934592 + item[1]
  redis.call('ZADD', prefix .. entry[1], score, entry[2])
  redis.call('ZADD', hosts, 'LT', score, entry[1])
  redis.call('HDEL', leased, seq)
  redis.call('INCR', queued)
end
"""

# KEYS: leased, hosts, queued.  ARGV: seq, queue key prefix.  Puts a lease back.
_RELEASE = (
    _GIVE_BACK
    + """
local lease = redis.call('HGET', KEYS[1], ARGV[1])
if not lease then return 0 end
give_back(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[1], lease)
return 1
"""
)


# KEYS: alive, leased, hosts, queued.  ARGV: node, timeout (ms), queue key prefix.
# Renews this node's heartbeat (Redis's clock, so the nodes' clocks do not
# matter), then gives back every lease of each node whose heartbeat ran out.
_HEARTBEAT = (
    _GIVE_BACK
    + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #dead == 0 then return 0 end
local gone = {}
for _, n in ipairs(dead) do
  gone[n] = true
  redis.call('ZREM', KEYS[1], n)
end
local returned = 0
local cursor = '0'
repeat
  local page = redis.call('HSCAN', KEYS[2], cursor, 'COUNT', 1000)
  cursor = page[1]
  local fields = page[2]
  for i = 1, #fields, 2 do
    if gone[cjson.decode(fields[i + 1])[3]] then
      give_back(KEYS[2], KEYS[3], KEYS[4], ARGV[3], fields[i], fields[i + 1])
      returned = returned + 1
    end
  end
until cursor == '0'
return returned
"""
)


# KEYS: leased, seen count, seen buckets...  ARGV: seq, digest tails (one per bucket).
# Ends a lease and marks its redirect hops seen, in one step.
_ACK = """
redis.call('HDEL', KEYS[1], ARGV[1])
local added = 0
for i = 3, #KEYS do
  added = added + redis.call('HSETNX', KEYS[i], ARGV[i - 1], '')
end
if added > 0 then redis.call('INCRBY', KEYS[2], added) end
return added
"""


def _digest(url: str) -> bytes:
    return hashlib.blake2b(url.encode("utf-8"), digest_size=16).digest()


def _item(member: str | bytes) -> UrlInfo:
    seq, url, depth, priority, kind, lastmod = json.loads(member)
    return UrlInfo(url, int(depth), int(priority), int(seq), kind, lastmod or None)


class RedisFrontier:
    """The Frontier of crawl ``crawl`` on the Redis server at ``url``, for node ``node``.

    Raises :class:`FrontierError` if the server cannot be reached.
    """

    def __init__(self, url: str, crawl: str, node: str, lease_timeout: float = 30.0) -> None:
        import redis  # redis-py: only for crawls that use Redis

        self._errors = (redis.RedisError, OSError)
        self.node = node
        self.prefix = f"mpc:{{{crawl}}}:"
        p = self.prefix
        self._seen_count, self._seq, self._queued = p + "seen", p + "seq", p + "queued"
        self._hosts, self._leased, self._alive = p + "hosts", p + "leased", p + "alive"
        self.lease_timeout = lease_timeout
        self._last_beat = 0.0
        try:
            self.r = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)
            self.r.ping()
        except (redis.RedisError, OSError, ValueError) as exc:
            raise FrontierError(f"cannot reach Redis at {url}: {exc}") from None
        self._admit = self.r.register_script(_ADMIT)
        self._take = self.r.register_script(_TAKE)
        self._release = self.r.register_script(_RELEASE)
        self._beat = self.r.register_script(_HEARTBEAT)
        self._ack = self.r.register_script(_ACK)
        self._blocked: dict[str, float] = {}
        self._timed: list[tuple[float, str]] = []
        self.heartbeat()
        self._return_own_leases()

    # ------------------------------------------------------------ protocol
    def admit(
        self,
        url: str,
        depth: int = 0,
        priority: int = 0,
        kind: str = "page",
        lastmod: str | None = None,
    ) -> bool:
        if not -_MAX_PRIORITY < priority < _MAX_PRIORITY:
            raise ValueError(f"priority {priority} is out of range (|p| < {_MAX_PRIORITY})")
        if kind not in KINDS:
            raise ValueError(f"unknown URL kind {kind!r}")
        host = host_key(url)
        bucket, tail = self._seen_slot(url)
        keys = [bucket, self._seq, self._queued, self._hosts, self.prefix + "q:" + host]
        keys.append(self._seen_count)
        args = [tail, host, url, depth, priority, kind, lastmod or ""]
        return bool(self._admit(keys=keys, args=args))

    def is_seen(self, url: str) -> bool:
        return bool(self.r.hexists(*self._seen_slot(url)))

    def _seen_slot(self, url: str) -> tuple[str, bytes]:
        """(bucket key, field) of ``url`` in the seen set: 65,536 small hashes
        keyed by the digest's first two bytes, so each stays a compact
        listpack (about 20 bytes a URL) up to about 8 million URLs."""
        digest = _digest(url)
        return f"{self.prefix}seen:{digest[:2].hex()}", digest[2:]

    def lease(self, now: float | None = None) -> UrlInfo | None:
        now = time.monotonic() if now is None else now
        self._wake(now)
        while True:
            host = self._best_ready_host()
            if host is None:
                return None
            keys = [self._hosts, self.prefix + "q:" + host, self._leased, self._queued]
            member = self._take(keys=keys, args=[host, self.node])
            if member is not None:
                return _item(member)

    def ack(self, item: UrlInfo, seen: list[str] | tuple[str, ...] = ()) -> None:
        slots = [self._seen_slot(url) for url in seen]
        keys = [self._leased, self._seen_count, *(bucket for bucket, _ in slots)]
        self._ack(keys=keys, args=[item.seq, *(tail for _, tail in slots)])

    def release(self, item: UrlInfo) -> None:
        self._release(
            keys=[self._leased, self._hosts, self._queued], args=[item.seq, self.prefix + "q:"]
        )

    def block(self, host: str, until: float) -> None:
        if until <= 0:
            self._blocked.pop(host, None)
            return
        self._blocked[host] = until
        if until != FOREVER:
            heapq.heappush(self._timed, (until, host))

    def next_ready(self, now: float) -> float | None:
        self._wake(now)
        return self._timed[0][0] if self._timed else None

    def sync(self) -> None:
        """Each operation is in Redis when it returns; this keeps the node's
        leases alive (a heartbeat every third of ``lease_timeout``)."""
        if time.monotonic() - self._last_beat >= self.lease_timeout / 3:
            self.heartbeat()

    def heartbeat(self) -> int:
        """Renew this node's leases for ``lease_timeout`` seconds, and give
        back those of nodes whose heartbeat ran out; returns how many."""
        self._last_beat = time.monotonic()
        keys = [self._alive, self._leased, self._hosts, self._queued]
        args = [self.node, int(self.lease_timeout * 1000), self.prefix + "q:"]
        return int(self._beat(keys=keys, args=args))

    def checkpoint(self) -> None:
        """Nothing to do: Redis's own persistence (AOF) makes it durable."""

    def stats(self) -> dict[str, Any]:
        with self.r.pipeline(transaction=False) as pipe:
            pipe.get(self._queued)
            pipe.hlen(self._leased)
            pipe.get(self._seen_count)
            pipe.zcard(self._hosts)
            queued, taken, seen, hosts = pipe.execute()
        return {
            "queued": int(queued or 0),
            "taken": int(taken),
            "seen": int(seen or 0),
            "hosts_queued": int(hosts),
            "hosts_blocked": len(self._blocked),
        }

    def __len__(self) -> int:
        return int(self.r.get(self._queued) or 0)

    @property
    def taken(self) -> int:
        return int(self.r.hlen(self._leased))

    def close(self) -> None:
        """Give this node's leases back at once (others may take them) and disconnect."""
        try:
            self._return_own_leases()
            self.r.zrem(self._alive, self.node)
        finally:
            self.r.close()

    def abandon(self) -> None:
        """Disconnect as a killed node would: its leases stay recorded (for tests)."""
        self.r.close()

    # ----------------------------------------------------------- internals
    def _wake(self, now: float) -> None:
        while self._timed and self._timed[0][0] <= now:
            until, host = heapq.heappop(self._timed)
            if self._blocked.get(host) == until:
                del self._blocked[host]

    def _best_ready_host(self) -> str | None:
        """The queued host of best head that this node has not blocked."""
        start, batch = 0, len(self._blocked) + 1
        while True:
            hosts = self.r.zrange(self._hosts, start, start + batch - 1)
            if not hosts:
                return None
            for raw in hosts:
                host = raw.decode()
                if host not in self._blocked:
                    return host
            start += batch

    def _return_own_leases(self) -> None:
        for seq, raw in self.r.hscan_iter(self._leased):
            if json.loads(raw)[2] == self.node:
                self._release(
                    keys=[self._leased, self._hosts, self._queued], args=[seq, self.prefix + "q:"]
                )
