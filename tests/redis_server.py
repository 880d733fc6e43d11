"""Real redis-servers of the tests' own, on free loopback ports.

``url()`` is the shared one: started on first use and killed when the test
process exits; nothing is persisted (no RDB, no AOF).  ``start()`` starts
any other (with AOF, as a cluster node...) for the tests that kill or
restart theirs.
"""

from __future__ import annotations

import atexit
import subprocess
import tempfile

import pytest

from mpcrawler.testing import redis
from mpcrawler.testing.redis import free_port

__all__ = ["forget", "free_port", "start", "url"]

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


def forget(crawl: str) -> None:
    """Delete every key of ``crawl`` (they are all under its prefix, or its
    partitions' ``mpc:{CRAWL/P}:``)."""
    import redis as redis_py

    client = redis_py.Redis.from_url(url())
    keys = list(client.scan_iter(match=f"mpc:{{{crawl}}}:*"))
    keys += client.scan_iter(match=f"mpc:{{{crawl}/*}}:*")
    if keys:
        client.delete(*keys)
    client.close()
