"""The ContentIndex contract, against each frontier's index (local SQLite,
one Redis, a partitioned crawl on a Redis Cluster): a page's text met
before under another URL is its duplicate, one within NEAR_BITS of a page
of its host its near duplicate, its own URL never; a page without a simhash (no
--near-duplicates) is known by its digest only; what was added stays after
a reopening."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis_server
from test_frontier_contract import IMPLEMENTATIONS

from mpcrawler.content.index import Met, Page

NAMES = ["local", "redis", "redis-cluster"]


@pytest.fixture(params=NAMES)
def index_of(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Opens the index of one crawl (again: a reopening), closing each at the end."""
    impl = IMPLEMENTATIONS[request.param]
    crawl = f"content-{uuid.uuid4().hex[:8]}"  # a crawl name of its own, in Redis
    opened: list[Any] = []

    def index() -> Any:
        frontier = impl.open(str(tmp_path / crawl), 100)
        opened.append(frontier)
        return frontier.content_index()

    yield index
    for frontier in opened:
        frontier.close()
    if impl.durable_at_once:
        redis_server.forget(crawl)


def page(url: str, digest: int, simhash: int | None) -> Page:
    host = url.split("/", 3)[2]
    return Page(url, f"http://{host}", f"{digest:032x}", simhash)


def test_a_text_met_again_names_the_first_url_that_had_it(index_of: Callable[[], Any]) -> None:
    index = index_of()
    first = index.check([page("http://a.test/1", 1, 0x1111), page("http://a.test/2", 1, 0x1111)])
    assert first == [Met(), Met("http://a.test/1")]  # the second met the first, in one batch
    assert index.check([page("http://b.test/x", 1, 0xFFFF << 40)]) == [Met("http://a.test/1")]
    assert index.check([page("http://a.test/1", 1, 0x1111)]) == [Met()]  # its own URL: no
    again = index_of()  # reopened: what was added stays
    assert again.check([page("http://c.test/", 1, 0)]) == [Met("http://a.test/1")]


def test_a_near_text_names_the_closest_page_of_its_host(index_of: Callable[[], Any]) -> None:
    index = index_of()
    base = 0x0123_4567_89AB_CDEF
    assert index.check([page("http://a.test/1", 1, base)]) == [Met()]
    assert index.check([page("http://a.test/2", 2, base ^ 0b111)]) == [Met(None, "http://a.test/1")]
    closest = index.check([page("http://a.test/3", 3, base ^ 0b11)])  # 1: 2 bits, 2: 1 bit
    assert closest == [Met(None, "http://a.test/2")]
    assert index.check([page("http://b.test/1", 4, base)]) == [Met()]  # another host
    far = base ^ (1 << 63 | 1 << 47 | 1 << 31 | 1 << 15)  # 4 bits, one in each band
    assert index.check([page("http://a.test/4", 5, far)]) == [Met()]
    again = index_of()
    assert again.check([page("http://a.test/5", 6, base ^ 1 << 40)]) == [
        Met(None, "http://a.test/1")
    ]


def test_a_page_without_a_simhash_is_known_by_its_digest_only(
    index_of: Callable[[], Any],
) -> None:
    """No --near-duplicates: the page is a duplicate by its digest, is near
    nothing, and is in no piece: a later page whose simhash is next to any
    it could have been given (0) finds no near page, before a reopening and
    after (the local index reads its log again then)."""
    index = index_of()
    assert index.check([page("http://a.test/1", 1, None), page("http://a.test/2", 1, None)]) == [
        Met(),
        Met("http://a.test/1"),
    ]
    assert index.check([page("http://a.test/3", 2, None)]) == [Met()]
    assert index.check([page("http://a.test/4", 3, 1)]) == [Met()]
    assert index.read == 0 and index.compared == 0
    again = index_of()  # reopened: its digests stay, and still in no piece
    assert again.check([page("http://b.test/", 2, None)]) == [Met("http://a.test/3")]
    assert again.check([page("http://a.test/5", 4, 0b11)]) == [Met(None, "http://a.test/4")]
    assert again.compared == 1


def test_redis_keeps_no_piece_of_a_page_without_a_simhash(tmp_path: Path) -> None:
    """The shared index writes no ``near:HOST`` hash for pages checked
    without a simhash (its memory holds their digests only)."""
    crawl = f"content-{uuid.uuid4().hex[:8]}"
    frontier = IMPLEMENTATIONS["redis"].open(str(tmp_path / crawl), 100)
    try:
        index = frontier.content_index()
        index.check([page(f"http://a.test/{k}", k, None) for k in range(1, 6)])
        keys = [key.decode() for key in redis_server.client(redis_server.url()).keys(f"*{crawl}*")]
        assert any(":dig:" in key for key in keys) and not any(":near:" in key for key in keys)
    finally:
        frontier.close()
        redis_server.forget(crawl)
