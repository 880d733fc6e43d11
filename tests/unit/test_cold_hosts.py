"""Frozen hosts (frontier/local/cold.py): a blocked host with nothing left in
memory keeps its block lists in SQLite, not in the queue's memory, and
comes back in order when it may be leased from again, across a kill at the
worst moment of a checkpoint."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mpcrawler.frontier import FrontierError, UrlQueueManager
from mpcrawler.frontier.local import checkpoint as checkpoint_module
from mpcrawler.frontier.local.cold import COLD_FILE

HOSTS, PER_HOST, CACHE = 200, 5, 20


def url(i: int) -> str:
    return f"http://h{i % HOSTS}.test/{i // HOSTS}"


def fill_and_block(q: UrlQueueManager) -> list[str]:
    """Round-robin URLs over HOSTS hosts; each host blocked once its first
    URL is leased (and acked), as Crawl-delay does; what came out."""
    for i in range(HOSTS * PER_HOST):
        q.put(url(i))
    got = []
    while (item := q.lease()) is not None:
        got.append(item.url)
        q.ack(item)
        q.block(item.url.rsplit("/", 1)[0], math.inf)
    return got


def unblock_and_drain(q: UrlQueueManager) -> list[str]:
    for h in range(HOSTS):
        q.block(f"http://h{h}.test", 0)
    got = []
    while (item := q.lease()) is not None:
        got.append(item.url)
        q.ack(item)
    return got


def in_host_order(urls: list[str]) -> bool:
    last: dict[str, int] = {}
    for u in urls:
        host, n = u.rsplit("/", 1)
        if last.get(host, -1) >= int(n):
            return False
        last[host] = int(n)
    return True


def test_blocked_hosts_with_nothing_in_memory_are_frozen_and_come_back_in_order(
    tmp_path: Path,
) -> None:
    with UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False) as q:
        first = fill_and_block(q)
        assert sorted(first) == sorted(url(i) for i in range(HOSTS))
        stats = q.stats()
        left = HOSTS * (PER_HOST - 1)
        assert stats["queued"] == left and stats["frozen"] >= left - CACHE
        assert stats["hosts_queued"] <= CACHE  # in memory: the hosts with URLs there
        assert q.drop(lambda u: u.startswith("http://h7.test/")) == PER_HOST - 1
        rest = unblock_and_drain(q)
    expected = {url(i) for i in range(HOSTS, HOSTS * PER_HOST)} - {
        f"http://h7.test/{n}" for n in range(1, PER_HOST)
    }
    assert len(rest) == len(expected) and set(rest) == expected
    assert in_host_order(rest)


def test_a_host_frozen_over_several_checkpoints_thaws_in_the_order_written(
    tmp_path: Path,
) -> None:
    """A lane has a row for each checkpoint it was frozen across: thawed,
    the rows join oldest first."""
    with UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False) as q:
        first = fill_and_block(q)
        q.checkpoint()  # a new generation: what is frozen next gets rows of its own
        for i in range(HOSTS * PER_HOST, HOSTS * 2 * PER_HOST):
            q.put(url(i))
        assert q.lease() is None  # every host waits: the log is read past them
        assert q.stats()["frozen"] >= HOSTS * (2 * PER_HOST - 1) - CACHE
        rest = unblock_and_drain(q)
    assert sorted(first + rest) == sorted(url(i) for i in range(HOSTS * 2 * PER_HOST))
    assert in_host_order(rest)


def test_frozen_hosts_survive_reopening(tmp_path: Path) -> None:
    with UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False) as q:
        fill_and_block(q)
        assert q.stats()["frozen"]
    with UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False) as q:
        assert q.stats()["frozen"] == 0  # reopened, every host is ready: thawed
        rest = unblock_and_drain(q)
    assert sorted(rest) == sorted(url(i) for i in range(HOSTS, HOSTS * PER_HOST))
    assert in_host_order(rest)


def test_a_kill_after_the_cold_commit_before_state_json_loses_and_repeats_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows of a checkpoint are committed just before ``state.json``
    names them.  Killed between the two, the queue reopens on the previous
    checkpoint: the rows written since are dropped, those thawed since come
    back, and every URL not acked comes out once, in its host's order."""
    q = UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False)
    first = fill_and_block(q)
    q.checkpoint()  # frozen rows, named by state.json
    acked = set(first)
    for h in range(0, HOSTS, 2):  # half thaw: their rows are gone in this generation
        q.block(f"http://h{h}.test", 0)
    for _ in range(HOSTS // 4):
        item = q.lease()
        assert item is not None
        acked.add(item.url)
        q.ack(item)
    for i in range(HOSTS * PER_HOST, HOSTS * (PER_HOST + 2)):
        q.put(url(i))
    kept = q.lease()  # given back on reopening: not acked
    assert kept is not None
    while (item := q.lease()) is not None:  # read past the frozen hosts: rows of this generation
        acked.add(item.url)
        q.ack(item)
    assert q.stats()["frozen"] > HOSTS * (PER_HOST - 1) // 2
    q.sync()

    def killed(*args: object) -> None:
        raise OSError("killed before state.json was replaced")

    monkeypatch.setattr(checkpoint_module, "atomic_write", killed)
    with pytest.raises(OSError):
        q.checkpoint()
    q.abandon()
    monkeypatch.undo()
    with UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False) as again:
        rest = unblock_and_drain(again)
    everything = {url(i) for i in range(HOSTS * (PER_HOST + 2))}
    assert len(rest) == len(set(rest)), "a URL came out twice"
    assert set(rest) == everything - acked
    assert in_host_order(rest)


def test_a_damaged_cold_hosts_file_is_refused(tmp_path: Path) -> None:
    with UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False) as q:
        fill_and_block(q)
    (tmp_path / COLD_FILE).write_bytes(b"not a database at all" * 100)
    for name in (COLD_FILE + "-wal", COLD_FILE + "-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    with pytest.raises(FrontierError, match=COLD_FILE):
        UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False)


def test_a_lost_cold_hosts_file_is_refused_not_read_as_empty(tmp_path: Path) -> None:
    with UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False) as q:
        fill_and_block(q)
        q.checkpoint()
        frozen = q.stats()["frozen"]
        assert frozen
        q.abandon()  # killed: the checkpoint still counts its frozen URLs
    for name in (COLD_FILE, COLD_FILE + "-wal", COLD_FILE + "-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    with pytest.raises(FrontierError, match=f"lists 0 URLs .* counted {frozen}"):
        UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False)


def test_a_format_3_frontier_is_read_and_written_as_format_4(tmp_path: Path) -> None:
    """The frontier before frozen hosts (format 3: no ``cold`` in
    ``state.json``) opens as having none; an older mpcrawler refuses the
    new format rather than ignore cold-hosts.db and lose its URLs."""
    import json

    from mpcrawler.frontier import FORMAT_VERSION

    with UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False) as q:
        for i in range(10):
            q.put(url(i))
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["format"] == FORMAT_VERSION == 4
    del state["cold"]
    state["format"] = 3
    (tmp_path / "state.json").write_text(json.dumps(state))
    (tmp_path / COLD_FILE).unlink()
    with UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False) as q:
        assert len(q) == 10
    assert json.loads((tmp_path / "state.json").read_text())["format"] == 4


def test_frozen_hosts_that_do_not_add_up_are_said_and_refused(tmp_path: Path) -> None:
    """``verify`` (through ``frozen_damage``) and the queue both refuse a
    cold-hosts.db that lists another number of URLs than the checkpoint."""
    import json
    import sqlite3

    from mpcrawler.frontier.local.integrity import frozen_damage

    with UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False) as q:
        fill_and_block(q)
        q.checkpoint()
        q.abandon()  # killed with frozen hosts
    state = json.loads((tmp_path / "state.json").read_text())
    assert frozen_damage(tmp_path, state) is None
    db = sqlite3.connect(tmp_path / COLD_FILE)
    db.execute("DELETE FROM blocks WHERE host = 'http://h3.test'")
    db.commit()
    db.close()
    why = frozen_damage(tmp_path, state)
    assert why is not None and "where the checkpoint counted" in why, why
    with pytest.raises(FrontierError, match="it was lost, replaced or damaged"):
        UrlQueueManager(tmp_path, cache_size=CACHE, fsync=False)
