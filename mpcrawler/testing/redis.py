"""A redis-server of its own, on a free loopback port, for tests and benchmarks.

``start`` runs Debian's ``redis-server`` (``apt-get install redis-server``)
with its files in a directory of the caller's, and returns once it answers
PING.  ``RedisServer`` wraps one that may be killed and started again on
the same port (persisted with AOF, ``appendfsync always``, unless
``persist`` is False).  ``RedisCluster`` is a Redis Cluster of three (or
more) such servers, the 16,384 slots split evenly.  Nothing here is used by
a crawl.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time

__all__ = ["RedisCluster", "RedisServer", "answers", "cluster_port", "free_port", "start"]

SLOTS = 16384


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


def cluster_port() -> int:
    """A free port P whose cluster bus port P + 10000 is free too (P <= 55535)."""
    rng = random.Random()
    while True:
        port = rng.randrange(20_000, 45_000)
        try:
            for p in (port, port + 10_000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port


class RedisCluster:
    """``servers`` redis-servers in cluster mode (no persistence), each
    serving an even range of the slots (``ranges``); ``url`` reaches the
    first.  RuntimeError if a server does not start or the cluster is not
    ``ok`` within ``wait`` seconds."""

    def __init__(self, servers: int = 3, wait: float = 30.0) -> None:
        import redis as redis_py

        self.dir = tempfile.mkdtemp(prefix="mpcrawler-cluster-")
        self.ports = [cluster_port() for _ in range(servers)]
        step = SLOTS // servers
        self.ranges = [
            (k * step, SLOTS - 1 if k == servers - 1 else (k + 1) * step - 1)
            for k in range(servers)
        ]
        self.procs: list[subprocess.Popen[bytes]] = []
        try:
            for port in self.ports:
                options = (
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    f"nodes-{port}.conf",
                )
                self.procs.append(
                    start(port, self.dir, *options, "--save", "", "--appendonly", "no")
                )
            clients = [redis_py.Redis(port=port) for port in self.ports]
            for client, (low, high) in zip(clients, self.ranges, strict=True):
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
            for port in self.ports[1:]:
                clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", port)
            deadline = time.monotonic() + wait
            while not all(c.cluster("info")["cluster_state"] == "ok" for c in clients):
                if time.monotonic() > deadline:
                    raise RuntimeError("the Redis Cluster did not come up (cluster_state)")
                time.sleep(0.05)
            for client in clients:
                client.close()
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def server_of(self, slot: int) -> int:
        """Which server (0, 1, ...) serves ``slot``."""
        return next(k for k, (low, high) in enumerate(self.ranges) if low <= slot <= high)

    def spread_crawl(self, parts: int) -> str:
        """A new crawl name whose ``parts`` partitions fall on as many servers
        as they can (each on its own, if there are that many)."""
        import uuid

        from redis.crc import key_slot

        from ..frontier.redis.client import key_prefix

        while True:
            crawl = f"c-{uuid.uuid4().hex[:8]}"
            slots = [key_slot((key_prefix(crawl, p) + "seq").encode()) for p in range(parts)]
            if len({self.server_of(slot) for slot in slots}) == min(parts, len(self.ports)):
                return crawl

    def close(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
