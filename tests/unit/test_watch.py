"""The web view's parts without a server: the live file's bounded view, the
journal read backwards, and the buttons' commands checked and sent."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mpcrawler.control.commands import parse_command
from mpcrawler.control.inbox import send_to_job
from mpcrawler.master.counters import Counters
from mpcrawler.master.request import Request
from mpcrawler.master.scheduler import Scheduler
from mpcrawler.messages import PageResult
from mpcrawler.output.jobdir import JobState
from mpcrawler.settings import Settings
from mpcrawler.watch import reader
from mpcrawler.watch.live import HISTORY, TOP, LiveFile, Parts, view
from mpcrawler.watch.reader import JobSource, lines_backwards


class Counting(dict):  # type: ignore[type-arg]
    """A dict that counts the walks over it (iteration of keys, values, items)."""

    walks = 0

    def __iter__(self) -> Any:
        Counting.walks += 1
        return super().__iter__()

    def values(self) -> Any:
        Counting.walks += 1
        return super().values()

    def items(self) -> Any:
        Counting.walks += 1
        return super().items()

    def keys(self) -> Any:
        Counting.walks += 1
        return super().keys()


def parts_of(scheduler: Scheduler, in_flight: dict[int, Request], tmp: Path) -> Parts:
    pool = SimpleNamespace(in_flight=in_flight, workers={}, restarts=0)
    frontier = SimpleNamespace(queued_of=lambda key: 7)
    state = JobState(paused_hosts=[f"p{i}.test" for i in range(100_000)])
    settings = Settings(workers=1, max_pages=1000)
    return Parts(settings, Counters(), scheduler, pool, frontier, state, tmp / "pages.jsonl")  # type: ignore[arg-type]


def test_the_live_view_reads_no_list_of_every_host(tmp_path: Path) -> None:
    """After 100,000 hosts in memory, 100,000 slowed down and 100,000
    paused, a view walks none of the scheduler's hosts or groups, and each
    of its lists is at most TOP long."""
    scheduler = Scheduler(clock=lambda: 0.0, robots=False)
    for i in range(100_000):
        request = scheduler.new_request(f"http://h{i}.test/")
        scheduler.submit(request)
        scheduler.answered(request, PageResult(0, request.url, status=429))
    in_flight = {i: scheduler.new_request(f"http://h{i % 50}.test/x{i}") for i in range(64)}
    scheduler.hosts = Counting(scheduler.hosts)
    scheduler.groups = Counting(scheduler.groups)
    Counting.walks = 0
    live = view(parts_of(scheduler, in_flight, tmp_path), {"queued": 0}, 10.0, 0.0)
    assert Counting.walks == 0
    hosts = live["hosts"]
    assert len(hosts["busiest"]) == TOP and len(hosts["slowed"]) == TOP
    assert len(hosts["paused"]) == TOP and hosts["paused_count"] == 100_000
    assert hosts["busiest"][0]["in_flight"] == 2 and hosts["busiest"][0]["queued"] == 7
    assert hosts["slowed"][0]["host"] == "h99999.test"  # the latest first
    assert live["budget"]["pages_left"] == 1000
    json.dumps(live)  # plain data


def test_the_live_file_keeps_a_bounded_history_and_says_when_it_ended(tmp_path: Path) -> None:
    scheduler = Scheduler(clock=lambda: 0.0, robots=False)
    live = LiveFile(tmp_path, parts_of(scheduler, {}, tmp_path), started=0.0)
    for second in range(HISTORY + 50):
        live.update(float(second), {"queued": 0})
    written = json.loads((tmp_path / "live.json").read_text())
    assert len(written["history"]) == HISTORY and written["running"] is True
    assert written["history"][-1][0] == HISTORY + 49
    live.update(HISTORY + 49.5, {})  # not due yet: not written
    assert len(live.history) == HISTORY and live.history[-1][0] == HISTORY + 49
    live.ended({"queued": 0}, "finished")
    written = json.loads((tmp_path / "live.json").read_text())
    assert written["running"] is False and written["state"] == "finished"
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_live_file_that_cannot_be_written_is_skipped(tmp_path: Path) -> None:
    scheduler = Scheduler(clock=lambda: 0.0, robots=False)
    live = LiveFile(tmp_path / "gone", parts_of(scheduler, {}, tmp_path))
    live.update(0.0, {})
    live.update(5.0, {})
    assert live.failed and len(live.history) == 2


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_the_journal_read_backwards_gives_every_whole_line(tmp_path: Path, chunk: int) -> None:
    path = tmp_path / "pages.jsonl"
    lines = [json.dumps({"url": f"http://h.test/{i}", "title": "t" * (i % 13)}) for i in range(300)]
    path.write_text("\n".join(lines) + "\n" + '{"url": "torn')  # a kill cut the last
    found = list(lines_backwards(path, chunk=chunk))
    assert [line.decode() for line in found[1:]] == lines[::-1]
    assert found[0] == b'{"url": "torn'


def test_a_search_reads_a_bounded_part_of_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = tmp_path / "job"
    job.mkdir()
    rows = [
        {"url": f"http://h.test/{i}", "title": "Old" if i < 500 else "New"} for i in range(1000)
    ]
    (job / "pages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    source = JobSource(job)
    last = source.pages(limit=3)["pages"]
    assert [p["url"] for p in last] == [f"http://h.test/{i}" for i in (999, 998, 997)]
    found = source.pages("old", limit=1000)
    assert len(found["pages"]) == 500 and found["complete"]
    monkeypatch.setattr(reader, "MAX_SCAN", 20_000)  # about the newest 450 records
    bounded = source.pages("old", limit=1000)
    assert bounded["pages"] == [] and bounded["complete"]
    assert len(source.pages("new", limit=1000)["pages"]) < 500


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("pause", {}),
        ("set", {"delay": 0.5}),
        ("pause-host", {"host": "HTTP://Example.com:81/x"}),
        ("resume-host", {"host": "127.0.0.2"}),
    ],
)
def test_a_buttons_command_goes_to_the_inbox_as_sent(
    tmp_path: Path, name: str, args: dict[str, Any]
) -> None:
    ident, now = send_to_job(tmp_path, name, args, running=False)
    assert now == "the crawl is not running; applied at its next start"
    [written] = (tmp_path / "control" / "inbox").iterdir()
    data = json.loads(written.read_text())
    assert data["id"] == ident and (data["command"], data["args"]) == (name, args)
    assert parse_command(data).name == name


@pytest.mark.parametrize(
    ("name", "args", "why"),
    [
        ("pause", {"x": 1}, "takes no arguments"),
        ("set", {"delay": -1}, "must not be negative"),
        ("set", {"speed": 3}, "not NAME=VALUE"),
        ("pause-host", {}, "need a HOST"),
        ("explode", {}, "unknown command"),
        ("stop", {}, "is not running: nothing to stop"),
    ],
)
def test_a_bad_command_is_refused_in_one_line_and_not_written(
    tmp_path: Path, name: str, args: Any, why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        send_to_job(tmp_path, name, args, running=False)
    assert not (tmp_path / "control").exists()
