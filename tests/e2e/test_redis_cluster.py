"""A real three-node Redis Cluster (three redis-server processes, the 16,384
slots split between them): every key of a crawl's partition hashes to one
slot, the Lua step runs on the server that serves it, and a two-node crawl
through the cluster fetches every page exactly once, with its keys in one
partition and in three (one on each server)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.cluster
from many_nodes import Node, serve_site
from redis.crc import key_slot

from mpcrawler.frontier.redis.client import key_prefix
from mpcrawler.frontier.redis.frontier import RedisFrontier
from mpcrawler.frontier.redis.partitions import partition_of
from mpcrawler.testing.redis import SLOTS, RedisCluster
from mpcrawler.web.urls import host_key


@pytest.fixture(scope="module")
def servers() -> Iterator[RedisCluster]:
    try:
        cluster = RedisCluster(3)
    except RuntimeError as exc:
        pytest.fail(f"{exc}: .ci/run installs Debian's redis-server")
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def cluster(servers: RedisCluster) -> str:
    return servers.url


def far_crawl() -> str:
    """A crawl name whose slot the third server serves, not the one in the URL."""
    while True:
        crawl = f"c-{uuid.uuid4().hex[:8]}"
        if key_slot(f"mpc:{{{crawl}}}:seq".encode()) >= SLOTS * 2 // 3:
            return crawl


def test_a_crawls_keys_live_in_one_slot_of_a_cluster(cluster: str) -> None:
    crawl = far_crawl()
    a = RedisFrontier(cluster, crawl, "a")
    b = RedisFrontier(cluster, crawl, "b")
    for i in range(20):
        assert a.admit(f"http://h{i % 4}.test/{i}")
    assert not b.admit("http://h0.test/0")  # one seen set for both
    got = [f.lease(0.0) for f in (a, b) for _ in range(5)]
    assert all(got) and len({g.url for g in got if g}) == 10
    for f, items in ((a, got[:5]), (b, got[5:])):
        for item in items:
            assert item is not None
            f.ack(item)
        f.sync()
    a.heartbeat()  # a call: a's counts are read again
    assert a.stats()["done"] == 10 and len(a) == 10
    node = redis.cluster.RedisCluster.from_url(cluster)
    keys = [k.decode() for k in node.scan_iter(match=f"mpc:{{{crawl}}}:*", target_nodes="all")]
    assert len(keys) > 10 and len({key_slot(k.encode()) for k in keys}) == 1
    a.close()
    b.close()
    node.close()


def test_two_nodes_crawl_through_a_cluster(tmp_path: Path, cluster: str) -> None:
    crawl = far_crawl()
    with serve_site(hosts=3, pages=20, latency=0.0) as site:
        args = [*site.args(), "--redis", cluster, "--crawl", crawl, "--workers", "1"]
        nodes = [Node(f"n{i}", tmp_path / f"n{i}", args) for i in range(2)]
        codes = [n.finish() for n in nodes]
        counts = site.fetch_counts()
    assert codes == [0, 0], [n.err for n in nodes]
    assert set(counts) == site.all_urls() and max(counts.values()) == 1
    assert sum(len(n.records()) for n in nodes) == 60


def pages_by_partition(site: Any, parts: int, pages: int) -> list[int]:
    """The pages each partition should have done: its hosts' (by CRC-32)."""
    done = [0] * parts
    for server in site.servers:
        done[partition_of(host_key(server.url + "/"), parts)] += pages
    return done


def test_a_partitioned_crawl_runs_on_every_server_of_a_cluster(
    tmp_path: Path, servers: RedisCluster, cluster: str
) -> None:
    """Three partitions, one on each server: two nodes fetch every page once,
    each server runs script calls of the crawl, and the crawl's keys sit in
    three slots, one a partition."""
    crawl = servers.spread_crawl(3)
    node = redis.cluster.RedisCluster.from_url(cluster)
    primaries = node.get_primaries()
    for server in primaries:
        node.config_resetstat(target_nodes=server)
    with serve_site(hosts=6, pages=20, latency=0.0) as site:
        args = [*site.args(), "--redis", cluster, "--crawl", crawl, "--workers", "1"]
        args += ["--redis-partitions", "3"]
        nodes = [Node(f"n{i}", tmp_path / f"n{i}", args) for i in range(2)]
        codes = [n.finish() for n in nodes]
        counts = site.fetch_counts()
    assert codes == [0, 0], [n.err for n in nodes]
    assert set(counts) == site.all_urls() and max(counts.values()) == 1
    assert sum(len(n.records()) for n in nodes) == 120
    done = [int(node.get(key_prefix(crawl, p) + "done") or 0) for p in range(3)]
    assert done == pages_by_partition(site, 3, 20), done  # each host's in its own partition
    calls = [
        node.info("commandstats", target_nodes=server).get("cmdstat_evalsha", {}).get("calls", 0)
        for server in primaries
    ]
    assert all(calls), calls
    keys = [
        k
        for p in range(3)
        for k in node.scan_iter(match=key_prefix(crawl, p) + "*", target_nodes="all")
    ]
    assert len({key_slot(k) for k in keys}) == 3
    node.close()
