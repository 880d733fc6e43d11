"""control --redis URL --crawl NAME on a crawl shared by several nodes:
every command reaches every live node, each answers, and a node that
joins later applies what was sent before it (issue 26).  Seen from the
servers' logs (each node has its own User-Agent).  Six hosts for three
nodes: each node's fair share is two, so the node that joins gets hosts."""

from __future__ import annotations

import json
import re
import signal
import time
import urllib.request
from pathlib import Path

import redis_server
from hostile import Hit, links, serve
from many_nodes import Node, serve_site, shared, wait_until
from support import Lines, assert_paced, run_cli, scrape, start_cli

from mpcrawler.testing.redis import free_port

SEVENS = r"/p[0-9]*7$"  # a tenth of the pages: the rest keeps the crawl going


def control(crawl: str, *args: str) -> dict[str, str]:
    """Send a command to every node; each node's answer."""
    where = ("--redis", redis_server.url(), "--crawl", crawl)
    proc = run_cli("control", *where, *args, "--wait", "20")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answers = {}
    for line in proc.stdout.splitlines():
        _, node, answer = line.split(": ", 2)
        answers[node] = answer
    return answers


def test_every_node_applies_every_command(tmp_path: Path, crawl: str) -> None:
    added_site = {"/": lambda h, n: links("/b1")}
    with (
        serve_site(hosts=6, pages=300, latency=0.05) as site,
        serve(added_site, default=lambda h, n: links(), host="127.0.0.20") as extra,
    ):

        def all_hits() -> list[Hit]:
            return [hit for server in site.servers for hit in server.log.hits]

        args = [*site.args(), *shared(redis_server.url(), crawl)]
        nodes = [Node(f"n{i}", tmp_path / f"n{i}", args) for i in range(2)]
        agents = {node.agent: node.name for node in nodes}
        wait_until(
            lambda: {agents.get(h.agent) for h in all_hits()} >= {"n0", "n1"}, 60, "both working"
        )

        assert control(crawl, "pause") == {"n0": "applied", "n1": "applied"}
        paused_at = time.monotonic()
        time_out = time.monotonic() + 2.0
        while time.monotonic() < time_out:  # nothing starts while paused (bounded watch)
            assert not [h for h in all_hits() if h.start > paused_at]
            time.sleep(0.05)
        status = json.loads(
            run_cli("status", "--redis", redis_server.url(), "--crawl", crawl, "--json").stdout
        )
        assert status["commands"][-1]["answers"] == {"n0": "applied", "n1": "applied"}

        excluded = control(crawl, "exclude", SEVENS)
        excluded_at = time.monotonic()
        assert set(excluded) == {"n0", "n1"}
        dropped = sum(int(re.search(r"(\d+) queued", a)[1]) for a in excluded.values())

        late = Node("n2", tmp_path / "n2", args)  # joins paused, with the exclusion
        wait_until(lambda: b'"n2"' in _nodes_alive(crawl), 60, "n2 joined")
        assert control(crawl, "resume") == {n: "applied" for n in ("n0", "n1", "n2")}
        resumed_at = time.monotonic()
        wait_until(
            lambda: (
                {agents.get(h.agent, "n2") for h in all_hits() if h.start > resumed_at}
                >= {"n0", "n1", "n2"}
            ),
            60,
            f"every node fetching again: {_seen_since(all_hits(), resumed_at, agents)}",
        )
        everyone = ("n0", "n1", "n2")
        assert control(crawl, "set", "delay=0.2") == dict.fromkeys(everyone, "applied")
        set_at = time.monotonic()
        added = control(crawl, "add-seeds", extra.url + "/", "--priority", "5")
        assert sorted(added.values()) == [
            "applied: 0 queued, 1 seen before",
            "applied: 0 queued, 1 seen before",
            "applied: 1 queued, 0 seen before",
        ]  # one node queues it for the crawl; each takes its host into its scope
        wait_until(
            lambda: extra.log.counts()["/b1"] == 1,
            30,
            f"the added host's link followed: {[(h.path, h.agent) for h in extra.log.hits]}",
        )
        wait_until(lambda: len([h for h in all_hits() if h.start > set_at]) >= 20, 60, "paced")
        assert control(crawl, "stop") == dict.fromkeys(everyone, "applied")
        codes = [node.finish() for node in [*nodes, late]]
        hits = all_hits()
        paced = [  # (robots.txt is not paced: a node new to a host asks for it first)
            sorted(
                (h.start, h.agent[-2:], h.path)
                for h in s.log.hits
                if h.start > set_at and h.path != "/robots.txt"
            )
            for s in site.servers
        ]
    assert codes == [130, 130, 130], [n.err for n in [*nodes, late]]
    for starts in paced:  # each host, whichever node fetched it
        assert_paced([start for start, _, _ in starts], 0.2)
    assert dropped > 0
    odd_after = [h.path for h in hits if h.start > excluded_at and re.search(SEVENS, h.path)]
    assert odd_after == []
    for node in [*nodes, late]:
        state = json.loads((node.job / "job.json").read_text())["job"]
        assert state["excluded"] == [SEVENS] and state["paused"] is False
        assert state["overrides"] == {"delay": 0.2}
        assert state["added_seeds"] == {extra.url + "/": 5}


def _nodes_alive(crawl: str) -> bytes:
    """The names of the crawl's live nodes (none before the first one's
    first heartbeat: then ``status`` says there is no such crawl, exit 2)."""
    proc = run_cli("status", "--redis", redis_server.url(), "--crawl", crawl, "--json")
    try:
        rows = json.loads(proc.stdout)["nodes"]
    except ValueError:
        return b"[]"
    return json.dumps([r["node"] for r in rows if r["alive"]]).encode()


def _seen_since(hits: list[Hit], since: float, agents: dict[str, str]) -> dict[str, int]:
    seen: dict[str, int] = {}
    for hit in hits:
        if hit.start > since:
            name = agents.get(hit.agent, hit.agent)
            seen[name] = seen.get(name, 0) + 1
    return seen


def test_status_serves_the_crawl_wide_figures(tmp_path: Path, crawl: str) -> None:
    """``status --redis --serve``: crawl-wide /metrics and /status while the
    nodes run and after; each node's own /metrics carries its ``node`` label."""
    port, node_port = free_port(), free_port()
    where = ("--redis", redis_server.url(), "--crawl", crawl)
    with serve_site(hosts=4, pages=40, latency=0.02) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl)]
        nodes = [
            Node("n0", tmp_path / "n0", [*args, "--metrics-port", str(node_port)]),
            Node("n1", tmp_path / "n1", args),
        ]
        wait_until(lambda: len(nodes[0].records()) >= 5, 60, "n0 recording")
        site.gate.clear()  # the crawl cannot end (and its nodes leave) before the pause
        try:
            wait_until(lambda: b'"n1"' in _nodes_alive(crawl), 60, "n1 up")  # "both up" below
            assert control(crawl, "pause") == {"n0": "applied", "n1": "applied"}  # both up
            wait_until(lambda: scrape(node_port)["mpcrawler_paused{node=n0}"] == 1, 5, "paused")
            server = start_cli("status", *where, "--serve", str(port))
            lines = Lines(server)
            lines.wait_for(lambda out, err: any("serving crawl" in line for line in out), 30)
            during = scrape(port)
        finally:
            site.gate.set()
        assert control(crawl, "resume") == {"n0": "applied", "n1": "applied"}
        codes = [node.finish() for node in nodes]
        after = scrape(port)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5) as answer:
            status = json.loads(answer.read())
        server.send_signal(signal.SIGTERM)
        lines.finish(30)
    assert codes == [0, 0], [n.err for n in nodes]
    assert server.returncode == 0
    assert during[f"mpcrawler_crawl_nodes_alive{{crawl={crawl}}}"] == 2
    records = {node.name: len(node.records()) for node in nodes}
    assert after[f"mpcrawler_crawl_pages_total{{crawl={crawl}}}"] == sum(records.values()) == 160
    assert after[f"mpcrawler_crawl_nodes_alive{{crawl={crawl}}}"] == 0
    for name, count in records.items():
        assert after[f"mpcrawler_crawl_node_pages{{crawl={crawl},node={name}}}"] == count
    assert status["done"] == 160 and status["queued"] == 0


def test_a_shared_command_answered_applied_survives_a_kill_at_once(
    tmp_path: Path, crawl: str
) -> None:
    """SIGKILL a node the moment its answer appears in Redis: its job.json
    already holds the command (a restart does not run unpaused), and the
    restarted node keeps its first answer."""
    import redis

    from mpcrawler.control.shared import answers_of, send
    from mpcrawler.frontier.redis.client import key_prefix

    client = redis.Redis.from_url(redis_server.url())
    prefix = key_prefix(crawl)
    try:
        with serve_site(hosts=2, pages=200, latency=0.05) as site:
            args = [*site.args(), *shared(redis_server.url(), crawl)]
            node = Node("k1", tmp_path / "k1", args)
            wait_until(lambda: len(node.records()) >= 3, 60, "the node's records")
            ident = send(client, prefix, "pause", {})
            deadline = time.monotonic() + 30
            while "k1" not in answers_of(client, prefix, ident):  # polled without a pause
                assert time.monotonic() < deadline, "no answer"
            node.kill()  # at the answer's moment
            state = json.loads((node.job / "job.json").read_text())["job"]
            assert state["paused"] is True, state
            assert answers_of(client, prefix, ident) == {"k1": "applied"}
    finally:
        client.close()


def test_the_web_page_of_a_shared_crawl_shows_every_node_and_steers_them(
    tmp_path: Path, crawl: str
) -> None:
    """``web --redis URL --crawl NAME``: /api/status has every node, and a
    button's pause-host reaches every node and is kept in each job."""
    import pytest
    import requests

    pytest.importorskip("aiohttp")
    with serve_site(hosts=2, pages=300, latency=0.05) as site:
        args = [*site.args(), *shared(redis_server.url(), crawl)]
        nodes = [Node(f"n{i}", tmp_path / f"n{i}", args) for i in range(2)]
        wait_until(lambda: _nodes_alive(crawl) == b'["n0", "n1"]', 60, "both nodes alive")
        web = start_cli("web", "--redis", redis_server.url(), "--crawl", crawl, "--port", "0")
        lines = Lines(web)
        try:
            wait_until(lambda: any(" on http://" in line for line in lines.out), 30, "web serving")
            url = (
                next(line for line in lines.out if " on http://" in line)
                .rsplit(" on ", 1)[1]
                .strip()
            )
            status = requests.get(url + "api/status", timeout=10).json()
            assert status["running"] and {row["node"] for row in status["nodes"]} == {"n0", "n1"}
            host = site.servers[1].url.split("//")[1].split(":")[0]
            sent = requests.post(
                url + "api/control",
                json={"command": "pause-host", "args": {"host": host}},
                timeout=20,
            ).json()
            assert sent["answer"] == "n0: applied; n1: applied", sent
            assert control(crawl, "stop") == {"n0": "applied", "n1": "applied"}
            codes = [node.finish() for node in nodes]
        finally:  # (a failure above must not leave the page's server running)
            web.send_signal(signal.SIGTERM)
            assert web.wait(timeout=30) == 0
            lines.finish()
    assert codes == [130, 130]
    for node in nodes:
        state = json.loads((node.job / "job.json").read_text())["job"]
        assert state["paused_hosts"] == [host]
