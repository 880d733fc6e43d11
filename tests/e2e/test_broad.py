"""A broad crawl over 600 hosts (one server answering for every 127.X.Y.Z):
the master's host state stays bounded by what is busy, not by what it has
seen, and a host parked out of memory is not asked for its robots.txt again."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

from support import run_cli

from mpcrawler.testing.broad import host_of, serving_broad

HOSTS = 600  # twelve times the hosts kept in memory
PAGES = 2 * HOSTS  # page i on host i % HOSTS: each host comes back, long after its first
IDLE_IN_MEMORY = 50


def test_a_broad_crawl_keeps_only_busy_hosts_in_memory(tmp_path: Path) -> None:
    job = tmp_path / "job"
    with serving_broad(HOSTS, PAGES) as server:
        result = run_cli(
            *("crawl", server.url(0), "--job-dir", str(job), "--quiet"),
            *("--scope", "any", "--allow-private-networks", "--workers", "2", "--threads", "8"),
            *("--max-active-hosts", str(IDLE_IN_MEMORY)),
        )
        hits = dict(server.hits)
    assert result.returncode == 0, result.stderr
    stats = json.loads((job / "stats.json").read_text())
    assert stats["pages"] == PAGES and stats["errors"] == 0
    # Seen from the server: every page once, every robots.txt once.
    pages = {(host_of(i % HOSTS), f"/p/{i}") for i in range(PAGES)}
    robots = {(host_of(i), "/robots.txt") for i in range(HOSTS)}
    assert set(hits) == pages | robots
    assert set(hits.values()) == {1}, [k for k, n in hits.items() if n > 1][:5]
    # Nothing is busy at the end: only the idle hosts the cap allows are in memory.
    hosts = stats["hosts"]
    assert hosts["in_memory"] <= IDLE_IN_MEMORY and hosts["groups_in_memory"] <= IDLE_IN_MEMORY
    assert hosts["in_memory"] + hosts["parked"] == HOSTS
    assert stats["frontier"]["hosts_queued"] == 0
    # The per-host budget's counts (--scope any: 10,000 a host) are in their
    # own file, not rewritten whole into job.json at every checkpoint.
    assert json.loads((job / "job.json").read_text())["job"]["host_pages"] == {}
    with contextlib.closing(sqlite3.connect(job / "host-pages.db")) as db:
        assert db.execute("SELECT COUNT(*), SUM(queued) FROM host_pages").fetchone() == (
            HOSTS,
            PAGES,
        )


def test_a_worker_reuses_connections_across_many_hosts(tmp_path: Path) -> None:
    """A worker's slots share their connections, kept for many hosts: a
    host's next page reuses one whichever slot fetches it.  (Each slot kept
    its own for 10 hosts: 60 hosts took a new connection for most requests.)"""
    hosts, threads = 60, 4
    with serving_broad(hosts, 5 * hosts) as server:
        result = run_cli(
            *("crawl", server.url(0), "--job-dir", str(tmp_path / "job"), "--quiet"),
            *("--scope", "any", "--allow-private-networks", "--workers", "1"),
            *("--threads", str(threads)),
        )
        requests, connections = server.requests, server.connections
    assert result.returncode == 0, result.stderr
    assert requests == 6 * hosts  # 5 pages and a robots.txt a host
    # At most one connection per slot and host, and far fewer in practice.
    assert connections <= hosts * threads, (connections, requests)
