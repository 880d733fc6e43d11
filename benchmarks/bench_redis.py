"""Redis memory per URL and round trips for RedisFrontier, on a redis-server of its own.

Starts ``redis-server`` on a free loopback port (no persistence), admits N
URLs over H hosts in calls of ``--batch`` (as the master admits a page's
links), and reports the server's ``used_memory`` growth per URL, split into
the seen set and the queues (``MEMORY USAGE`` of each key: every host's
queue and the host indexes), then leases them ``--lease`` a call and acks
them all (acks ride on the next call), counting round trips and commands
(``INFO commandstats``, the scripts' own included) per URL.

    python benchmarks/bench_redis.py --urls 1000000 --hosts 1000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from benchmarks.common import start_redis
from mpcrawler.frontier.redis.frontier import RedisFrontier


def url(i: int, hosts: int) -> str:
    return f"http://h{i % hosts}.example.com/section/{i % 997}/page-{i}.html"


SENT = [0]  # round trips: packed commands the client sent (a pipeline is one)
_send = redis.connection.Connection.send_packed_command


def _counting_send(self: Any, command: Any, check_health: bool = True) -> None:
    SENT[0] += 1
    _send(self, command, check_health)


redis.connection.Connection.send_packed_command = _counting_send  # type: ignore[method-assign]


def calls(client: redis.Redis) -> int:
    stats: dict[str, Any] = client.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info")


def key_bytes(client: redis.Redis, pattern: str) -> int:
    return sum(int(client.memory_usage(k, samples=0) or 0) for k in client.scan_iter(match=pattern))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--hosts", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=50, help="URLs per admit_many call")
    parser.add_argument("--lease", type=int, default=32, help="URLs leased per call")
    args = parser.parse_args()
    proc, address, directory = start_redis()
    try:
        client = redis.Redis.from_url(address)
        frontier = RedisFrontier(address, "bench", "node-1")
        client.config_resetstat()
        before = int(client.info("memory")["used_memory"])
        SENT[0] = 0
        t0 = time.perf_counter()
        batch = args.batch
        for start in range(0, args.urls, batch):  # as the master admits a page's links
            stop = min(args.urls, start + batch)
            frontier.admit_many(
                [(url(i, args.hosts), 0, i % 7, "page", None) for i in range(start, stop)]
            )
        t1 = time.perf_counter()
        admit_trips = SENT[0]
        admit_calls = calls(client)
        grown = int(client.info("memory")["used_memory"]) - before
        seen = key_bytes(client, "mpc:{bench}:seen*")
        queues = sum(
            key_bytes(client, f"mpc:{{bench}}:{pattern}")
            for pattern in ("q:*", "hosts", "own:*", "owner", "held:*", "inflight", "free_at")
        )
        client.config_resetstat()
        SENT[0] = 0
        t2 = time.perf_counter()
        got = 0
        while (item := frontier.lease(0.0, want=args.lease)) is not None:
            frontier.ack(item)  # waits in the outbox for the next call
            got += 1
        t3 = time.perf_counter()
        lease_trips = SENT[0]
        lease_calls = calls(client)
        assert got == args.urls, (got, args.urls)
        n = args.urls
        print(f"redis-server {client.info('server')['redis_version']}, {os.cpu_count()} CPUs")
        print(
            f"{n:,} URLs over {args.hosts:,} hosts; admitted {args.batch} a call, "
            f"leased {args.lease} a call"
        )
        print(f"  used_memory growth      {grown / n:8.1f} bytes per URL")
        print(f"  seen set                {seen / n:8.1f} bytes per URL")
        print(f"  queues and host index   {queues / n:8.1f} bytes per queued URL")
        for what, rate, trips, commands in (
            ("admit", n / (t1 - t0), admit_trips, admit_calls),
            ("lease + ack", n / (t3 - t2), lease_trips, lease_calls),
        ):
            print(
                f"  {what:<22}{rate:9,.0f} URLs/s, {trips / n:.2f} round trips and "
                f"{commands / n:.2f} commands (scripts' own included) per URL"
            )
        frontier.close()
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
