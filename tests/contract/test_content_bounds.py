"""A page's content check costs the same whatever its host holds: after
100,000 pages of one host, near-identical (every page in the same pieces)
or distinct, a page reads at most BANDS * PIECE_KEEP entries of pieces and
compares at most as many candidates, in the local index and in Redis's.
Counted, not timed.  (The local index holds the pieces it used last in
memory: the rows it reads a page are those of pieces it does not hold.)"""

from __future__ import annotations

import errno
import os
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mpcrawler.content.fingerprint import BANDS
from mpcrawler.content.index import PIECE_KEEP, Met, Page
from mpcrawler.frontier.local.content import LocalContentIndex

PAGES = 100_000
BATCH = 1_000  # pages a check (the settling's batches are smaller: a bound a page holds for any)
BOUND = BANDS * PIECE_KEEP  # entries read and candidates compared a page, at most
HOST = "http://forum.test"


def near_identical(n: int, start: int = 0) -> Iterator[Page]:
    """Pages of one host, each its own text, whose simhashes differ in one
    low bit at most: every page falls in the same three pieces or more."""
    for i in range(start, start + n):
        yield Page(f"{HOST}/t/{i}", HOST, f"{i:032x}", 0x5EED_F00D_CAFE_0000 | (i & 1))


def distinct(n: int, start: int = 0) -> Iterator[Page]:
    rng = random.Random(start)
    for i in range(start, start + n):
        yield Page(f"{HOST}/d/{i}", HOST, f"{i + 10**9:032x}", rng.getrandbits(64))


@pytest.fixture(params=["local", "redis"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "local":
        local = LocalContentIndex(tmp_path)
        yield local
        local.close()
        return
    import redis_server

    from mpcrawler.frontier.redis.frontier import RedisFrontier

    crawl = f"bounds-{tmp_path.name}"
    frontier = RedisFrontier(redis_server.url(), crawl, "n1")
    yield frontier.content_index()
    frontier.close()
    redis_server.forget(crawl)


def fill(index: Any, pages: Iterator[Page]) -> None:
    batch: list[Page] = []
    for page in pages:
        batch.append(page)
        if len(batch) == BATCH:
            index.check(batch)
            batch = []
    if batch:
        index.check(batch)


def per_page(index: Any, pages: list[Page]) -> tuple[int, int, list[Met]]:
    """The most entries read and candidates compared by any of ``pages``,
    checked one at a time, and what each met."""
    read = compared = 0
    met = []
    for page in pages:
        before = index.read, index.compared
        met += index.check([page])
        read = max(read, index.read - before[0])
        compared = max(compared, index.compared - before[1])
    return read, compared, met


@pytest.mark.slow
def test_a_host_of_100000_near_identical_pages_costs_a_page_what_its_first_did(
    index: Any,
) -> None:
    fill(index, near_identical(100))
    early = per_page(index, list(near_identical(20, start=100)))
    fill(index, near_identical(PAGES - 120, start=120))
    read, compared, met = per_page(index, list(near_identical(20, start=PAGES)))
    assert read <= BOUND and 0 < compared <= BOUND
    assert (read, compared) == early[:2]  # the same at the 100,000th page as at the 100th
    assert all(m.near_duplicate_of for m in met)  # still found near


@pytest.mark.slow
def test_a_host_of_100000_distinct_pages_costs_a_page_what_its_first_did(index: Any) -> None:
    fill(index, distinct(PAGES))
    read, compared, met = per_page(index, list(distinct(100, start=PAGES)))
    assert read <= BOUND and compared <= BOUND
    assert not any(m.near_duplicate_of for m in met)


def test_a_piece_keeps_its_newest_pages(index: Any) -> None:
    """A page reached only through one piece is found while that piece holds
    it, and no longer once PIECE_KEEP newer pages came into the piece."""
    base = 0x0123_4567_89AB_CDEF
    first = Page(f"{HOST}/first", HOST, f"{1:032x}", base)
    far = base ^ 0xFF ^ 0xFF << 16 ^ 0xFF << 32  # 24 bits off: only the top piece shared
    newer = [Page(f"{HOST}/n/{i}", HOST, f"{i + 2:032x}", far) for i in range(PIECE_KEEP - 1)]
    probe = base ^ 1 ^ 1 << 16 ^ 1 << 32  # 3 bits off the first, in the pieces it does not share
    index.check([first, *newer[:-1]])  # the top piece: the first and 14 newer
    again = index.check([Page(f"{HOST}/probe", HOST, f"{100:032x}", probe)])
    assert again == [Met(None, first.url)]  # the piece: 16, the probe's own entry the newest
    index.check([newer[-1]])  # 17: the first is forgotten
    assert index.check([Page(f"{HOST}/probe", HOST, f"{101:032x}", probe)]) == [Met()]


class _FullDisk:
    """A connection whose writes of pieces fail (a full disk), the rest passed on."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def executemany(self, sql: str, rows: Any) -> Any:
        if "pieces" in sql:
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def test_a_batch_whose_log_append_failed_leaves_nothing_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk at the log's append: the batch is in neither the memory
    nor the log (no torn frame), and the pages before it stay in both."""
    index = LocalContentIndex(tmp_path)
    base = 0x0123_4567_89AB_CDEF
    first = Page(f"{HOST}/a", HOST, f"{1:032x}", base)
    assert index.check([first]) == [Met()]
    failed = Page(f"{HOST}/b", HOST, f"{2:032x}", base ^ 1)
    real_write = os.write

    def half_then_full(fd: int, data: Any) -> int:
        if fd == index.log.fd:
            monkeypatch.setattr(os, "write", full)
            return real_write(fd, bytes(data)[: len(data) // 2])
        return real_write(fd, data)

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError):
        index.check([failed])
    monkeypatch.setattr(os, "write", real_write)
    later = Page(f"{HOST}/c", HOST, f"{3:032x}", base ^ 1 ^ 4)  # a: 2 bits off, b: 1
    assert index.check([later]) == [Met(None, first.url)]
    assert [page.url for _, _, page in index.log.read()] == [first.url, later.url]
    assert index.check([failed]) == [Met(None, first.url)]  # its text is new: not its own copy
    index.close()


def test_a_failed_write_keeps_the_pages_for_the_next(tmp_path: Path) -> None:
    """The file's write fails (a full disk): the pages stay held and logged,
    the next checkpoint writes them, and an opening after a kill takes the
    log's pages it lacks, each once."""
    index = LocalContentIndex(tmp_path)
    base = 0x0123_4567_89AB_CDEF
    pages = [Page(f"{HOST}/{i}", HOST, f"{i:032x}", base ^ 1 << i) for i in range(3)]
    index.check(pages[:2])
    db, index.db = index.db, _FullDisk(index.db)
    with pytest.raises(sqlite3.OperationalError):
        index.checkpoint()
    index.db = db
    assert index.check([pages[2]]) == [Met(None, pages[0].url)]  # still held
    assert len(list(index.log.read())) == 3  # still logged
    index.checkpoint()
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 3
    assert index.log.size == 0
    # A kill after the file took a page and before the log was emptied.
    late = Page(f"{HOST}/late", HOST, f"{9:032x}", base ^ 1 << 9)
    index.check([late])
    index._write_file()  # the file has it; the log still does
    logged = index.log.size
    index.log.close()
    index.db.close()
    assert logged > 0
    again = LocalContentIndex(tmp_path)
    assert again.db.execute("SELECT count(*) FROM pages").fetchone()[0] == 4
    assert again.log.size == 0
    assert again.read == 0  # the log's page the file had was taken no second time
    assert again.check([Page(f"{HOST}/x", HOST, f"{9:032x}", 0)]) == [Met(late.url)]
    again.close()


def test_a_kill_loses_no_page_the_log_holds(tmp_path: Path) -> None:
    """Pages checked and never written (a kill before any checkpoint) are
    met after the next opening: their digests and their pieces."""
    index = LocalContentIndex(tmp_path)
    base = 0x0123_4567_89AB_CDEF
    index.check([Page(f"{HOST}/a", HOST, f"{1:032x}", base)])
    index.log.close()
    index.db.close()  # (killed: nothing written)
    again = LocalContentIndex(tmp_path)
    assert again.check([Page(f"{HOST}/copy", HOST, f"{1:032x}", 5)]) == [Met(f"{HOST}/a")]
    assert again.check([Page(f"{HOST}/near", HOST, f"{2:032x}", base ^ 3)]) == [
        Met(None, f"{HOST}/a")
    ]
    again.close()


def test_a_close_whose_write_failed_leaves_the_pages_to_the_next_opening(tmp_path: Path) -> None:
    """A full disk at the stop: ``close`` does not raise (the crawl's stop
    goes on), and the next opening takes the log's pages into the file."""
    index = LocalContentIndex(tmp_path)
    index.check([Page(f"{HOST}/a", HOST, f"{1:032x}", 0x0123_4567_89AB_CDEF)])
    index.db = _FullDisk(index.db)
    index.close()
    again = LocalContentIndex(tmp_path)
    assert again.db.execute("SELECT count(*) FROM pages").fetchone()[0] == 1
    assert again.check([Page(f"{HOST}/b", HOST, f"{1:032x}", 0)]) == [Met(f"{HOST}/a")]
    again.close()
