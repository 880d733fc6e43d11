"""Link: one node's connection to the Redis of a shared crawl, and its outages.

Owned by a :class:`~mpcrawler.frontier.redis.frontier.RedisFrontier`.  It
runs the frontier's scripts (``step.lua``, ``drop.lua``, ``content.lua``) and says what
their failures mean, in one place:

- Redis cannot be reached, or is loading or busy: the link is *down*
  (``down_since``), the call raises :class:`FrontierUnavailable`, and the
  next try waits a backoff that doubles up to ``BACKOFF_MAX``;
- the script refused the call, writing nothing (FENCED, LOST, TAKEN, see
  ``step.lua``): :class:`Refused`, for the frontier to act on;
- any other Redis error: :class:`FrontierError`.

The first answer after an outage says how long it lasted and sets
``reconcile``: the answer lost to the fault may have leased URLs, which the
frontier gives back.  No crawl state lives here.
"""

from __future__ import annotations

import logging
import time
from importlib import resources
from typing import Any

from ...errors import FrontierError, FrontierUnavailable
from ...web.redact import redact_url
from .client import connect

__all__ = ["BACKOFF_MAX", "Link", "Refused"]

log = logging.getLogger(__name__)

BACKOFF_MAX = 5.0  # seconds between tries while Redis is down, at most
_SCRIPT = resources.files(__package__).joinpath("step.lua").read_text(encoding="utf-8")
_DROP_SCRIPT = resources.files(__package__).joinpath("drop.lua").read_text(encoding="utf-8")
_CONTENT_SCRIPT = resources.files(__package__).joinpath("content.lua").read_text(encoding="utf-8")
_REFUSALS = ("FENCED", "LOST", "TAKEN")


class Refused(Exception):
    """The script refused a call, writing nothing: ``word`` is FENCED, LOST
    or TAKEN, ``detail`` the rest of its reply."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.word, _, self.detail = text.partition(" ")


class Link:
    """The connection to Redis at ``url`` (or the ``client`` given, which a
    partitioned crawl's frontiers share and this link does not close); an
    outage longer than ``timeout`` seconds is an error."""

    def __init__(self, url: str, client: Any = None, timeout: float = 300.0) -> None:
        import redis

        self.url = redact_url(url)  # for messages
        self.r = connect(url) if client is None else client
        self._own_client = client is None
        self.faults = (redis.ConnectionError, redis.TimeoutError, OSError)
        self._errors = redis.RedisError
        self._step = self.r.register_script(_SCRIPT)
        self._drop = self.r.register_script(_DROP_SCRIPT)
        self._content = self.r.register_script(_CONTENT_SCRIPT)
        self.down_since: float | None = None  # monotonic; None while Redis answers
        self.reconcile = False  # an answer was lost to a fault: leases may be strays
        self.round_trips = 0
        self.timeout = timeout
        self._retry_at = 0.0
        self._backoff = 0.1

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def check_up(self) -> None:
        """Raise FrontierUnavailable while Redis is down."""
        if self.down_since is not None:
            raise FrontierUnavailable(f"Redis at {self.url} is unreachable")

    def may_retry(self, now: float) -> bool:
        """The backoff since the last fault is over.  Raises FrontierError
        once Redis has been down for longer than ``timeout``."""
        if self.down_since is not None and now - self.down_since > self.timeout:
            raise FrontierError(f"Redis at {self.url} unreachable for {self.timeout:g} s; stopping")
        return now >= self._retry_at

    def step(self, key: str, args: list[Any]) -> Any:
        """One call of ``step.lua`` (``key``: the crawl's slot); its raw reply."""
        self.round_trips += 1
        try:
            reply = self._step(keys=[key], args=args)
        except self.faults as exc:
            raise self.fault(exc) from None
        except self._errors as exc:
            text = str(exc)
            if "LOADING" in text or "BUSY" in text:
                raise self.fault(exc) from None
            if text.startswith(_REFUSALS):
                raise Refused(text) from None
            raise FrontierError(f"Redis at {self.url} refused a call: {exc}") from None
        self._answered()
        return reply

    def drop(self, key: str, args: list[Any]) -> int:
        """One call of ``drop.lua``: how many queue members it dropped."""
        return int(self._run(self._drop, key, args))

    def content(self, key: str, args: list[Any]) -> list[bytes]:
        """One call of ``content.lua``: per page, its first URL and near entries."""
        return list(self._run(self._content, key, args))

    def _run(self, script: Any, key: str, args: list[Any]) -> Any:
        """A script other than the step: a fault is an outage as for a step."""
        self.round_trips += 1
        try:
            reply = script(keys=[key], args=args)
        except self.faults as exc:
            raise self.fault(exc) from None
        self._answered()
        return reply

    def fault(self, exc: BaseException) -> FrontierUnavailable:
        """Redis failed a call: the link is down (or stays down, backing off
        further); the error to raise."""
        now = time.monotonic()
        if self.down_since is None:
            log.warning("Redis at %s unreachable (%s): pausing, retrying", self.url, exc)
            self.down_since = now
        self.reconcile = True  # the lost answer may have leased URLs
        self._retry_at = now + self._backoff
        self._backoff = min(BACKOFF_MAX, self._backoff * 2)
        return FrontierUnavailable(f"Redis at {self.url}: {exc}")

    def _answered(self) -> None:
        if self.down_since is not None:
            down = time.monotonic() - self.down_since
            log.warning("Redis at %s is back after %.1f s", self.url, down)
            self.down_since, self._backoff, self.reconcile = None, 0.1, True

    def close(self) -> None:
        if self._own_client:
            self.r.close()
