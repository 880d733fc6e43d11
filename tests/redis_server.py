"""A real redis-server of the tests' own, on a free loopback port.

Started on first use and killed when the test process exits; nothing is
persisted (no RDB, no AOF).  Tests that restart Redis start their own.
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def url() -> str:
    """redis://127.0.0.1:PORT/0 of the running test server (started if need be)."""
    if "url" not in _server:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is missing: .ci/run installs Debian's package")
        port = _free_port()
        directory = tempfile.mkdtemp(prefix="redis-")
        proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                directory,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        atexit.register(proc.kill)
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.02)
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
