"""The revisit half of the Frontier contract, against every implementation:
"this URL is due at time T" (``schedule``), queued again once
``time.time() >= T + lag`` and ``T < before`` (``set_revisits``), its
state given back with its lease; a reopen and a crash keep every schedule.

No test waits for a clock: a URL is made due by its T (in the past or the
future) and by the lag, never by sleeping.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_frontier_contract import IMPLEMENTATIONS

from mpcrawler.frontier import Revisit

HOUR = 3600.0


def drain(frontier: Any) -> list[Any]:
    """Every URL leasable now (each leased, not acked)."""
    items = []
    while (item := frontier.lease(0.0, want=8)) is not None:
        items.append(item)
    return items


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def opened(request: Any, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Opens (and reopens) one implementation's frontier in one place."""
    implementation = IMPLEMENTATIONS[request.param]
    directory = str(tmp_path / f"f-{request.param}-{time.monotonic_ns()}")
    opened: list[Any] = []

    def open_() -> Any:
        frontier = implementation.open(directory, 100)
        opened.append(frontier)
        return frontier

    open_.crash = implementation.crash  # type: ignore[attr-defined]
    yield open_
    for frontier in opened:
        with contextlib.suppress(Exception):
            frontier.close()


def fetched(frontier: Any, urls: list[str], due: float, state: str = '["s"]') -> None:
    """Admit ``urls``, lease each, schedule it at ``due`` and ack it."""
    for url in urls:
        frontier.admit(url)
    items = {i.url: i for i in drain(frontier)}
    assert sorted(items) == sorted(urls)
    now = time.time()
    frontier.schedule(
        [Revisit(url, due, 0, 0, "page", state.replace("s", url[-1]), now) for url in urls]
    )
    for url in urls:
        frontier.ack(items[url])
    frontier.sync()


def test_a_url_is_queued_again_once_due_with_its_state(opened: Any) -> None:
    frontier = opened()
    now = time.time()
    fetched(frontier, ["http://a.test/1", "http://b.test/2"], now - HOUR)
    fetched(frontier, ["http://a.test/3"], now + HOUR)
    assert drain(frontier) == []  # revisits are off until set_revisits
    assert frontier.next_due() is None
    frontier.set_revisits(0.0)
    again = drain(frontier)
    assert sorted((i.url, i.state) for i in again) == [
        ("http://a.test/1", '["1"]'),
        ("http://b.test/2", '["2"]'),
    ]
    due = frontier.next_due()
    assert due is not None and abs(due - (now + HOUR)) < 1
    frontier.set_revisits(-2 * HOUR)  # as if two hours had passed
    assert [(i.url, i.state) for i in drain(frontier)] == [("http://a.test/3", '["3"]')]
    for item in again:  # fetched again: due in a day
        frontier.schedule([Revisit(item.url, now + 24 * HOUR, 0, 0, "page", "[9]", now)])
        frontier.ack(item)
    frontier.sync()
    assert drain(frontier) == []  # each is due once, and its new time replaced the old


def test_lag_and_before_bound_what_is_due(opened: Any) -> None:
    frontier = opened()
    now = time.time()
    fetched(frontier, ["http://a.test/old"], now - 2 * HOUR)
    fetched(frontier, ["http://a.test/new"], now - HOUR / 2)
    frontier.set_revisits(HOUR)  # --revisit-after 1h: only the older is due
    assert [i.url for i in drain(frontier)] == ["http://a.test/old"]
    frontier.set_revisits(0.0, before=now - HOUR)  # a pass: what was fetched before it began
    assert drain(frontier) == []
    assert frontier.next_due() is None
    frontier.set_revisits(0.0)
    assert [i.url for i in drain(frontier)] == ["http://a.test/new"]


def test_a_newer_lastmod_makes_a_scheduled_url_due_now(opened: Any) -> None:
    frontier = opened()
    now = time.time()
    fetched(frontier, ["http://a.test/1", "http://a.test/2"], now + HOUR)
    frontier.expedite([("http://a.test/1", now + 60), ("http://a.test/2", now - HOUR)])
    frontier.set_revisits(0.0)
    assert [i.url for i in drain(frontier)] == ["http://a.test/1"]  # 2 was not newer


def test_a_copy_acked_with_revisits_off_stays_scheduled(opened: Any) -> None:
    """A run without revisits fetches a copy queued by an earlier one, and
    schedules nothing: the URL is not lost from the schedule."""
    frontier = opened()
    now = time.time()
    fetched(frontier, ["http://a.test/1"], now - HOUR)
    frontier.set_revisits(0.0)
    promote(frontier)
    frontier.set_revisits(None)  # the next run: revisits off, the copy still queued
    (item,) = drain(frontier)
    frontier.ack(item)
    frontier.sync()
    assert drain(frontier) == []
    frontier.set_revisits(0.0)
    assert [i.url for i in drain(frontier)] == ["http://a.test/1"]


def test_a_reopened_frontier_keeps_every_schedule_and_state(opened: Any) -> None:
    frontier = opened()
    now = time.time()
    fetched(frontier, ["http://a.test/1"], now - HOUR)
    fetched(frontier, ["http://a.test/2"], now + HOUR)
    frontier.set_revisits(0.0)
    leased = drain(frontier)
    assert [i.url for i in leased] == ["http://a.test/1"]
    frontier.close()  # leased, not acked: queued again

    frontier = opened()
    frontier.set_revisits(-2 * HOUR)
    assert sorted((i.url, i.state) for i in drain(frontier)) == [
        ("http://a.test/1", '["1"]'),
        ("http://a.test/2", '["2"]'),
    ]


def promote(frontier: Any) -> None:
    """Queue what is due now, as a turn of the master's loop would."""
    if hasattr(frontier, "promote"):
        frontier.promote()
    else:
        frontier.heartbeat()  # any call of a shared frontier queues what is due


def half_synced(frontier: Any) -> None:
    """The local frontier's schedule is committed, its queue's journal not
    yet synced: a kill between the two steps of its ``sync``."""
    if getattr(frontier, "revisits", None) is not None:
        frontier.revisits.commit()


@pytest.mark.parametrize("moment", ["promoted", "promoted-half-synced", "scheduled-half-synced"])
def test_a_crash_loses_no_schedule_and_queues_a_url_once(opened: Any, moment: str) -> None:
    """Killed after URLs were queued again, or after a page was scheduled
    again and acked, before (or halfway through) the next sync: on
    reopening each URL is leasable exactly once, with its state, or waits
    for its time."""
    frontier = opened()
    now = time.time()
    urls = [f"http://a.test/{n}" for n in range(5)]
    fetched(frontier, urls, now - HOUR)
    frontier.set_revisits(0.0)
    promote(frontier)
    if moment == "promoted-half-synced":
        half_synced(frontier)
    elif moment == "scheduled-half-synced":
        frontier.sync()
        item = frontier.lease(0.0)
        frontier.schedule([Revisit(item.url, now + HOUR, 0, 0, "page", '["x"]', now)])
        frontier.ack(item)
        half_synced(frontier)
    opened.crash(frontier)

    frontier = opened()
    frontier.set_revisits(0.0)
    again = drain(frontier)
    frontier.set_revisits(-2 * HOUR)  # whatever was scheduled later is due now too
    later = drain(frontier)
    everything = [i.url for i in again + later]
    assert sorted(everything) == sorted(urls)  # nothing lost, nothing twice
    assert all(i.state for i in again + later)
