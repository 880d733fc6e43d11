"""Real redis-servers of the tests' own, on free loopback ports.

``url()`` is the shared one: started on first use and killed when the test
process exits; nothing is persisted (no RDB, no AOF).  ``start()`` starts
any other (with AOF, as a cluster node...) for the tests that kill or
restart theirs.
"""

from __future__ import annotations

import atexit
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

_server: dict[str, object] = {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith((b"+PONG", b"-NOAUTH"))  # up (maybe a password)
    except OSError:
        return False


def start(port: int, directory: str, *options: str) -> subprocess.Popen[bytes]:
    """redis-server on 127.0.0.1:``port``, its files in ``directory``, with
    more ``options``; returned once it answers PING (20 s at most)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is missing: .ci/run installs Debian's package")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory, *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while not _answers(port):
        assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
        time.sleep(0.02)
    return proc


def url() -> str:
    """redis://127.0.0.1:PORT/0 of the running test server (started if need be)."""
    if "url" not in _server:
        port = free_port()
        proc = start(port, tempfile.mkdtemp(prefix="redis-"), "--save", "", "--appendonly", "no")
        atexit.register(proc.kill)
        _server.update(url=f"redis://127.0.0.1:{port}/0", proc=proc)
    return str(_server["url"])


def forget(crawl: str) -> None:
    """Delete every key of ``crawl`` (they are all under its prefix)."""
    import redis

    client = redis.Redis.from_url(url())
    keys = list(client.scan_iter(match=f"mpc:{{{crawl}}}:*"))
    if keys:
        client.delete(*keys)
    client.close()
