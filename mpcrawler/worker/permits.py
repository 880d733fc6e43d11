"""A worker's permits for its browser's requests (--render): asked of the
master, granted or refused by it, reported done.

Every request a page makes while it renders goes through the crawl's
politeness like any other: the thread that would make it asks here
(``ask``, which blocks), the worker's sender thread takes what to send
(``take``) into its next ``Results`` (``asks``, ``subs``), and its receiver
thread hands the master's ``Grants`` in (``answer``).  The master holds each
ask as a request of kind ``sub`` under its host's robots.txt, delay and
concurrency, and counts it in flight from the grant to its ``SubDone``.

A page that stops waiting (its render ended, or timed out) gives up its
pending permits (``give_up``); one granted anyway is reported done at once,
with no start, so the master's count of the host's requests never keeps it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable

from ..messages import Grants, SubDone

__all__ = ["PermitRefused", "PermitWithdrawn", "Permits"]


class PermitRefused(Exception):
    """The master refused the request (robots.txt disallows it)."""


class PermitWithdrawn(Exception):
    """The page stopped waiting for the permit (its render is over)."""


class _Permit:
    """One permit asked of the master, and its answer when it comes."""

    __slots__ = ("answered", "granted", "refused", "withdrawn")

    def __init__(self) -> None:
        self.answered = threading.Event()
        self.granted: int | None = None  # the request id the master granted it as
        self.refused: str | None = None
        self.withdrawn = False


class Permits:
    """The permits of one worker; ``wake`` tells its sender thread there is
    something to send."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._lock = threading.Lock()
        self._tokens = itertools.count(1)
        self._pending: dict[int, _Permit] = {}
        self._asks: list[tuple[int, str]] = []
        self._done: list[SubDone] = []

    def ask(self, url: str, tokens: set[int]) -> int:
        """Wait for the master's permit for ``url`` (canonical); its token is
        in ``tokens`` while it waits (for ``give_up``).  Returns the request
        id to report it done with (``done``).  Raises PermitRefused, or
        PermitWithdrawn if the page gave it up."""
        token, permit = next(self._tokens), _Permit()
        with self._lock:
            self._pending[token] = permit
            self._asks.append((token, url))
            tokens.add(token)
        self._wake()
        permit.answered.wait()
        with self._lock:
            tokens.discard(token)
        if permit.refused is not None:
            raise PermitRefused(permit.refused)
        if permit.withdrawn or permit.granted is None:
            raise PermitWithdrawn(url)
        return permit.granted

    def answer(self, grants: Grants) -> None:
        """The master's answers (the receiver thread)."""
        unwanted: list[SubDone] = []
        with self._lock:
            for token, request_id in grants.granted:
                permit = self._pending.pop(token, None)
                if permit is None or permit.withdrawn:  # given up: over at once
                    unwanted.append(SubDone(request_id, None))
                else:
                    permit.granted = request_id
                    permit.answered.set()
            for token, reason in grants.refused:
                permit = self._pending.pop(token, None)
                if permit is not None:
                    permit.refused = reason
                    permit.answered.set()
        if unwanted:
            self._report(unwanted)

    def give_up(self, tokens: Iterable[int]) -> None:
        """The page no longer waits for these permits: their waits end
        (PermitWithdrawn), and a grant that comes later is given back."""
        with self._lock:
            for token in list(tokens):
                permit = self._pending.get(token)
                if permit is not None:
                    permit.withdrawn = True
                    permit.answered.set()

    def done(self, request_id: int, started: float | None, **answer: object) -> None:
        """A granted request is over: ``started`` when its download began
        (monotonic; None: not made), ``answer`` SubDone's status, error_kind
        and retry_after."""
        self._report([SubDone(request_id, started, **answer)])  # type: ignore[arg-type]

    def _report(self, done: list[SubDone]) -> None:
        with self._lock:
            self._done += done
        self._wake()

    def take(self) -> tuple[list[tuple[int, str]], list[SubDone]]:
        """What to send the master now: the asks, and the requests over."""
        with self._lock:
            asks, self._asks = self._asks, []
            done, self._done = self._done, []
        return asks, done
