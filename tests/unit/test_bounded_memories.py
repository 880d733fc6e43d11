"""The bounded memories of the crawl (links a worker sent, refusals it
reported, the seen set's and the host counts' recent keys) drop their
oldest key in one step, however long the crawl.

A dict emptied from its front (``del d[next(iter(d))]``) looks O(1) and is
not: CPython's dict leaves a hole for each deleted entry and ``iter`` walks
the holes from the start until the next resize, so past its bound each
insert cost 25-40 us instead of 1 (measured at 200,000 and 1,000,000 keys
through a bound of 65,536: a worker's link memory on a site bigger than
it).  The memories are OrderedDicts (``popitem(last=False)``: a linked
list), or two generations of sets (:class:`~mpcrawler.recent.Recent`,
the older dropped whole).  Counted: every memory holds at most its bound
after 100,000 keys (an OrderedDict exactly its bound); the master's
memories take a few bytes a key beside it; and the idiom is kept out of
the package."""

from __future__ import annotations

import re
import tracemalloc
from collections import OrderedDict
from pathlib import Path

import mpcrawler
from mpcrawler.frontier.local.hostcounts import FILE, HostCounts
from mpcrawler.frontier.local.seen import RECENT_SIZE, SeenSet
from mpcrawler.recent import Recent
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
    assert BOUND // 2 <= len(seen._keys) <= BOUND
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
    assert BOUND // 2 <= len(seen._recent) <= BOUND
    assert SeenSet.digest(f"http://h.test/{KEYS - 1}") in seen._recent
    assert SeenSet.digest("http://h.test/0") not in seen._recent
    seen.close()
    counts = HostCounts(tmp_path / FILE, recent_size=BOUND)
    for i in range(KEYS):
        counts._remember(f"http://h{i}.test", 1)
    assert isinstance(counts._recent, OrderedDict) and len(counts._recent) == BOUND
    counts.close()


def test_a_recent_memory_holds_its_bound_and_drops_a_generation_at_once() -> None:
    recent: Recent[int] = Recent(BOUND)
    sizes = []
    for key in range(KEYS):
        recent.add(key)
        sizes.append(len(recent))
    assert max(sizes) <= BOUND and min(sizes[BOUND:]) >= BOUND // 2
    assert KEYS - 1 in recent and KEYS - BOUND // 2 in recent and 0 not in recent


def test_the_masters_memories_take_a_few_bytes_a_key(tmp_path: Path) -> None:
    """Beside the keys, which the crawl drops: FirstSeen keeps a hash (its
    100,000 refusals were 17 MB as an OrderedDict of URLs), and the seen
    set's recent digests a set's slot each (an OrderedDict's node was 88
    bytes).  Measured with tracemalloc at 200,000 keys, past both bounds."""
    urls = [f"http://127.0.0.2:8000/offsite/{i}" for i in range(2 * KEYS)]
    tracemalloc.start()
    try:
        seen = FirstSeen()
        for url in urls:
            seen.first(url)
        refusals = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        digests = [SeenSet.digest(url) for url in urls]
        before = tracemalloc.get_traced_memory()[0]
        recent: Recent[bytes] = Recent(RECENT_SIZE)
        for digest in digests:
            recent.add(digest)
        found = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert refusals < 6 << 20  # 3.7 MB measured (an OrderedDict of the URLs: 8.7, and the URLs)
    assert found < 48 * RECENT_SIZE  # 34 bytes a key measured (an OrderedDict: 144)
