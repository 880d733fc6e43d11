"""Real redis-servers of the tests' own, on free loopback ports.

``url()`` is the shared one: started on first use and killed when the test
process exits; nothing is persisted (no RDB, no AOF).  ``cluster_url()`` is
a shared three-server Redis Cluster, the same way.  ``start()`` starts
any other (with AOF, as a cluster node...) for the tests that kill or
restart theirs.
"""

from __future__ import annotations

import atexit
import subprocess
import tempfile
from typing import Any

import pytest

from mpcrawler.testing import redis
from mpcrawler.testing.redis import free_port

__all__ = ["client", "cluster_url", "forget", "free_port", "start", "url"]

_server: dict[str, object] = {}


def start(port: int, directory: str, *options: str) -> subprocess.Popen[bytes]:
    """redis-server on 127.0.0.1:``port`` (see mpcrawler.testing.redis.start);
    a test fails, not errors, if it cannot start."""
    try:
        return redis.start(port, directory, *options)
    except RuntimeError as exc:
        pytest.fail(f"{exc}: .ci/run installs Debian's package")


def url() -> str:
    """redis://127.0.0.1:PORT/0 of the running test server (started if need be)."""
    if "url" not in _server:
        port = free_port()
        proc = start(port, tempfile.mkdtemp(prefix="redis-"), "--save", "", "--appendonly", "no")
        atexit.register(proc.kill)
        _server.update(url=f"redis://127.0.0.1:{port}/0", proc=proc)
    return str(_server["url"])


def cluster_url() -> str:
    """redis://127.0.0.1:PORT/0 of a node of the test cluster (started if need be)."""
    if "cluster" not in _server:
        try:
            cluster = redis.RedisCluster(3)
        except RuntimeError as exc:
            pytest.fail(f"{exc}: .ci/run installs Debian's redis-server")
        atexit.register(cluster.close)
        _server["cluster"] = cluster
    return str(_server["cluster"].url)  # type: ignore[attr-defined]


def client(where: str) -> Any:
    """A redis-py client for ``where`` (a cluster client for the cluster)."""
    from mpcrawler.frontier.redis.client import connect

    return connect(where)


def forget(crawl: str) -> None:
    """Delete every key of ``crawl`` on the shared server and the cluster
    (they are all under its prefix, or its partitions' ``mpc:{CRAWL/P}:``)."""
    from redis.cluster import RedisCluster as ClusterClient

    servers = [url()] + ([cluster_url()] if "cluster" in _server else [])
    for where in servers:
        node = client(where)
        cluster = isinstance(node, ClusterClient)
        options = {"target_nodes": "all"} if cluster else {}
        keys = [
            key
            for match in (f"mpc:{{{crawl}}}:*", f"mpc:{{{crawl}/*}}:*")
            for key in node.scan_iter(match=match, **options)
        ]
        if cluster:
            for key in keys:  # a cluster deletes no keys of two slots in one call
                node.delete(key)
        elif keys:
            node.delete(*keys)
        node.close()
