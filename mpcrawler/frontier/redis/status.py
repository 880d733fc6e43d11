"""A shared crawl as Redis holds it, for ``status --redis`` and ``reset``.

Reads (``crawl_status``) and deletes (``reset_crawl``) a crawl's keys from
outside any node; neither is used while crawling.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ...control.shared import recent
from ...errors import FrontierError, UsageError
from ...web.redact import redact_url
from .client import PARTITIONS_KEY, connect, key_prefix, lost_message

__all__ = ["crawl_status", "reset_crawl"]


def partitions_of(client: Any, crawl: str) -> int:
    """How many partitions ``crawl`` has (one if it says nothing)."""
    return int(client.get(key_prefix(crawl) + PARTITIONS_KEY) or 1)


def crawl_status(url: str, crawl: str) -> dict[str, Any]:
    """Crawl-wide totals and one row per node, read from Redis (writes nothing)."""
    import redis

    client = connect(url)
    p = key_prefix(crawl)
    try:
        prefixes = [key_prefix(crawl, k) for k in range(partitions_of(client, crawl))]
        # One read at a time: a cluster client routes each by its key.  The
        # totals add up the partitions; the nodes' rows are partition 0's.
        totals = dict.fromkeys(("queued", "done", "errors", "seen", "late", "leased"), 0)
        scheduled, firsts, lost = 0, [], None
        for q in prefixes:
            for key in ("queued", "done", "errors", "seen", "late"):
                totals[key] += int(client.get(q + key) or 0)
            totals["leased"] += client.hlen(q + "leased")
            scheduled += client.zcard(q + "due")  # revisits waiting for their time
            firsts += client.zrange(q + "due", 0, 0, withscores=True)
            lost = lost or client.get(q + "lost")
        first = sorted(firsts, key=lambda entry: entry[1])[:1]
        started = client.get(p + "started")
        beats = client.hgetall(p + "beats")
        seconds, micros = client.time()  # Redis's clock, as the heartbeats are
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        rows = _node_rows(client, p, prefixes, beats, now_ms)
        live = [row for row in rows if row["alive"]]
        last = now_ms if live else max((int(b) for b in beats.values()), default=now_ms)
        elapsed = (last - int(started)) / 1000 if started else 0.0
        return {
            "crawl": crawl,
            **{key: totals[key] for key in ("queued", "leased", "done", "errors", "seen", "late")},
            "scheduled": int(scheduled),
            # The first revisit's time (its fetch, plus --revisit-after, or with
            # --continuous its own interval), local time.
            "next_due": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(first[0][1] / 1000))
            if first
            else None,
            "pages_per_s": round(totals["done"] / elapsed, 2) if elapsed > 0 else 0.0,
            "partitions": len(prefixes),
            "lost": lost_message(crawl, url, lost.decode()) if lost else None,
            "nodes": rows,
            "commands": recent(client, p),
        }
    except (redis.RedisError, OSError) as exc:
        raise FrontierError(
            f"cannot read crawl {crawl!r} from Redis at {redact_url(url)}: {exc}"
        ) from None
    finally:
        client.close()


def _node_rows(
    client: Any, p: str, prefixes: list[str], beats: dict[bytes, bytes], now_ms: int
) -> list[dict[str, Any]]:
    """One row a node of the crawl (partition 0's), by name: alive, its last
    heartbeat, its figures and the hosts it holds in every partition."""
    infos = client.hgetall(p + "nodes")
    alive = client.zrange(p + "alive", 0, -1, withscores=True)
    deadlines = {n.decode(): score for n, score in alive}
    rows = []
    for raw_node, raw_info in sorted(infos.items()):
        node = raw_node.decode()
        info = json.loads(raw_info)
        beat = int(beats.get(raw_node, 0))
        rows.append(
            {
                "node": node,
                "alive": deadlines.get(node, 0) > now_ms,
                "last_heartbeat_s": round((now_ms - beat) / 1000, 1),
                "pages": info.get("pages", 0),
                "errors": info.get("errors", 0),
                "pages_per_s": info.get("pages_per_s", 0.0),
                "hosts_held": sum(int(client.scard(f"{q}held:{node}")) for q in prefixes),
            }
        )
    return rows


def reset_crawl(url: str, crawl: str) -> int:
    """Delete every key of ``crawl`` (a lost crawl's tombstone too), for a
    deliberate fresh start; how many.  Refused while a node is alive."""
    import redis

    client = connect(url)
    try:
        prefixes = [key_prefix(crawl, k) for k in range(partitions_of(client, crawl))]
        seconds, micros = client.time()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        alive = [client.zrangebyscore(q + "alive", now_ms, "+inf") for q in prefixes]
        live = sorted({n.decode() for nodes in alive for n in nodes})
        if live:
            raise UsageError(f"crawl {crawl!r} has live nodes ({', '.join(live)}); stop them first")
        deleted = 0
        for q in reversed(prefixes):  # partition 0, with the partition count, last
            keys = list(client.scan_iter(match=q + "*"))
            for start in range(0, len(keys), 1000):  # one slot: a cluster takes them together
                client.delete(*keys[start : start + 1000])
            deleted += len(keys)
        return deleted
    except (redis.RedisError, OSError) as exc:
        raise FrontierError(
            f"cannot reset crawl {crawl!r} in Redis at {redact_url(url)}: {exc}"
        ) from None
    finally:
        client.close()
