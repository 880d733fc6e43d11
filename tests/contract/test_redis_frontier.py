"""RedisFrontier against a real redis-server: the key layout (one prefix, one
Cluster hash slot, JSON values), leases kept per node, and a clear error when
Redis cannot be reached.  (The Frontier contract runs in test_frontier_contract.)"""

from __future__ import annotations

import json
import time

import pytest
import redis
import redis_server
from redis.crc import key_slot

from mpcrawler.frontier import FrontierError
from mpcrawler.frontier.redis.frontier import RedisFrontier, fair_share, hosts_to_shed
from mpcrawler.web.urls import host_key


def test_every_key_is_under_the_prefix_in_one_slot_and_not_pickle(crawl: str) -> None:
    f = RedisFrontier(redis_server.url(), crawl, "n1")
    for i in range(5):
        assert f.admit(f"http://h{i % 2}.test/{i}", i, i % 3, "sitemap" if i == 4 else "page")
    leased = f.lease(0.0)
    assert leased is not None and leased.priority == 2
    client = redis.Redis.from_url(redis_server.url())
    keys = [k.decode() for k in client.scan_iter(match=f"mpc:{{{crawl}}}:*")]
    everything = [k.decode() for k in client.scan_iter(match=f"*{crawl}*")]
    assert sorted(keys) == sorted(everything)
    names = {k.removeprefix(f"mpc:{{{crawl}}}:") for k in keys}
    buckets = {n for n in names if n.startswith("seen:")}
    assert len(buckets) >= 1 and all(len(n) == len("seen:") + 4 for n in buckets)
    assert {"seen", "seq", "queued", "hosts", "leased", "alive", "owner", "held:n1"} <= names
    assert {"own:n1", "inflight", "nodes", "beats", "started"} <= names
    assert {"q:http://h0.test", "q:http://h1.test"} <= names
    assert names - buckets <= {
        *("seen", "seq", "queued", "done", "errors", "hosts", "leased", "alive", "owner"),
        *("held:n1", "own:n1", "inflight", "free_at", "nodes", "beats", "started"),
        *("id", "epochs", "epoch", "late", "lost"),
        *("q:http://h0.test", "q:http://h1.test"),
    }
    assert len({key_slot(k.encode()) for k in keys}) == 1  # Redis Cluster: one slot
    for key in keys:
        kind = client.type(key).decode()
        if kind == "zset":
            for member, _ in client.zrange(key, 0, -1, withscores=True):
                if key.endswith((":hosts", ":own:n1")):
                    assert member.decode().startswith("http://")
                elif key.endswith(":alive"):
                    assert member == b"n1"
                else:
                    assert isinstance(json.loads(member), list)
        elif kind == "hash" and key.endswith(":leased"):
            for value in client.hvals(key):
                assert json.loads(value)[2] == "n1"
        elif kind == "hash" and key.endswith(":nodes"):
            assert all(isinstance(json.loads(v), dict) for v in client.hvals(key))
        elif kind == "hash" and key.endswith((":owner", ":inflight", ":beats", ":epoch")):
            assert all(v.decode().replace("n1", "1").isdigit() for v in client.hvals(key))
        elif kind == "hash":  # a seen bucket: 14-byte digest tails, empty values
            assert all(len(f) == 14 and v == b"" for f, v in client.hgetall(key).items())
        elif kind == "set":
            assert all(m.decode().startswith("http://") for m in client.smembers(key))
    assert client.zrange(f"mpc:{{{crawl}}}:alive", 0, -1) == [b"n1"]  # its heartbeat
    client.close()
    f.close()


def test_leases_belong_to_their_node(crawl: str) -> None:
    a = RedisFrontier(redis_server.url(), crawl, "node-a")
    for i in range(4):
        a.admit(f"http://h.test/{i}")
    taken = [a.lease(0.0) for _ in range(2)]
    a.abandon()  # node-a dies holding two leases
    b = RedisFrontier(redis_server.url(), crawl, "node-b")
    assert b.taken == 2 and len(b) == 2  # node-b does not take node-a's leases back
    b.close()
    again = RedisFrontier(redis_server.url(), crawl, "node-a")  # node-a comes back
    assert again.taken == 0 and len(again) == 4
    got = [again.lease(0.0) for _ in range(4)]
    assert [g.url for g in got if g] == [t.url for t in taken if t] + [
        "http://h.test/2",
        "http://h.test/3",
    ]
    again.close()


def test_unreachable_redis_is_one_clear_error() -> None:
    port = redis_server.free_port()
    with pytest.raises(FrontierError, match=f"cannot reach Redis at redis://127.0.0.1:{port}/0"):
        RedisFrontier(f"redis://127.0.0.1:{port}/0", "x", "n1")


def test_a_dead_nodes_leases_go_back_when_its_heartbeat_runs_out(crawl: str) -> None:
    """node-a dies holding leases and never comes back; node-b's heartbeat
    gives them back once node-a's heartbeat is older than the lease timeout,
    and not before; a live node's leases are never taken."""
    a = RedisFrontier(redis_server.url(), crawl, "node-a", lease_timeout=0.5)
    live = RedisFrontier(redis_server.url(), crawl, "node-live", lease_timeout=60)
    for i in range(5):
        a.admit(f"http://h.test/{i}")
    live.admit("http://other.test/")
    held = [a.lease(0.0), a.lease(0.0)]
    kept = live.lease(0.0)
    assert kept is not None
    a.abandon()
    b = RedisFrontier(redis_server.url(), crawl, "node-b", lease_timeout=60)
    returned = b.heartbeat()
    assert returned == 0 or returned == 2  # 0 unless node-a's 0.5 s already ran out
    deadline = time.monotonic() + 10
    while returned == 0:  # wait, bounded, for node-a's heartbeat to run out
        assert time.monotonic() < deadline, "node-a's leases never came back"
        time.sleep(0.05)
        returned = b.heartbeat()
    assert returned == 2 and b.taken == 1  # node-live's lease stays
    got = [b.lease(0.0) for _ in range(2)]  # node-a's host is free again: b claims it
    assert [g.url for g in got if g] == [h.url for h in held if h]
    b.close()
    live.close()


def test_an_ack_lost_in_the_outbox_queues_its_url_again(crawl: str) -> None:
    """Acks wait for the next round trip; a node killed before it loses no
    URL: the lease is still recorded, and goes back in its place."""
    a = RedisFrontier(redis_server.url(), crawl, "node-a")
    for i in range(3):
        a.admit(f"http://h.test/{i}")
    first = a.lease(0.0)
    assert first is not None
    a.ack(first)  # in the outbox only
    assert a.taken == 0  # as this node counts it
    a.abandon()
    again = RedisFrontier(redis_server.url(), crawl, "node-a")
    assert len(again) == 3 and again.taken == 0
    item = again.lease(0.0)
    assert item is not None and item.url == first.url
    again.ack(item)
    again.sync()  # now it is in Redis
    again.abandon()
    last = RedisFrontier(redis_server.url(), crawl, "node-a")
    assert len(last) == 2 and last.stats()["done"] == 1
    last.close()


def test_hosts_belong_to_one_node_and_are_shared_fairly(crawl: str) -> None:
    """Two live nodes and four hosts: each claims at most its fair share (2),
    never leases from the other's hosts, and a host with nothing left is
    free again for anyone."""
    a = RedisFrontier(redis_server.url(), crawl, "a")
    b = RedisFrontier(redis_server.url(), crawl, "b")
    for h in range(4):
        for i in range(3):
            a.admit(f"http://h{h}.test/{i}")
    got_a = [a.lease(0.0, want=1) for _ in range(6)]
    hosts_a = {host_key(i.url) for i in got_a if i}
    assert len(hosts_a) == 2 and all(got_a)  # its share, then more of its own hosts
    got_b = [b.lease(0.0) for _ in range(6)]
    hosts_b = {host_key(i.url) for i in got_b if i}
    assert len(hosts_b) == 2 and not hosts_a & hosts_b and all(got_b)
    assert a.lease(0.0) is None and b.lease(1.0) is None  # all leased
    for item in got_a:
        assert item is not None
        a.ack(item)
    a.heartbeat()  # sends the acks: a's hosts are idle and empty, so free again
    assert a.stats()["hosts_held"] == 0
    b.admit(f"{sorted(hosts_a)[0]}/late")
    c = RedisFrontier(redis_server.url(), crawl, "c")
    late = c.lease(5.0)
    assert late is not None and host_key(late.url) in hosts_a  # a newcomer may claim it
    for f in (a, b, c):
        f.close()


def test_fair_share_and_what_to_shed() -> None:
    assert fair_share(16, 3) == 6 and fair_share(16, 4) == 4 and fair_share(5, 0) == 5
    held = ["d", "a", "c", "b"]
    assert hosts_to_shed(held, set(), 4) == []
    assert hosts_to_shed(held, set(), 2) == ["a", "b"]
    assert hosts_to_shed(held, {"a", "c"}, 2) == ["b", "d"]  # idle ones go first
    assert hosts_to_shed(held, {"a", "b", "c", "d"}, 3) == ["a"]


def drain(f: RedisFrontier, rounds: int = 50) -> list[str]:
    """Lease and ack everything ``f`` can get, heartbeat between rounds
    (bounded); the URLs it got."""
    got: list[str] = []
    for k in range(rounds):
        item = f.lease(time.monotonic() + k, want=8)  # never inside a dry spell
        if item is None:
            if len(f) == 0 and f.taken == 0:
                return got
            f.heartbeat()
            continue
        got.append(item.url)
        f.ack(item)
    return got


def test_a_host_shed_while_busy_is_never_stranded(crawl: str) -> None:
    """The hang of a crawl with nodes joining: node a holds four busy hosts
    when b joins, so a marks its share's excess to shed; a finishes those
    hosts' leases, then b leaves, so a's share covers every host again.  a
    must lease from every host it owns: a host that stays marked to shed
    after the excess is gone is owned, queued and never leased, and nobody
    else may take it."""
    a = RedisFrontier(redis_server.url(), crawl, "a", per_host=1)
    for h in range(4):
        for i in range(3):
            a.admit(f"http://h{h}.test/{i}")
    first = [a.lease(0.0, want=4) for _ in range(4)]
    assert len({host_key(i.url) for i in first if i}) == 4  # a owns all four, all busy
    b = RedisFrontier(redis_server.url(), crawl, "b")  # joins: a's share is now 2
    a.heartbeat()  # a marks two busy hosts to shed
    for item in first:
        assert item is not None
        a.ack(item)
    b.close()  # b leaves: a's share is 4 again
    a.heartbeat()
    rest = drain(a)
    assert len(rest) == 8, sorted(rest)
    assert len(a) == 0 and a.taken == 0
    a.close()


def _commands(client: redis.Redis, name: str) -> int:
    """Calls of ``name`` the server has run so far (a script's own included)."""
    return int(client.info("commandstats").get(f"cmdstat_{name}", {}).get("calls", 0))


def test_a_lease_does_not_walk_past_blocked_hosts(crawl: str) -> None:
    """A node's blocked hosts are out of its ready index, said once (op B):
    a lease reads the index's head, however many of the best hosts are
    blocked (it walked past each of them, every lease: 7 us a host a call)."""
    f = RedisFrontier(redis_server.url(), crawl, "n1")
    hosts = [f"http://h{n:03}.test" for n in range(600)]
    f.admit_many([(f"{h}/{k}", 0, 0, "page", None) for k in range(2) for h in hosts])
    taken = [f.lease(0.0, want=600) for _ in hosts]  # claims every host
    for item in taken:
        assert item is not None
        f.release(item)
    f.sync()
    client = redis.Redis.from_url(redis_server.url())
    reads = []
    for blocked in (0, 500):
        for host in hosts[:blocked]:
            f.block(host, float("inf"))
        f._call()  # the blocks go out (once)
        before = _commands(client, "zrange")
        step = f._call(want=8)
        reads.append(_commands(client, "zrange") - before)
        assert [host_key(i.url) for i in step.leased] == hosts[blocked : blocked + 8]
        for item in step.leased:
            f.release(item)
        f._call()
    assert reads[1] == reads[0] <= 2 * 8 + 2  # a head read and an index fix a lease
    prefix = f"mpc:{{{crawl}}}:"
    assert client.scard(prefix + "blk:n1") == 500 and client.zcard(prefix + "ownb:n1") == 500
    for host in hosts[:500]:
        f.block(host, 0)
    f._call()
    assert client.scard(prefix + "blk:n1") == 0 and client.zcard(prefix + "own:n1") == 600
    client.close()
    f.close()


def test_a_node_knows_its_hosts_from_each_calls_changes(crawl: str) -> None:
    """A heartbeat sends back how many hosts the node holds, not their list;
    the node keeps the list from what each call claimed and gave up, and
    asks for it whole when the count disagrees (a reply lost to a fault)."""
    f = RedisFrontier(redis_server.url(), crawl, "n1")
    client = redis.Redis.from_url(redis_server.url())
    held_key = f"mpc:{{{crawl}}}:held:n1"

    def held() -> set[str]:
        return {h.decode() for h in client.smembers(held_key)}

    f.admit_many([(f"http://h{n}.test/", 0, 0, "page", None) for n in range(20)])
    items = [f.lease(0.0, want=8) for _ in range(12)]  # two calls of 8
    assert f.hosts.owned == held() and len(held()) == 16
    for item in items[:5]:
        assert item is not None
        f.ack(item)  # an idle host with nothing queued is given up
    f.sync()
    assert f.hosts.owned == held() and len(held()) == 11
    f.hosts.owned.add("http://ghost.test")  # as if a reply had been lost
    f._call(beat=True)
    assert f.hosts.resync  # the count disagreed
    f._call(beat=True)
    assert f.hosts.owned == held() and not f.hosts.resync
    client.close()
    f.close()


def test_a_partition_whose_keys_were_lost_is_not_made_again_by_a_new_node(crawl: str) -> None:
    """One shard of a cluster restarted without its data: a node joining
    the crawl then would make that partition again, empty and under the
    same id, and the nodes already in would not see that its URLs were
    lost.  It is refused (CrawlLost), and so is every node's next call there."""
    from mpcrawler.frontier.redis.client import key_prefix
    from mpcrawler.frontier.redis.frontier import CrawlLost
    from mpcrawler.frontier.redis.partitions import PartitionedFrontier, partition_of

    a = PartitionedFrontier(redis_server.url(), crawl, "a", partitions=3)
    hosts = [f"http://h{i}.test" for i in range(12)]
    for host in hosts:
        assert a.admit(host + "/")
    a.sync()
    lost = partition_of(hosts[0], 3) or 1
    client = redis.Redis.from_url(redis_server.url())
    client.delete(*client.keys(key_prefix(crawl, lost) + "*"))  # the shard's data is gone
    with pytest.raises(CrawlLost, match=f"partition {lost}'s keys are gone"):
        PartitionedFrontier(redis_server.url(), crawl, "b", partitions=3)
    assert not client.exists(key_prefix(crawl, lost) + "id")  # not made again
    with pytest.raises(CrawlLost):
        a.parts[lost].heartbeat()
    client.close()
    a.abandon()


@pytest.mark.parametrize("held", [False, True])
def test_a_host_given_up_carries_the_pace_its_last_ack_said(crawl: str, held: bool) -> None:
    """The scheduler's wait before a host's next start rides on each ack; a
    host given up later (here at close) carries it to its next owner, even
    while the scheduler holds the host's requests (``held``: a block
    FOREVER, which says nothing of when it may start)."""
    f = RedisFrontier(redis_server.url(), crawl, "n1", per_host=1)
    f.admit_many([(f"http://h.test/{n}", 0, 0, "page", None) for n in range(3)])
    item = f.lease(0.0)
    assert item is not None
    if held:
        f.block("http://h.test", float("inf"))
    f.ack(item, wait=5.0)
    client = redis.Redis.from_url(redis_server.url())
    f.close()
    redis_ms = int(client.time()[0]) * 1000
    free_at = client.hget(f"mpc:{{{crawl}}}:free_at", "http://h.test")
    client.close()
    assert free_at is not None
    until_ms = int(free_at.decode().split("|")[0])
    assert until_ms - redis_ms > 4000, until_ms - redis_ms  # about 5 s from the close
    other = RedisFrontier(redis_server.url(), crawl, "n2")
    assert other.lease(0.0) is None  # its URLs wait for the pace to run out
    other.close()
