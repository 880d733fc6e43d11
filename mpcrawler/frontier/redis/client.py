"""How a node reaches a crawl in Redis: the client, the keys' prefix, and the
errors a user reads (a refused password, a lost crawl).

Used by the shared frontier (:mod:`.frontier`) and by ``status`` and
``reset`` (:mod:`.status`).  redis-py is imported only when a client is made.
"""

from __future__ import annotations

from typing import Any

from ...errors import FrontierError, UsageError
from ...web.redact import redact_url

__all__ = ["PARTITIONS_KEY", "connect", "key_prefix", "lost_message"]

# Under partition 0's prefix: how many partitions the crawl has (absent: one).
PARTITIONS_KEY = "partitions"


def key_prefix(crawl: str, partition: int = 0) -> str:
    """Every key of ``crawl``'s ``partition`` starts so: one hash tag, one
    cluster slot a partition.  Partition 0 is the whole of a crawl of one
    partition; partition p > 0 is ``mpc:{CRAWL/p}:`` (a crawl name holds no
    '/', so no other crawl's tag is the same)."""
    return f"mpc:{{{crawl}}}:" if partition == 0 else f"mpc:{{{crawl}/{partition}}}:"


def lost_message(crawl: str, url: str, why: str) -> str:
    return (
        f"the shared state of crawl {crawl!r} in Redis at {redact_url(url)} was lost: {why}; "
        f"start afresh with a new --crawl name and new job dirs (or 'mpcrawler reset "
        f"--redis URL --crawl {crawl}' first)"
    )


def _password_refused(url: str, exc: BaseException) -> str:
    given = "the password in the URL" if ":***@" in redact_url(url) else "no password"
    return (
        f"Redis at {redact_url(url)} refused the connection with {given} ({exc}); "
        "give it as redis://:PASSWORD@HOST:PORT/DB, in REDIS_URL"
    )


def connect(url: str, timeout: float = 10.0) -> Any:
    """A redis-py client for ``url`` that does not retry on its own (a call
    that leases must not be sent twice): a cluster client if the server is
    a Redis Cluster node.  Raises FrontierError if unreachable."""
    try:
        import redis
        import redis.cluster
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError:  # pragma: no cover - the extra is missing
        raise FrontierError("--redis needs redis-py: pip install 'mpcrawler[redis]'") from None
    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": min(timeout, 5.0),
        "retry": Retry(NoBackoff(), 0),
    }
    try:
        client = redis.Redis.from_url(url, **options)
        if client.info("cluster").get("cluster_enabled"):
            client.close()
            client = redis.cluster.RedisCluster.from_url(url, **options)
        client.ping()
    except redis.AuthenticationError as exc:
        raise UsageError(_password_refused(url, exc)) from None
    except redis.ResponseError as exc:
        if "NOAUTH" in str(exc) or "WRONGPASS" in str(exc):
            raise UsageError(_password_refused(url, exc)) from None
        raise FrontierError(f"cannot reach Redis at {redact_url(url)}: {exc}") from None
    except (redis.RedisError, OSError, ValueError) as exc:
        raise FrontierError(f"cannot reach Redis at {redact_url(url)}: {exc}") from None
    return client
