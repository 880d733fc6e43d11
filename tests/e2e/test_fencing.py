"""A shared crawl's promises at its edges, with real node processes and a
real redis-server: a node paused past its lease acts on nothing that has
passed to another node, one node id is one live process, and a crawl whose
state Redis lost stops every node with an error instead of ending quietly.
What is checked comes from the servers' own logs."""

from __future__ import annotations

import itertools
import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
import redis
import redis_server
from many_nodes import JITTER, Node, RedisProcess, serve_site, shared, wait_until
from support import read_records, run_cli

from mpcrawler.frontier.redis.client import key_prefix

DELAY = 0.1


@pytest.mark.parametrize("parts", [1, 4])
def test_a_node_paused_past_its_lease_acts_on_nothing_that_passed_on(
    tmp_path: Path, crawl: str, parts: int
) -> None:
    """SIGSTOP a node (master and workers) until the other node has declared
    it dead and taken its work over, then SIGCONT it: from then on it fetches
    nothing the other node fetched, no host sees two requests at once or two
    starts closer than the delay, and the crawl ends with every page."""
    with serve_site(hosts=4, pages=60) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl, "--lease-timeout", "2")]
        # The default host concurrency: many requests wait for their turn at a
        # host, leased, while the node is paused.
        args += ["--delay", str(DELAY), "--redis-partitions", str(parts)]
        paused = Node("paused", tmp_path / "paused", args)
        other = Node("other", tmp_path / "other", args)
        wait_until(lambda: len(paused.records()) >= 3 and len(other.records()) >= 3)
        os.killpg(paused.proc.pid, signal.SIGSTOP)
        client = redis.Redis.from_url(redis_server.url())
        epochs = [key_prefix(crawl, p) + "epoch" for p in range(parts)]
        wait_until(
            lambda: not any(client.hexists(key, "paused") for key in epochs),
            what="the node declared dead in every partition",
        )
        taken_over = len(other.records())
        wait_until(lambda: len(other.records()) >= taken_over + 10, what="the other's next pages")
        resumed_at = time.monotonic()
        os.killpg(paused.proc.pid, signal.SIGCONT)
        client.close()
        codes = [paused.finish(), other.finish()]
        hits = [h for s in site.servers for h in s.log.hits if h.path != "/robots.txt"]
        urls = {id(h): f"{s.url}{h.path}" for s in site.servers for h in s.log.hits}
        counts = site.fetch_counts()
        # Politeness between the two nodes: where one node's request follows
        # the other's at a host, it starts once that one has ended and the
        # delay has passed.  (One node's own spacing is the scheduler's, and
        # tested elsewhere; on a loaded machine the server itself may take
        # longer than the delay to answer, so its own requests may overlap.)
        handovers = [
            (b.start - a.start, b.start - a.end, s.url)
            for s in site.servers
            for a, b in itertools.pairwise(
                sorted((h for h in s.log.hits if h.path != "/robots.txt"), key=lambda h: h.start)
            )
            if a.agent != b.agent
        ]
    assert codes == [0, 0], [paused.err, other.err]
    assert set(counts) == site.all_urls()  # nothing missing
    by_other = {urls[id(h)] for h in hits if h.agent == other.agent}
    late = {urls[id(h)] for h in hits if h.agent == paused.agent and h.start > resumed_at}
    assert not late & by_other, sorted(late & by_other)
    # A page fetched twice was in flight when the node stopped: fetched by it before.
    early = Counter(urls[id(h)] for h in hits if h.agent == paused.agent and h.start < resumed_at)
    twice = {url for url, n in counts.items() if n > 1}
    assert twice <= set(early), sorted(twice - set(early))
    assert handovers  # the hosts did change hands
    closest = min(handovers)
    assert closest[0] >= DELAY - JITTER, closest  # the delay holds across nodes
    assert min(after for _, after, _ in handovers) >= 0, handovers  # never two at once
    assert "declared dead" in paused.err, paused.err
    status = run_cli("status", "--redis", redis_server.url(), "--crawl", crawl, "--json")
    totals = json.loads(status.stdout)
    records = len(paused.records()) + len(other.records())
    assert totals["done"] <= totals["seen"]
    assert totals["done"] + totals["late"] == records
    print(f"twice {len(twice)}, closest hand-over {closest[0]:.3f} s, late {totals['late']}")


def test_one_node_id_is_one_live_process(tmp_path: Path, crawl: str) -> None:
    """A second process started with the --node of a live node exits 2 with
    one line, writing nothing; the first finishes the crawl alone."""
    with serve_site(hosts=2, pages=30) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl, "--delay", "0.05")]
        first = Node("twin", tmp_path / "first", args)
        wait_until(lambda: len(first.records()) >= 3, what="the first node's records")
        site.gate.clear()  # the first cannot finish (and leave) before the second has tried
        second = Node("twin", tmp_path / "second", args)
        try:
            assert second.finish() == 2
        finally:
            site.gate.set()
        assert first.finish() == 0, first.err
        counts = site.fetch_counts()
    lines = second.err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"mpcrawler: error: node twin is already running in crawl {crawl} (last heartbeat "
    ), lines
    assert not (tmp_path / "second").exists()
    assert set(counts) == site.all_urls() and max(counts.values()) == 1
    assert {r["url"] for r in first.records()} == site.all_urls()


def test_redis_restarted_without_its_data_stops_every_node(tmp_path: Path, crawl: str) -> None:
    """Redis without persistence is restarted mid-crawl, empty: every node
    stops with exit 1 and one line saying the crawl's state was lost, status
    --redis says the same, and a rerun of a node is refused the same way."""
    server = RedisProcess(persist=False)
    try:
        with serve_site(hosts=4, pages=60) as site:
            args = [*site.args(), *shared(server.url, crawl, "--delay", "0.05")]
            nodes = [Node(f"n{i}", tmp_path / f"n{i}", args) for i in range(2)]
            wait_until(lambda: all(len(n.records()) >= 3 for n in nodes))
            server.kill()
            server.start()
            codes = [node.finish() for node in nodes]
            status = run_cli("status", "--redis", server.url, "--crawl", crawl)
            again = Node("n0", tmp_path / "n0", args)
            assert again.finish() == 1
    finally:
        server.close()
    assert codes == [1, 1], [n.err for n in nodes]
    for node in [*nodes, again]:
        errors = [line for line in node.err.splitlines() if line.startswith("mpcrawler: error")]
        assert len(errors) == 1 and "was lost" in errors[0], node.err
        assert "new --crawl name" in errors[0]
    assert status.returncode == 1 and "was lost" in status.stderr, status
    job = json.loads((tmp_path / "n0" / "job.json").read_text())
    assert job["job"]["state"] == "failed" and "was lost" in job["job"]["message"]


def test_reset_deletes_a_crawl_but_not_a_live_one(crawl: str) -> None:
    from mpcrawler.frontier.redis.frontier import RedisFrontier

    node = RedisFrontier(redis_server.url(), crawl, "live")
    node.admit("http://h.test/")
    refused = run_cli("reset", "--redis", redis_server.url(), "--crawl", crawl)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"mpcrawler: error: crawl {crawl!r} has live nodes (live); stop them first"
    )
    node.close()
    done = run_cli("reset", "--redis", redis_server.url(), "--crawl", crawl)
    assert done.returncode == 0, done.stderr
    client = redis.Redis.from_url(redis_server.url())
    assert not list(client.scan_iter(match=f"*{crawl}*"))
    client.close()


def test_a_redis_password_reaches_no_output(tmp_path: Path, crawl: str) -> None:
    """A crawl through a Redis with a password, given by REDIS_URL or in
    --redis: the password is in no file of the job dir, no log line, no
    report, no status and no error line (it reads ``***``)."""
    secret = "s3cret-Pa55"
    port = redis_server.free_port()
    proc = redis_server.start(port, str(tmp_path), "--save", "", "--requirepass", secret)
    url = f"redis://:{secret}@127.0.0.1:{port}/0"
    outputs: list[str] = []
    try:
        with serve_site(hosts=1, pages=10) as site:
            job = tmp_path / "job"
            log = tmp_path / "crawl.log"
            env = {"REDIS_URL": url}
            done = run_cli(
                *("crawl", *site.args(), "--crawl", crawl, "--job-dir", str(job), "--quiet"),
                *("--log-file", str(log)),
                env=env,
            )
            assert done.returncode == 0, done.stderr
            assert len(read_records(job / "pages.jsonl")) == 10
            report = run_cli("report", str(job))
            outputs += [done.stdout, done.stderr, report.stdout, report.stderr]
            outputs += [p.read_text(errors="replace") for p in job.rglob("*") if p.is_file()]
            outputs.append(log.read_text())
            outputs.append(run_cli("status", str(job)).stdout)
            outputs.append(run_cli("status", "--crawl", crawl, "--json", env=env).stdout)
            assert "***" in (job / "job.json").read_text()
    finally:
        proc.kill()
        proc.wait()
    gone = run_cli("status", "--redis", url, "--crawl", crawl)  # unreachable now
    down = run_cli("crawl", "http://127.0.0.1:9/", "--redis", url, "--crawl", crawl)
    assert gone.returncode == 1 and down.returncode == 1
    outputs += [gone.stderr, down.stderr]
    assert f"redis://:***@127.0.0.1:{port}/0" in down.stderr, down.stderr
    leaks = [text for text in outputs if secret in text]
    assert not leaks, leaks[0][:500]


@pytest.mark.parametrize("given", ["", ":wrong@"])
def test_a_refused_redis_password_is_a_usage_error(tmp_path: Path, given: str) -> None:
    port = redis_server.free_port()
    proc = redis_server.start(port, str(tmp_path), "--save", "", "--requirepass", "right")
    try:
        url = f"redis://{given}127.0.0.1:{port}/0"
        done = run_cli("crawl", "http://127.0.0.1:9/", "--redis", url, "--crawl", "x")
    finally:
        proc.kill()
        proc.wait()
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused the connection with" in lines[0], lines
    assert "wrong" not in lines[0]
