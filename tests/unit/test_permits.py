"""The worker's permits for its browser's requests (--render): asked,
granted or refused by the master, given up by a page that stopped waiting."""

from __future__ import annotations

import threading

import pytest

from mpcrawler.messages import Grants, SubDone
from mpcrawler.worker.permits import PermitRefused, Permits, PermitWithdrawn


def asking(permits: Permits, url: str, tokens: set[int]) -> tuple[threading.Thread, list[object]]:
    """A thread that asks for ``url``'s permit; what it got lands in the list."""
    got: list[object] = []

    def ask() -> None:
        try:
            got.append(permits.ask(url, tokens))
        except (PermitRefused, PermitWithdrawn) as exc:
            got.append(exc)

    thread = threading.Thread(target=ask)
    thread.start()
    return thread, got


def wait_for_asks(permits: Permits, wakes: threading.Semaphore, n: int) -> list[tuple[int, str]]:
    asks: list[tuple[int, str]] = []
    while len(asks) < n:
        assert wakes.acquire(timeout=10), "the permit was never asked"
        asks += permits.take()[0]
    return asks


def test_a_permit_is_granted_refused_or_given_up() -> None:
    wakes = threading.Semaphore(0)
    permits = Permits(wake=wakes.release)
    tokens: set[int] = set()
    granted, got_granted = asking(permits, "http://h.test/a.js", tokens)
    refused, got_refused = asking(permits, "http://h.test/private.js", tokens)
    asks = dict((url, token) for token, url in wait_for_asks(permits, wakes, 2))
    permits.answer(
        Grants(
            [(asks["http://h.test/a.js"], 41)],
            [(asks["http://h.test/private.js"], "disallowed by robots.txt")],
        )
    )
    granted.join(10)
    refused.join(10)
    assert got_granted == [41]
    assert isinstance(got_refused[0], PermitRefused)
    assert str(got_refused[0]) == "disallowed by robots.txt"
    assert not tokens  # neither waits any more
    permits.done(41, 5.0, status=200)
    assert permits.take() == ([], [SubDone(41, 5.0, status=200)])


def test_a_permit_granted_after_its_page_gave_it_up_is_given_back_at_once() -> None:
    """The master counts a granted request in flight until its SubDone: one
    the page no longer wants must come back, not made, or its host would
    never be free of it."""
    wakes = threading.Semaphore(0)
    permits = Permits(wake=wakes.release)
    tokens: set[int] = set()
    thread, got = asking(permits, "http://h.test/slow.json", tokens)
    [(token, _)] = wait_for_asks(permits, wakes, 1)
    permits.give_up(set(tokens))
    thread.join(10)
    assert isinstance(got[0], PermitWithdrawn) and not tokens
    permits.answer(Grants([(token, 7)], []))
    assert permits.take() == ([], [SubDone(7, None)])
    permits.answer(Grants([(999, 8)], []))  # one nobody asked for (a restarted worker's)
    assert permits.take() == ([], [SubDone(8, None)])


@pytest.mark.parametrize("grant_first", [True, False])
def test_a_grant_and_a_give_up_at_once_leave_nothing_in_flight(grant_first: bool) -> None:
    """Whichever comes first, the master hears of the request's end once."""
    wakes = threading.Semaphore(0)
    permits = Permits(wake=wakes.release)
    tokens: set[int] = set()
    thread, got = asking(permits, "http://h.test/x", tokens)
    [(token, _)] = wait_for_asks(permits, wakes, 1)
    steps = [lambda: permits.answer(Grants([(token, 3)], [])), lambda: permits.give_up({token})]
    for step in steps if grant_first else reversed(steps):
        step()
    thread.join(10)
    if got == [3]:  # granted before it was given up: its maker reports it done
        permits.done(3, None)
    assert permits.take()[1] == [SubDone(3, None)]
