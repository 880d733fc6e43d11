"""The bounded memories of the crawl (links a worker sent, refusals it
reported, the seen set's and the host counts' recent keys) drop their
oldest key in one step, however long the crawl.

A dict emptied from its front (``del d[next(iter(d))]``) looks O(1) and is
not: CPython's dict leaves a hole for each deleted entry and ``iter`` walks
the holes from the start until the next resize, so past its bound each
insert cost 25-40 us instead of 1 (measured at 200,000 and 1,000,000 keys
through a bound of 65,536: a worker's link memory on a site bigger than
it).  The memories are OrderedDicts (``popitem(last=False)``: a linked
list).  Counted: every memory holds at most its bound and evicted exactly
the rest after 100,000 keys; and the idiom is kept out of the package."""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

import mpcrawler
from mpcrawler.frontier.local.hostcounts import FILE, HostCounts
from mpcrawler.frontier.local.seen import SeenSet
from mpcrawler.web.filters import FirstSeen
from mpcrawler.worker.links import SentLinks

KEYS = 100_000
BOUND = 1_000


def test_no_dict_is_emptied_from_its_front() -> None:
    idiom = re.compile(r"next\(iter\(")
    found = [
        f"{path}:{n}"
        for path in Path(mpcrawler.__file__).parent.rglob("*.py")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if idiom.search(line) and "del " in line
    ]
    assert found == []


def test_first_seen_and_sent_links_hold_their_bound_at_100000_keys() -> None:
    seen = FirstSeen(size=BOUND)
    assert all(seen.first(f"k{i}") for i in range(KEYS))
    assert isinstance(seen._keys, OrderedDict) and len(seen._keys) == BOUND
    assert not seen.first(f"k{KEYS - 1}") and seen.first("k0")  # the newest kept, the oldest not
    sent = SentLinks(size=BOUND)
    for i in range(0, KEYS, 10):
        assert len(sent.first_times([(f"u{j}", 0) for j in range(i, i + 10)], 1)) == 10
        sent.first_times([(f"u{j}", 0) for j in range(i, i + 10)], 2)  # deeper: held back
    assert isinstance(sent._depths, OrderedDict) and len(sent._depths) == BOUND
    assert isinstance(sent._held, OrderedDict) and len(sent._held) == BOUND


def test_the_frontiers_recent_keys_hold_their_bound_at_100000_keys(tmp_path: Path) -> None:
    seen = SeenSet(tmp_path / "seen", recent_size=BOUND)
    for i in range(KEYS):
        seen._remember(SeenSet.digest(f"http://h.test/{i}"))
    assert isinstance(seen._recent, OrderedDict) and len(seen._recent) == BOUND
    seen.close()
    counts = HostCounts(tmp_path / FILE, recent_size=BOUND)
    for i in range(KEYS):
        counts._remember(f"http://h{i}.test", 1)
    assert isinstance(counts._recent, OrderedDict) and len(counts._recent) == BOUND
    counts.close()
