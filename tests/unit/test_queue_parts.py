"""The local queue's parts, each on its own (the queue as a whole is
tested in test_frontier.py and by the frontier contract): the lanes and
ready heap (lanes.py), the spills and refills (spill.py), and the
checkpoint and reopening (checkpoint.py), on real files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mpcrawler.frontier.base import FOREVER, UrlInfo
from mpcrawler.frontier.local.blocks import BlockStore
from mpcrawler.frontier.local.checkpoint import Checkpoints
from mpcrawler.frontier.local.cold import ColdHosts
from mpcrawler.frontier.local.files import QueueFiles
from mpcrawler.frontier.local.journal import JournalWriter
from mpcrawler.frontier.local.lanes import Guard, Lanes
from mpcrawler.frontier.local.segments import SegmentLog
from mpcrawler.frontier.local.spill import Spiller


@dataclass
class Parts:
    lanes: Lanes
    spill: Spiller
    checkpoints: Checkpoints
    journal: JournalWriter
    taken: dict[int, UrlInfo]
    next_seq: int

    def put(self, url: str, priority: int = 0) -> UrlInfo:
        item = UrlInfo(url, 0, priority, self.next_seq)
        self.journal.put(item.seq, priority, 0, url.encode(), 0, b"")
        self.next_seq += 1
        self.spill.place(item)
        return item

    def drain(self) -> list[str]:
        """Every URL in lease order (refilling from the log as the queue does)."""
        urls = []
        while True:
            self.lanes.ready(0.0)
            if self.spill.low():
                self.spill.refill()
            item = self.lanes.pop_best()
            if item is None:
                if not self.spill.log.count:
                    return urls
                self.spill.refill()
                continue
            urls.append(item.url)

    def close(self) -> None:
        self.spill.store.close()
        self.spill.cold.close()
        self.spill.log.close(discard=False)
        self.journal.close(discard=False)


def parts(directory: Path, cache_size: int) -> Parts:
    files = QueueFiles(directory, False)
    store, cold, guard = BlockStore(files), ColdHosts(directory, False), Guard()
    lanes = Lanes(store, cold, guard, read_batch=max(1, cache_size // 4))
    taken: dict[int, UrlInfo] = {}
    spill = Spiller(lanes, SegmentLog(files), store, cold, taken, guard, cache_size)
    journal = JournalWriter()
    checkpoints = Checkpoints(files, lanes, spill, journal)
    next_seq, _ = checkpoints.load(taken)
    return Parts(lanes, spill, checkpoints, journal, taken, next_seq)


def item(url: str, seq: int, priority: int = 0) -> UrlInfo:
    return UrlInfo(url, 0, priority, seq)


def test_lanes_hand_out_by_priority_then_age_and_skip_blocked_hosts(tmp_path: Path) -> None:
    p = parts(tmp_path, cache_size=100)
    lanes = p.lanes
    for seq, (url, priority) in enumerate(
        [("http://a/1", 0), ("http://b/1", 0), ("http://a/2", 5), ("http://c/1", 5)]
    ):
        lanes.to_memory(item(url, seq, priority))
    lanes.block("http://a", FOREVER)
    assert [lanes.pop_best().url for _ in range(2)] == ["http://c/1", "http://b/1"]  # type: ignore[union-attr]
    assert lanes.pop_best() is None  # a's URLs wait for it
    lanes.block("http://a", 0)
    lanes.to_memory(item("http://a/3", 4, 0))
    got = lanes.pop_best()
    assert got is not None and got.url == "http://a/2"
    lanes.give_back(got)  # back to its place, at the head
    first = lanes.pop_best()
    assert first is not None and first.url == "http://a/2"
    lanes.give_back(first)
    got = lanes.pop_best()
    assert got is not None and got.url == "http://a/2"
    first = lanes.pop_best()
    assert first is not None and first.url == "http://a/1"
    lanes.give_back(first)  # before a/3, of the same lane
    assert [lanes.pop_best().url for _ in range(2)] == ["http://a/1", "http://a/3"]  # type: ignore[union-attr]
    assert lanes.mem == 0 and lanes.pop_best() is None
    p.close()


def test_lanes_drop_what_matches_in_memory_and_tell_each_seq(tmp_path: Path) -> None:
    p = parts(tmp_path, cache_size=100)
    for seq, url in enumerate(["http://a/x1", "http://a/2", "http://b/x3", "http://b/4"]):
        p.lanes.to_memory(item(url, seq))
    gone: list[int] = []
    assert p.lanes.drop(lambda url: "/x" in url, gone.append) == 2
    assert sorted(gone) == [0, 2] and p.lanes.mem == 2
    assert sorted(i.url for i in p.lanes.in_memory()) == ["http://a/2", "http://b/4"]
    p.close()


def test_the_spiller_keeps_memory_bounded_and_the_order_exact(tmp_path: Path) -> None:
    p = parts(tmp_path, cache_size=8)
    urls = [f"http://h{n % 5}.test/{n}" for n in range(60)]
    for url in urls:
        p.put(url, priority=0)
        assert p.lanes.mem <= 8
    assert p.spill.log.count > 0 and p.spill.spilled_total > 0  # they went to the log
    assert p.drain() == urls  # one priority: the order they were put in
    p.close()


def test_the_spiller_freezes_blocked_hosts_that_must_wait(tmp_path: Path) -> None:
    p = parts(tmp_path, cache_size=8)
    for n in range(40):
        p.put(f"http://slow{n % 4}.test/{n}")
    for n in range(4):
        p.lanes.block(f"http://slow{n}.test", FOREVER)
    p.spill.spill_hosts(list(p.lanes.mem_hosts.values()))
    assert p.lanes.mem == 0 and p.spill.cold.urls > 0  # blocked with nothing in memory: frozen
    for n in range(4):
        p.lanes.block(f"http://slow{n}.test", 0)
    assert sorted(p.drain()) == sorted(f"http://slow{n % 4}.test/{n}" for n in range(40))
    p.close()


def test_a_checkpoint_reopens_as_it_was_and_the_journal_replays_after_it(
    tmp_path: Path,
) -> None:
    p = parts(tmp_path, cache_size=4)
    urls = [f"http://h{n % 3}.test/{n}" for n in range(20)]
    for url in urls[:12]:
        p.put(url)
    p.checkpoints.write(p.next_seq, p.taken)
    for url in urls[12:]:
        p.put(url)  # in the journal only
    p.journal.sync()
    p.close()
    again = parts(tmp_path, cache_size=4)
    assert again.next_seq == 20
    assert again.drain() == urls
    again.close()
