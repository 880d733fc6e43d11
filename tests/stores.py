"""The real stores the sink tests write to: PostgreSQL and an S3 server.

``pg_database()`` gives a fresh database on this machine's PostgreSQL
server (``MPCRAWLER_TEST_PG``, default postgresql://postgres@127.0.0.1:5432),
started with ``pg_ctlcluster`` when it is installed but not running; a
test is skipped, with the reason, only where PostgreSQL is not installed
at all.  ``s3_server()`` is moto's S3 server on a free loopback port, with
the credentials boto3 needs in the environment.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpcrawler.testing.redis import free_port

__all__ = ["pg_database", "s3_server"]

PG = os.environ.get("MPCRAWLER_TEST_PG", "postgresql://postgres@127.0.0.1:5432")


def _pg_running() -> bool:
    import psycopg

    try:
        psycopg.connect(f"{PG}/postgres", connect_timeout=3).close()
    except psycopg.OperationalError:
        return False
    return True


def _start_pg() -> None:
    """Start the installed cluster(s); skip if PostgreSQL is not installed."""
    if shutil.which("pg_ctlcluster") is None or not Path("/etc/postgresql").is_dir():
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    for version in sorted(os.listdir("/etc/postgresql")):
        for cluster in sorted(os.listdir(f"/etc/postgresql/{version}")):
            subprocess.run(
                ["pg_ctlcluster", version, cluster, "start"], capture_output=True, timeout=60
            )


@contextlib.contextmanager
def pg_database() -> Iterator[str]:
    """The URL of a new, empty database; dropped afterwards."""
    import psycopg

    if not _pg_running():
        _start_pg()
        if not _pg_running():
            pytest.fail(f"PostgreSQL is installed but {PG} cannot be reached")
    name = f"mpc_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{PG}/{name}"
    finally:
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """moto's S3 server on loopback: its endpoint URL.  The environment
    holds its (made-up) credentials and region meanwhile."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    keys = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    before = {k: os.environ.get(k) for k in keys}
    os.environ.update(keys)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
