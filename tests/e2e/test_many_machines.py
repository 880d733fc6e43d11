"""One crawl on several nodes through a real Redis: each node is a real CLI
process with its own job dir, and the site is spread over loopback hosts.
What is checked comes from the servers' own logs: every page fetched once,
per-host limits held across nodes, nothing lost when a node or Redis dies."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

import pytest
import redis
import redis_server
from many_nodes import JITTER, Node, RedisProcess, serve_site, shared, wait_until
from support import run_cli

from mpcrawler.frontier.redis.client import key_prefix
from mpcrawler.frontier.redis.partitions import open_shared, partition_of
from mpcrawler.web.urls import host_key

DELAY = 0.1  # --delay of the politeness tests
# The crawl-wide guarantees, with the crawl's keys in one partition and in four.
PARTITIONS = pytest.mark.parametrize("parts", [1, 4])


@PARTITIONS
def test_three_nodes_share_one_crawl_politely(tmp_path: Path, crawl: str, parts: int) -> None:
    """Three nodes, six hosts at one request at a time and 100 ms apart:
    every page fetched exactly once, no host ever sees two requests at once
    or two starts closer than the delay, every node does some of the work,
    and all exit 0 once nothing is queued or leased anywhere."""
    with serve_site(hosts=6, pages=40) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl)]
        args += ["--host-concurrency", "1", "--delay", str(DELAY), "--redis-partitions", str(parts)]
        nodes = [Node(f"n{i}", tmp_path / f"n{i}", args) for i in range(3)]
        codes = [node.finish() for node in nodes]
        counts = site.fetch_counts()
        max_open, closest = site.max_open(), site.closest()
    assert codes == [0, 0, 0], [n.err for n in nodes]
    assert set(counts) == site.all_urls() and max(counts.values()) == 1
    assert max_open == 1
    assert closest[0] >= DELAY - JITTER, (closest, [n.err for n in nodes])
    records = {n.name: n.records() for n in nodes}
    assert all(records.values()), {k: len(v) for k, v in records.items()}  # every node busy
    assert sum(len(v) for v in records.values()) == 240
    assert all(r["node"] == name for name, rs in records.items() for r in rs)
    status = run_cli("status", "--redis", redis_server.url(), "--crawl", crawl, "--json")
    assert status.returncode == 0, status.stderr
    totals = json.loads(status.stdout)
    assert (totals["done"], totals["queued"], totals["leased"]) == (240, 0, 0)
    assert totals["partitions"] == parts
    client = redis.Redis.from_url(redis_server.url())
    by_part = [int(client.get(key_prefix(crawl, p) + "done") or 0) for p in range(parts)]
    client.close()
    expected = [0] * parts  # each host's pages in its own partition
    for server in site.servers:
        expected[partition_of(host_key(server.url + "/"), parts)] += 40
    assert by_part == expected
    rows = {row["node"]: row for row in totals["nodes"]}
    assert {name: row["pages"] for name, row in rows.items()} == {
        name: len(rs) for name, rs in records.items()
    }
    assert not any(row["alive"] or row["hosts_held"] for row in rows.values())  # all left
    table = run_cli("status", "--redis", redis_server.url(), "--crawl", crawl)
    assert table.returncode == 0 and "done           240" in table.stdout, table.stdout


@PARTITIONS
def test_max_pages_counts_across_nodes(tmp_path: Path, crawl: str, parts: int) -> None:
    with serve_site(hosts=4, pages=30, latency=0.0) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl), "--max-pages", "37"]
        args += ["--redis-partitions", str(parts)]
        nodes = [Node(f"n{i}", tmp_path / f"n{i}", args) for i in range(2)]
        codes = [node.finish() for node in nodes]
        fetched = sum(site.fetch_counts().values())
    assert codes == [0, 0], [n.err for n in nodes]
    assert sum(len(n.records()) for n in nodes) == 37 == fetched


@PARTITIONS
def test_the_host_budget_counts_across_nodes(tmp_path: Path, crawl: str, parts: int) -> None:
    with serve_site(hosts=4, pages=30, latency=0.0) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl), "--max-pages-per-host", "10"]
        args += ["--redis-partitions", str(parts)]
        nodes = [Node(f"n{i}", tmp_path / f"n{i}", args) for i in range(2)]
        codes = [node.finish() for node in nodes]
        per_host = [len([h for h in s.log.hits if h.path != "/robots.txt"]) for s in site.servers]
    assert codes == [0, 0], [n.err for n in nodes]
    assert per_host == [10, 10, 10, 10]
    assert sum(len(n.records()) for n in nodes) == 40


@PARTITIONS
def test_a_killed_node_loses_nothing(tmp_path: Path, crawl: str, parts: int) -> None:
    """SIGKILL one of two nodes mid-crawl and delete its job dir: the other
    takes over its hosts and leases once its heartbeat runs out, finishes the
    crawl with every page fetched, and refetches at most what the dead node
    had in flight."""
    with serve_site(hosts=4, pages=60) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl, "--lease-timeout", "2")]
        args += ["--host-concurrency", "1", "--delay", "0.05", "--redis-partitions", str(parts)]
        site.gate.clear()  # no page before both have joined: the crawl cannot end first
        doomed = Node("doomed", tmp_path / "doomed", args)
        survivor = Node("survivor", tmp_path / "survivor", args)
        wait_until(lambda: len(alive_nodes(redis_server.url(), crawl)) == 2, what="both joined")
        site.gate.set()
        wait_until(lambda: len(doomed.records()) >= 5, what="the first node's records")
        wait_until(lambda: len(survivor.records()) >= 3, what="the second node's records")
        # Held still while it holds work (a node between two leases, or one
        # that acks after a look at its leases, proves nothing), then killed.
        doomed.stop_holding(lambda: leases_of(crawl, "doomed", parts) >= 1)
        in_flight = leases_of(crawl, "doomed", parts)  # what it held at its death
        doomed.kill()
        killed_at = time.monotonic()
        shutil.rmtree(doomed.job)
        assert survivor.finish() == 0, survivor.err
        took = time.monotonic() - killed_at
        counts = site.fetch_counts()
    assert set(counts) == site.all_urls()
    duplicates = sum(n - 1 for n in counts.values())
    assert in_flight >= 1  # it died holding work
    assert duplicates <= in_flight, counts.most_common(5)
    print(f"done {took:.1f} s after the kill; {duplicates} of {in_flight} leases refetched")


def alive_nodes(url: str, crawl: str) -> list[str]:
    """The nodes whose heartbeat Redis holds now."""
    from mpcrawler.control.shared import live_nodes

    client = redis.Redis.from_url(url)
    try:
        return live_nodes(client, key_prefix(crawl))
    finally:
        client.close()


def leases_of(crawl: str, node: str, parts: int = 1) -> int:
    """The URLs leased to ``node`` and not acked, as Redis has them."""
    client = redis.Redis.from_url(redis_server.url())
    leased = [raw for p in range(parts) for raw in client.hvals(key_prefix(crawl, p) + "leased")]
    client.close()
    return sum(1 for raw in leased if json.loads(raw)[2] == node)


def test_a_stopped_node_hands_its_work_over_at_once(tmp_path: Path, crawl: str) -> None:
    """SIGTERM gives a node's leases and hosts back at once: with a lease
    timeout of 10 minutes, the other node still finishes everything."""
    with serve_site(hosts=4, pages=30) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl, "--lease-timeout", "600")]
        args += ["--host-concurrency", "1", "--delay", "0.03"]
        site.gate.clear()  # no page before both have joined: one alone could crawl it all
        leaving = Node("leaving", tmp_path / "leaving", args)
        staying = Node("staying", tmp_path / "staying", args)
        wait_until(lambda: len(alive_nodes(redis_server.url(), crawl)) == 2, what="both nodes")
        site.gate.set()
        wait_until(lambda: len(leaving.records()) >= 5 and len(staying.records()) >= 5)
        leaving.proc.send_signal(signal.SIGTERM)
        assert leaving.finish() == 130, leaving.err
        assert staying.finish(timeout=60) == 0, staying.err
        counts = site.fetch_counts()
    assert set(counts) == site.all_urls() and max(counts.values()) == 1
    urls = [r["url"] for n in (leaving, staying) for r in n.records()]
    assert sorted(urls) == sorted(site.all_urls())


def test_the_delay_holds_across_a_hand_over(tmp_path: Path, crawl: str) -> None:
    """One host, --delay 0.5, no robots.txt to fetch first: when its owner
    stops, the other node takes the host over only once the owner's delay
    has run out, so no two requests to it start closer than the delay."""
    with serve_site(hosts=1, pages=8, latency=0.0) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl), "--no-robots"]
        args += ["--host-concurrency", "1", "--delay", "0.5"]
        owner = Node("owner", tmp_path / "owner", args)
        wait_until(lambda: len(owner.records()) >= 2, what="the owner's records")
        heir = Node("heir", tmp_path / "heir", args)
        hits = site.servers[0].log.hits
        seen = len(hits)
        wait_until(lambda: len(hits) > seen, what="the owner's next request")
        owner.proc.send_signal(signal.SIGTERM)  # just after a start: its delay has just begun
        assert owner.finish() == 130, owner.err
        assert heir.finish() == 0, heir.err
        counts, min_gap = site.fetch_counts(), site.min_gap()
    assert set(counts) == site.all_urls() and max(counts.values()) == 1
    assert heir.records()  # the host did change hands
    assert min_gap >= 0.5 - JITTER, min_gap


@PARTITIONS
def test_a_joining_node_takes_a_share_of_the_hosts(tmp_path: Path, crawl: str, parts: int) -> None:
    """A second node started mid-crawl is given hosts the first one held
    (the first sheds down to its fair share), and politeness holds across
    the hand-over."""
    with serve_site(hosts=4, pages=40) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl)]
        args += ["--host-concurrency", "1", "--delay", str(DELAY), "--redis-partitions", str(parts)]
        first = Node("first", tmp_path / "first", args)
        wait_until(lambda: len(first.records()) >= 12, what="the first node's records")
        # Pages held while the second starts, however slowly: the first cannot
        # crawl on to the end before there is anyone to shed hosts to.
        site.gate.clear()
        second = Node("second", tmp_path / "second", args)
        wait_until(lambda: len(alive_nodes(redis_server.url(), crawl)) == 2, what="both nodes")
        site.gate.set()
        assert first.finish() == 0 and second.finish() == 0, first.err + second.err
        counts = site.fetch_counts()
        max_open, min_gap = site.max_open(), site.min_gap()
    assert set(counts) == site.all_urls() and max(counts.values()) == 1
    assert max_open == 1 and min_gap >= DELAY - JITTER, min_gap
    hosts_of = {
        name: {r["url"].split("/p")[0] for r in node.records()}
        for name, node in (("first", first), ("second", second))
    }
    assert len(hosts_of["second"]) >= 1 and len(second.records()) >= 10, hosts_of


def test_redis_killed_and_restarted_mid_crawl(tmp_path: Path, crawl: str) -> None:
    """Redis (AOF, fsync always) is killed mid-crawl: the nodes say so once,
    pause, and when it is back finish with every page recorded once."""
    server = RedisProcess()
    try:
        with serve_site(hosts=4, pages=30) as site:
            args = [*site.args(), *shared(server.url, crawl), "--delay", "0.03"]
            # Both nodes in the crawl before Redis dies (a node still starting
            # would rightly exit on its start-up's error), and the crawl not
            # over: the pages wait until both have joined.
            site.gate.clear()
            nodes = [Node(f"n{i}", tmp_path / f"n{i}", args) for i in range(2)]
            wait_until(lambda: len(alive_nodes(server.url, crawl)) == 2, what="both nodes joined")
            site.gate.set()
            wait_until(lambda: sum(len(n.records()) for n in nodes) >= 20)
            server.kill()
            for node in nodes:
                node.lines.wait_for(lambda out, err: "unreachable" in "".join(err), timeout=60)
            server.start()
            codes = [node.finish() for node in nodes]
            counts = site.fetch_counts()
    finally:
        server.close()
    assert codes == [0, 0], [n.err for n in nodes]
    assert set(counts) == site.all_urls()
    urls = [r["url"] for n in nodes for r in n.records()]
    assert set(urls) == site.all_urls()
    assert all(n.err.count("unreachable") == 1 for n in nodes), [n.err for n in nodes]


def test_redis_gone_for_longer_than_the_timeout(tmp_path: Path, crawl: str) -> None:
    """After --redis-timeout the node exits 1 and the job stays resumable:
    rerun once Redis is back, it finishes the crawl."""
    server = RedisProcess()
    try:
        with serve_site(hosts=2, pages=30) as site:
            args = [*site.args(), *shared(server.url, crawl), "--delay", "0.05"]
            node = Node("n", tmp_path / "n", [*args, "--redis-timeout", "1"])
            wait_until(lambda: len(node.records()) >= 5)
            server.kill()
            assert node.finish() == 1
            assert "unreachable for 1 s" in node.err, node.err
            server.start()
            again = Node("n", tmp_path / "n", args)
            assert again.finish() == 0, again.err
            counts = site.fetch_counts()
            urls = {r["url"] for r in again.records()}
    finally:
        server.close()
    assert set(counts) == site.all_urls() == urls


@pytest.mark.parametrize("given", [1, 2])
def test_a_node_with_another_partition_count_is_refused(
    tmp_path: Path, crawl: str, given: int
) -> None:
    """The hosts would map to other partitions: exit 2, one line, nothing written."""
    open_shared(redis_server.url(), crawl, "first", partitions=4).close()
    job = tmp_path / "job"
    proc = run_cli(
        *("crawl", "http://127.0.0.1:9/", *shared(redis_server.url(), crawl)),
        *("--redis-partitions", str(given), "--job-dir", str(job), "--quiet"),
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"mpcrawler: error: crawl {crawl!r} is split into 4 partition(s), not {given}: "
        "give every node --redis-partitions 4"
    ]
    assert not job.exists()


def test_unreachable_redis_at_start_writes_nothing(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{redis_server.free_port()}/0"
    proc = run_cli(
        "crawl",
        "http://127.0.0.1:9/",
        "--redis",
        url,
        "--crawl",
        "x",
        "--job-dir",
        str(tmp_path / "job"),
        "--quiet",
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"mpcrawler: error: cannot reach Redis at {url}: "
        + proc.stderr.split(f"cannot reach Redis at {url}: ", 1)[1].strip()
    ]
    assert not (tmp_path / "job").exists()


def test_redis_and_crawl_go_together(tmp_path: Path) -> None:
    proc = run_cli("crawl", "http://127.0.0.1:9/", "--redis", "redis://127.0.0.1:1/0")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "mpcrawler: error: --redis and --crawl go together: --redis URL --crawl NAME"
    )


def test_status_of_an_unknown_crawl(crawl: str) -> None:
    proc = run_cli("status", "--redis", redis_server.url(), "--crawl", crawl)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"mpcrawler: error: no crawl {crawl!r} on {redis_server.url()}"
    client = redis.Redis.from_url(redis_server.url())
    assert not list(client.scan_iter(match=f"*{crawl}*"))  # status wrote nothing
