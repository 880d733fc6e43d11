"""The per-host page counts: on disk, written by what changed, kept across runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpcrawler.errors import JobDamaged
from mpcrawler.frontier import LocalFrontier
from mpcrawler.frontier.local.hostcounts import FILE, HostCounts
from mpcrawler.frontier.local.integrity import damage


def test_counts_survive_a_reopening_and_a_flush_writes_only_what_changed(tmp_path: Path) -> None:
    counts = HostCounts(tmp_path / FILE, recent_size=2)
    for i in range(100):
        counts.add(f"http://h{i}.test")
    counts.add("http://h0.test")
    counts.flush()
    before = counts._db.total_changes
    counts.add("http://h7.test")
    counts.add("http://new.test")
    counts.flush()
    assert counts._db.total_changes - before == 2  # not the 101 hosts again
    assert len(counts) == 101
    counts.close()
    again = HostCounts(tmp_path / FILE, recent_size=2)
    assert [again.count(f"http://h{i}.test") for i in (0, 1, 7)] == [2, 1, 2]
    assert again.count("http://unknown.test") == 0 and len(again) == 101
    assert len(again._recent) <= 2  # memory holds the counts not written, and a few read
    again.close()


def test_the_per_host_budget_holds_across_runs_without_job_json(tmp_path: Path) -> None:
    frontier = LocalFrontier(tmp_path, fsync=False)
    frontier.set_budget(None, 2)
    assert [frontier.admit(f"http://a.test/{i}") for i in range(3)] == [True, True, False]
    frontier.close()
    frontier = LocalFrontier(tmp_path, fsync=False)
    frontier.set_budget(None, 2)  # nothing carried by the caller: the counts are on disk
    assert not frontier.admit("http://a.test/3")
    assert frontier.admit("http://b.test/0")
    frontier.close()


def test_an_older_jobs_counts_are_taken_once(tmp_path: Path) -> None:
    frontier = LocalFrontier(tmp_path, fsync=False)
    frontier.set_budget(None, 2, host_pages={"http://a.test": 2})  # from an older job.json
    assert not frontier.admit("http://a.test/x")
    frontier.close()
    frontier = LocalFrontier(tmp_path, fsync=False)
    frontier.set_budget(None, 2, host_pages={"http://a.test": 0})  # counted here already
    assert not frontier.admit("http://a.test/y")
    frontier.close()


def test_puts_replayed_after_a_kill_are_counted_again(tmp_path: Path) -> None:
    frontier = LocalFrontier(tmp_path, fsync=False)
    frontier.set_budget(None, 3)
    frontier.admit("http://a.test/0")
    frontier.checkpoint()
    frontier.admit("http://a.test/1")
    frontier.admit("http://a.test/2")
    frontier.sync()  # in the journal, not checkpointed: a kill now (never closed)
    frontier = LocalFrontier(tmp_path, fsync=False)
    frontier.set_budget(None, 3)
    assert frontier.counts.count("http://a.test") == 3
    assert not frontier.admit("http://a.test/3")
    frontier.close()


def test_damaged_counts_are_refused_and_said(tmp_path: Path) -> None:
    (tmp_path / FILE).write_bytes(b"this is not a database" * 100)
    with pytest.raises(JobDamaged, match=r"per-host page counts .* --repair"):
        HostCounts(tmp_path / FILE)
    reasons = damage(tmp_path, 0, 1, tmp_path / "pages.jsonl", 0)
    assert any("per-host page counts" in r for r in reasons)


def test_the_robots_txt_a_job_read_is_kept_a_line_a_host(tmp_path: Path) -> None:
    """check-url reads what the crawl kept: the last answer of each host,
    and an older job dir's file a host."""
    from mpcrawler.robots.cache import FILE as ROBOTS_FILE
    from mpcrawler.robots.cache import RobotsCache

    cache = RobotsCache(tmp_path)
    cache.save("http://a.test", "User-agent: *\nDisallow: /old\n")
    cache.save("http://a.test:8080", "")
    cache.save("http://a.test", "User-agent: *\nDisallow: /new\n")
    cache.close()
    assert len((tmp_path / ROBOTS_FILE).read_text().splitlines()) == 3
    assert not (tmp_path / "robots").exists()  # no file a host
    again = RobotsCache(tmp_path)
    assert again.load("http://a.test") == "User-agent: *\nDisallow: /new\n"
    assert again.load("http://a.test:8080") == ""
    assert again.load("http://b.test") is None
    (tmp_path / "robots").mkdir()
    (tmp_path / "robots" / "http%3A%2F%2Fb.test.txt").write_text("User-agent: *\n")
    assert again.load("http://b.test") == "User-agent: *\n"
