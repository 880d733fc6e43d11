"""A redis-server of its own, on a free loopback port, for tests and benchmarks.

``start`` runs Debian's ``redis-server`` (``apt-get install redis-server``)
with its files in a directory of the caller's, and returns once it answers
PING.  ``RedisServer`` wraps one that may be killed and started again on
the same port (persisted with AOF, ``appendfsync always``, unless
``persist`` is False).  Nothing here is used by a crawl.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time

__all__ = ["RedisServer", "answers", "free_port", "start"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(port: int) -> bool:
    """Something on 127.0.0.1:``port`` answers PING as Redis does (maybe
    asking for a password)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


def start(port: int, directory: str, *options: str, wait: float = 20.0) -> subprocess.Popen[bytes]:
    """redis-server on 127.0.0.1:``port``, its files in ``directory``, with
    more ``options``; returned once it answers PING (RuntimeError if it is
    missing or does not within ``wait`` seconds)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is missing (apt-get install redis-server)")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory, *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + wait
    while not answers(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"redis-server did not start on port {port}")
        time.sleep(0.02)
    return proc


class RedisServer:
    """A redis-server on a free port that the caller may kill and start again."""

    def __init__(self, persist: bool = True) -> None:
        self.persist = persist
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="mpcrawler-redis-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        aof = ("--appendonly", "yes", "--appendfsync", "always") if self.persist else ()
        self.proc = start(self.port, self.dir, "--save", "", *aof)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
