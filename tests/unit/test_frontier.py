"""UrlQueueManager and SeenSet: the contract, crashes, corruption, memory."""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import diskcache
import pytest
from frontier_child import operations
from support import TESTS, Lines

from mpcrawler.frontier import FrontierError, SeenSet, UrlQueueManager


def killed_after(script: str, args: list[str], mark: str, count: int) -> int:
    """Run ``tests/script`` with ``args`` and SIGKILL it as soon as it has
    printed ``count`` lines starting with ``mark``, wherever it then is,
    however slowly it started: how many it printed."""
    proc = subprocess.Popen(
        [sys.executable, str(TESTS / script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(TESTS.parent)},
    )
    lines = Lines(proc)
    try:
        lines.wait_for(lambda out, err: sum(x.startswith(mark) for x in out) >= count)
    finally:
        proc.send_signal(signal.SIGKILL)
    out, _ = lines.finish(timeout=10)
    return len([line for line in out.splitlines() if line.startswith(mark)])


def drain(q: UrlQueueManager) -> list[str]:
    urls = []
    while (item := q.lease()) is not None:
        urls.append(item.url)
        q.ack(item)
    return urls


def test_contract_as_written(tmp_path: Path) -> None:
    q = UrlQueueManager(tmp_path, cache_size=10_000)
    q.put("http://a/1", depth=0, priority=0)
    q.put("http://a/2", depth=1, priority=5)
    assert len(q) == 2
    item = q.lease()
    assert item is not None and (item.url, item.depth, item.priority) == ("http://a/2", 1, 5)
    q.ack(item)
    q.flush()
    q.close()
    with UrlQueueManager(tmp_path, cache_size=10_000) as q2:
        assert [i.url for i in q2] == ["http://a/1"]
    seen = SeenSet(tmp_path / "seen")
    assert seen.add("http://a/1") and not seen.add("http://a/1")
    assert "http://a/1" in seen and "http://a/2" not in seen and len(seen) == 1
    seen.flush()
    seen.close()
    with SeenSet(tmp_path / "seen") as again:
        assert "http://a/1" in again and len(again) == 1


def test_unacked_items_return_in_their_place_after_reopen(tmp_path: Path) -> None:
    with UrlQueueManager(tmp_path, cache_size=2) as q:
        for i in range(20):
            q.put(f"u{i}", priority=i % 3)
        got = [q.lease() for _ in range(5)]
        q.ack(got[1])
    with UrlQueueManager(tmp_path, cache_size=3) as q:
        order = drain(q)
    expected = sorted((f"u{i}" for i in range(20)), key=lambda u: (-(int(u[1:]) % 3), int(u[1:])))
    assert got[1] is not None
    expected.remove(got[1].url)
    assert order == expected


def _replay(seed: int, flushes: int) -> tuple[set[str], set[str]]:
    """The state at the given flush: (queued or un-acked, acked)."""
    import heapq

    heap: list[tuple[int, int, str]] = []
    gotten: list[tuple[int, int, str]] = []
    acked: set[str] = set()
    n = done = 0
    if flushes == 0:
        return set(), set()
    for op in operations(seed):
        if op[0] == "put":
            heapq.heappush(heap, (-op[3], n, op[1]))
            n += 1
        elif op[0] == "get":
            if heap:
                gotten.append(heapq.heappop(heap))
        elif op[0] == "ack":
            if gotten:
                acked.add(gotten.pop(int(op[1] * len(gotten)))[2])
        else:
            done += 1
            if done == flushes:
                return {u for _, _, u in heap} | {u for _, _, u in gotten}, acked
    raise AssertionError("unreachable")


@pytest.mark.parametrize("seed, kill_at", [(1, 5), (2, 12), (3, 25), (4, 40)])
def test_sigkill_loses_nothing_flushed(tmp_path: Path, seed: int, kill_at: int) -> None:
    """Kill the child as soon as it has reported ``kill_at`` flushes, wherever
    it then is, however slowly it started."""
    flushes = killed_after("frontier_child.py", [str(tmp_path), str(seed), "7"], "FLUSHED", kill_at)
    with UrlQueueManager(tmp_path, cache_size=7) as q:
        found = drain(q)
    assert len(found) == len(set(found)), "an item came back twice"
    assert flushes > 3, "the child made too little progress to test anything"
    # The kill may land after a flush completed but before it was reported,
    # so the state on disk is that of the last reported flush or the next.
    candidates = [_replay(seed, n) for n in (flushes, flushes + 1)]
    assert any(must <= set(found) and not (acked & set(found)) for must, acked in candidates)


def test_torn_tail_record_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with UrlQueueManager(tmp_path, cache_size=4) as q:
        for i in range(100):
            q.put(f"http://h/{i}")
    state = json.loads((tmp_path / "state.json").read_text())
    finding = [s for s in state["segments"] if s[1] == "finding"]
    assert finding
    path = tmp_path / finding[-1][0]
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # damage the last record's URL: its checksum no longer matches
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING), UrlQueueManager(tmp_path, cache_size=4) as q:
        found = drain(q)
    assert found == [f"http://h/{i}" for i in range(99)]
    assert any("checksum" in r.message for r in caplog.records)


def test_truncated_segment_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with UrlQueueManager(tmp_path, cache_size=4) as q:
        for i in range(50):
            q.put(f"http://h/{i}")
    state = json.loads((tmp_path / "state.json").read_text())
    path = tmp_path / [s for s in state["segments"] if s[1] == "finding"][-1][0]
    path.write_bytes(path.read_bytes()[:-5])
    with caplog.at_level(logging.WARNING), UrlQueueManager(tmp_path, cache_size=4) as q:
        found = drain(q)
    assert found == [f"http://h/{i}" for i in range(49)]
    assert caplog.records


def test_no_pickle_on_disk(tmp_path: Path) -> None:
    with UrlQueueManager(tmp_path / "q", cache_size=3) as q:
        for i in range(30):
            q.put(f"http://h/{i}", priority=i % 2)
        q.lease()
    for path in (tmp_path / "q").iterdir():
        data = path.read_bytes()
        assert not data.startswith(b"\x80"), f"{path.name} looks like a pickle"
    json.loads((tmp_path / "q" / "state.json").read_text())


def test_other_format_version_is_refused(tmp_path: Path) -> None:
    with UrlQueueManager(tmp_path, cache_size=3) as q:
        q.put("http://h/1")
    state = json.loads((tmp_path / "state.json").read_text())
    state["format"] = 999
    (tmp_path / "state.json").write_text(json.dumps(state))
    with pytest.raises(FrontierError, match="format 999"):
        UrlQueueManager(tmp_path)


MEMORY_SCRIPT = """
import sys, tempfile
from mpcrawler.frontier import UrlQueueManager
def rss():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS'):
                return int(line.split()[1]) * 1024
q = UrlQueueManager(tempfile.mkdtemp(dir=sys.argv[1]), cache_size=10_000, fsync=False)
q.put('http://warm.test/'); q.lease(); q.flush()
before = rss()
for i in range(int(sys.argv[2])):
    q.put(f'http://www.example.com/section/{i % 997}/page-{i}.html', depth=i % 7)
q.flush()
print(rss() - before, len(q))
"""


def test_memory_is_bounded_by_cache_size(tmp_path: Path) -> None:
    count = 2_000_000  # 2.8 MiB of growth here; one string kept a URL would be 200+ MiB
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, str(tmp_path), str(count)],
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
        env={**os.environ, "PYTHONPATH": str(TESTS.parent)},
    ).stdout
    growth, length = map(int, out.split())
    assert length == count
    assert growth < 60 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB"


def test_inspect_counts_without_opening(tmp_path: Path) -> None:
    from mpcrawler.frontier import inspect

    q = UrlQueueManager(tmp_path, cache_size=3)
    for i in range(20):
        q.put(f"http://h/{i}", priority=i % 2)
    q.flush()  # a checkpoint-free flush: the counts come from the journal
    got = [q.lease() for _ in range(6)]
    q.ack(got[0])
    q.sync()
    files = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    assert inspect(tmp_path) == {"queued": len(q), "taken": q.taken} == {"queued": 14, "taken": 5}
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == files
    q.close()
    assert inspect(tmp_path) == {"queued": 14, "taken": 5}
    assert inspect(tmp_path / "nothing-here") == {"queued": 0, "taken": 0}


def test_acked_urls_on_disk_after_a_crash_are_never_handed_out(tmp_path: Path) -> None:
    """URLs leased from the disk log and acked after the last checkpoint are
    still in its files after a crash: they come back as tombstones, skipped
    when read, through any number of reopenings."""
    q = UrlQueueManager(tmp_path, cache_size=2, fsync=False)
    for i in range(20):
        q.put(f"http://h{i % 3}.test/{i}")
    q.checkpoint()
    done = [q.lease() for _ in range(12)]
    for item in done[:10]:
        assert item is not None and q.ack(item)
    q.sync()
    q.abandon()
    with UrlQueueManager(tmp_path, cache_size=2, fsync=False) as again:
        assert len(again) == 10 and again.stats()["taken"] == 0
    with UrlQueueManager(tmp_path, cache_size=2, fsync=False) as again:
        assert len(again) == 10
        left = drain(again)
        assert len(again) == 0
    assert left == [f"http://h{i % 3}.test/{i}" for i in range(10, 20)]


def test_a_blocked_host_waits_while_others_go_and_keeps_its_order(tmp_path: Path) -> None:
    """With a cache of 4, a blocked host's 30 URLs spill to blocks of its own
    so the other host's URLs, found after them, come out; unblocked, it
    resumes in order; given-back URLs return to their place."""
    with UrlQueueManager(tmp_path, cache_size=4, fsync=False) as q:
        for i in range(30):
            q.put(f"http://slow.test/{i}")
        for i in range(10):
            q.put(f"http://fast.test/{i}", priority=-(i % 2))
        first = q.lease()
        assert first is not None and first.url == "http://slow.test/0"
        q.block("http://slow.test", math.inf)
        fast = drain(q)
        assert fast == [f"http://fast.test/{i}" for i in (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)]
        stats = q.stats()
        assert stats["queued"] == 29 and stats["in_cache"] <= 4 and stats["waiting"] >= 25
        q.block("http://slow.test", 0)
        second = q.lease()
        assert second is not None and second.url == "http://slow.test/1"
        assert q.release(second) and q.release(first)
        assert drain(q) == [f"http://slow.test/{i}" for i in range(30)]
        q.block("http://slow.test", 5.0)  # until a time
        q.put("http://slow.test/late")
        assert q.lease(now=4.9) is None and q.next_ready(4.9) == 5.0
        late = q.lease(now=5.0)
        assert late is not None and late.url == "http://slow.test/late"
        assert q.next_ready(5.0) is None


def test_a_lost_snapshot_is_told_and_its_acks_count_for_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A snapshot emptied after its checkpoint: opening says how many URLs it
    lost; the journal's acks of those URLs leave no tombstone behind once the
    queue is drained (a URL put then counts one, not less)."""
    q = UrlQueueManager(tmp_path, cache_size=100, fsync=False)
    for i in range(6):
        q.put(f"http://h.test/{i}")
    q.checkpoint()
    q.ack(q.lease())
    q.ack(q.lease())
    q.sync()
    q.abandon()
    (snapshot,) = tmp_path.glob("snapshot-*.seg")
    snapshot.write_bytes(b"")
    with caplog.at_level(logging.ERROR):
        reopened = UrlQueueManager(tmp_path, cache_size=100, fsync=False)
    assert "holds 0 of the 6 URLs" in caplog.text
    assert drain(reopened) == [] and len(reopened) == 0
    reopened.put("http://h.test/new")
    assert len(reopened) == 1 and drain(reopened) == ["http://h.test/new"]
    reopened.close()


def test_verify_finds_a_queue_file_missing_or_cut(tmp_path: Path) -> None:
    """``queue_files_damage`` (verify, status, a resume): every file the
    checkpoint's log and blocks read from is there and long enough, and one
    cut short or removed is named."""
    from mpcrawler.frontier.local.integrity import queue_files_damage

    with UrlQueueManager(tmp_path, cache_size=4, fsync=False) as q:
        for host in ("http://a.test", "http://b.test"):
            q.block(host, math.inf)
        for i in range(40):
            q.put(f"http://{'ab'[i % 2]}.test/{i}")
        assert q.lease() is None  # every host must wait: their blocks go to frozen hosts
        for i in range(40):
            q.put(f"http://c.test/{i}")  # beyond the cache: the log
        assert q.lease() is not None
        assert q.stats()["frozen"] == 40
    state = json.loads((tmp_path / "state.json").read_text())
    assert queue_files_damage(tmp_path, state) is None
    names = {s[0] for s in state["segments"]}
    frozen = {p.name for p in tmp_path.glob("waiting-*.seg")} - names
    assert names and frozen  # (the frozen hosts' blocks are in waiting files of their own)
    for name in names | frozen:
        path = tmp_path / name
        data = path.read_bytes()
        path.write_bytes(data[: len(data) - 1])
        why = queue_files_damage(tmp_path, state)
        assert why is not None and f"{name} holds {len(data) - 1} bytes" in why, why
        path.unlink()
        why = queue_files_damage(tmp_path, state)
        assert why is not None and f"{name} is missing" in why, why
        path.write_bytes(data)
    assert queue_files_damage(tmp_path, state) is None


def test_a_damaged_block_of_one_url_loses_that_url_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Hosts blocked before their URLs are read get blocks of one URL each
    (read without the general loop); one whose record no longer matches its
    checksum is lost with a warning, not returned garbled, and the rest come
    out in order."""
    hosts = [f"http://h{n}.test" for n in range(10)]
    with UrlQueueManager(tmp_path, cache_size=4, fsync=False) as q:
        for host in hosts:
            q.block(host, math.inf)
        for i in range(40):
            q.put(f"{hosts[i % 10]}/page-{i}")
        assert q.lease() is None  # every host must wait: the log is read past them
        assert q.stats()["frozen"] == 40
        q.checkpoint()
        damaged = 0
        for path in tmp_path.glob("waiting-*.seg"):
            data = bytearray(path.read_bytes())
            at = data.find(b"h3.test/page-23")
            if at >= 0:
                data[at + len("h3.test/page-")] = ord("9")  # still a URL, page-93
                path.write_bytes(bytes(data))
                damaged += 1
        assert damaged == 1
        with caplog.at_level(logging.WARNING):
            for host in hosts:
                q.block(host, 0)
            found = drain(q)
    assert sorted(found) == sorted(f"{hosts[i % 10]}/page-{i}" for i in range(40) if i != 23)
    for host in hosts:
        mine = [u for u in found if u.startswith(host + "/")]
        assert mine == sorted(mine, key=lambda u: int(u.rsplit("-", 1)[1]))
    assert any("checksum" in r.message for r in caplog.records)


def test_a_full_disk_while_urls_move_to_blocks_loses_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails while the log is read past blocked hosts leaves
    the URLs read in neither the log nor a block: no checkpoint is written
    after it, and reopened, the last one and the journal hold every URL."""
    from mpcrawler.frontier.local.files import QueueFiles

    hosts = [f"http://h{n}.test" for n in range(10)]
    urls = [f"{hosts[i % 10]}/page-{i}" for i in range(40)]
    write = QueueFiles.write

    def full(self: QueueFiles, name: str, data: bytes) -> None:
        if name.startswith("waiting-"):
            raise OSError(28, "No space left on device")
        write(self, name, data)

    q = UrlQueueManager(tmp_path, cache_size=4, fsync=False)
    for host in hosts:
        q.block(host, math.inf)
    for u in urls:
        q.put(u)
    q.sync()
    monkeypatch.setattr(QueueFiles, "write", full)
    with pytest.raises(OSError):
        q.lease()  # the log is read past the blocked hosts: their blocks cannot be written
    monkeypatch.setattr(QueueFiles, "write", write)  # room again, as after freeing some
    with pytest.raises(FrontierError, match="write failed"):
        q.checkpoint()
    q.close()
    with UrlQueueManager(tmp_path, cache_size=4, fsync=False) as q:
        assert sorted(drain(q)) == sorted(urls)


def test_a_url_given_back_after_one_that_spilled_comes_after_it(tmp_path: Path) -> None:
    """A cache of one URL: a/0 is given back and spills to a block of its
    lane; a/1, given back later, must not jump ahead of it.  (Found by the
    contract test's state machine.)"""
    from mpcrawler.frontier import LocalFrontier

    f = LocalFrontier(tmp_path, cache_size=1, fsync=False)
    f.admit("http://a.test/0")
    first = f.lease(0.0)
    f.admit("http://a.test/1")
    second = f.lease(0.0)
    assert first is not None and second is not None
    f.release(first)
    f.admit("http://a.test/2", 0, 1)  # overflows the cache: a/0 goes to a block
    top = f.lease(0.0)
    assert top is not None and top.url == "http://a.test/2"
    f.release(second)
    got = [f.lease(0.0), f.lease(0.0), f.lease(0.0)]
    assert [g.url if g else None for g in got] == ["http://a.test/0", "http://a.test/1", None]
    f.close()


def test_a_checkpoints_seen_batch_is_durable_before_it_is_in_diskcache(tmp_path: Path) -> None:
    """``begin_flush`` makes the batch durable in its file; a set opened
    after a kill (this one never closed) moves it into diskcache, a torn
    last digest left out; ``flush_step`` moves it a step at a time."""
    seen = SeenSet(tmp_path / "seen", fsync=False)
    urls = [f"http://a.test/{i}" for i in range(100)]
    for u in urls:
        seen.add(u)
    seen.begin_flush()
    assert not seen.flush_step(30)  # 30 moved, 70 only in the file
    seen.add("http://a.test/new")  # after the checkpoint: the next batch's
    assert all(u in seen for u in urls) and len(seen) == 101
    batch = tmp_path / "seen" / "batch"
    assert batch.stat().st_size == 100 * 16
    again = SeenSet(tmp_path / "seen", fsync=False)  # after a kill
    assert all(u in again for u in urls) and "http://a.test/new" not in again
    assert len(again) == 100 and batch.stat().st_size == 0
    again.close()
    assert seen.flush_step(None) and batch.stat().st_size == 0

    torn = SeenSet(tmp_path / "torn", fsync=False)
    torn.add("http://b.test/1")
    torn.add("http://b.test/2")
    torn.begin_flush()
    data = (tmp_path / "torn" / "batch").read_bytes()
    (tmp_path / "torn" / "batch").write_bytes(data[:-5])  # killed while it was written
    with SeenSet(tmp_path / "torn") as reopened:
        assert len(reopened) == 1


def test_the_seen_sets_rows_are_diskcaches_own(tmp_path: Path) -> None:
    """The set writes its rows through its own connection, as diskcache's
    ``Cache.set(key, 0)`` writes them: diskcache reads each key (its value
    0), counts it once, and a key diskcache wrote is seen by the set."""
    with SeenSet(tmp_path / "seen", fsync=False) as seen:
        urls = [f"http://a.test/{i}" for i in range(50)]
        for url in urls:
            seen.add(url)
        seen.flush()
        seen.flush()  # (nothing twice)
    cache = diskcache.Cache(str(tmp_path / "seen"))
    assert len(cache) == 50
    assert all(cache.get(SeenSet.digest(url)) == 0 for url in urls)
    assert cache.get(SeenSet.digest("http://a.test/other")) is None
    cache.set(SeenSet.digest("http://a.test/by-diskcache"), 0)
    cache.close()
    with SeenSet(tmp_path / "seen", fsync=False) as seen:
        assert "http://a.test/by-diskcache" in seen and "http://a.test/7" in seen
        assert not seen.add("http://a.test/7") and len(seen) == 51


@pytest.mark.parametrize("kill_at", [2, 5, 9])
def test_a_kill_between_checkpoints_loses_no_seen_url(tmp_path: Path, kill_at: int) -> None:
    """A LocalFrontier admitting and checkpointing, its seen set's batches
    moved into diskcache a step a turn, killed wherever it is: every URL
    admitted before the last checkpoint it reported is seen when the job
    dir is opened again, and ``verify``'s checks find nothing amiss."""
    from checkpoint_child import ROUND, url

    from mpcrawler.frontier import LocalFrontier
    from mpcrawler.frontier.local.integrity import damage

    checkpoints = killed_after("checkpoint_child.py", [str(tmp_path)], "CHECKPOINT", kill_at)
    admitted = checkpoints * ROUND  # (the last reported checkpoint's, at least)
    reasons = damage(tmp_path, admitted, 1, tmp_path / "pages.jsonl", 0)
    assert not [r for r in reasons if "seen set" in r], reasons
    frontier = LocalFrontier(tmp_path, fsync=False)
    try:
        missing = [n for n in range(admitted) if url(n) not in frontier.seen]
        assert not missing, missing[:5]
    finally:
        frontier.close()


def test_the_pages_spent_read_no_url_queued_on_disk_to_count_the_embeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once --max-pages is spent, a lease asks whether an embed is still
    queued.  A frontier that opened empty counted its embeds as it admitted
    them: that question reads no URL of the 100,000 queued on disk (it read
    every one, 13 MB of the master's peak memory at 90,000).  One reopened
    with URLs queued counts them once, by a walk."""
    from mpcrawler.frontier import LocalFrontier
    from mpcrawler.frontier.base import embed_priority
    from mpcrawler.frontier.local import queue as queue_module

    read = [0]
    real = queue_module.read_items

    def counting(*args: object, **kwargs: object) -> tuple[list[object], int]:
        items, offset = real(*args, **kwargs)  # type: ignore[arg-type]
        read[0] += len(items)
        return items, offset

    monkeypatch.setattr(queue_module, "read_items", counting)
    frontier = LocalFrontier(tmp_path / "f", cache_size=1_000, fsync=False)
    try:
        frontier.set_budget(10, None)
        hosts = [f"http://h{n}.example" for n in range(10)]
        frontier.admit_many([(f"{hosts[n % 10]}/p{n}", 1, 0, "page", None) for n in range(100_000)])
        frontier.admit(f"{hosts[0]}/logo.png", 1, embed_priority(1), "embed", f"{hosts[0]}/p0")
        read[0] = 0
        leased = []
        while (item := frontier.lease(None)) is not None:
            leased.append(item)
            frontier.ack(item)
        assert [i.kind for i in leased] == ["embed"] + ["page"] * 10
        assert frontier.lease(None) is None and not frontier.budget_left()
        assert read[0] <= 1_000  # a refill of the memory's lanes at most, not the queue
    finally:
        frontier.close()
    reopened = LocalFrontier(tmp_path / "f", cache_size=1_000, fsync=False)
    try:
        reopened.admit(f"{hosts[1]}/logo.png", 1, embed_priority(1), "embed", f"{hosts[1]}/p1")
        assert reopened.embeds() == 1  # by a walk: it opened with URLs queued
        assert read[0] > 90_000
    finally:
        reopened.close()
