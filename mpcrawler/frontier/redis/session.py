"""Session: one node's membership of a shared crawl, as Redis granted it.

Owned by a :class:`~mpcrawler.frontier.redis.frontier.RedisFrontier`.  A
node registers and gets an *epoch* (a fencing token) and the crawl's id;
each call carries both, and the script refuses a call whose epoch is not the
node's current one (FENCED), whose crawl is gone or another (LOST), or that
registers an id a live node has (TAKEN).  This part keeps, on the node's
side:

- the epoch (``"0"``: the next call registers) and the crawl's id;
- the heartbeat: when the last good one was sent (its own monotonic clock),
  so the node fences itself (``fetch_deadline``) before Redis could have
  declared it dead, and what the last one found (leases reaped, hosts in
  the crawl, live nodes);
- what a refusal means (``refused``): TAKEN and LOST raise, FENCED starts a
  new session.

No I/O: the frontier makes the calls.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
import uuid
from typing import Any

from ...errors import FrontierError, UsageError
from . import protocol as wire
from .client import lost_message
from .link import Refused

__all__ = ["FENCE_MARGIN", "CrawlLost", "NodeTaken", "Session", "Taken"]

# A node starts no fetch once its last good heartbeat is older than this
# share of the lease timeout short of it (its own clock, from when it was sent).
FENCE_MARGIN = 0.25


class CrawlLost(FrontierError):
    """The crawl's state in Redis is gone, or the name holds another crawl."""


class NodeTaken(UsageError):
    """Another live process is this node of the crawl."""


class Taken(Exception):
    """The script's TAKEN: a live node has this id."""

    def __init__(self, age_s: float, info: dict[str, Any]) -> None:
        super().__init__(age_s)
        self.age_s, self.pid, self.host = age_s, info.get("pid"), info.get("host")

    def dead_here(self) -> bool:
        """That node was a process of this host that is gone (or this one)."""
        if self.host != socket.gethostname() or not isinstance(self.pid, int):
            return False
        if self.pid == os.getpid():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False


class Session:
    """Node ``node``'s session of crawl ``crawl`` (``crawl_id``: the id its
    job dir knew, if any; ``new_id``: the id a new crawl or partition gets,
    by default a new uuid)."""

    def __init__(
        self,
        node: str,
        crawl: str,
        lease_timeout: float,
        crawl_id: str | None = None,
        new_id: str | None = None,
    ) -> None:
        self.node, self.crawl = node, crawl
        self.lease_timeout = lease_timeout
        self.beat_interval = min(lease_timeout / 3, 1.0)
        self.epoch = "0"  # none yet: the next call registers
        self.crawl_id = crawl_id or ""
        self.new_id = new_id
        self.lost: str | None = None  # why the crawl's state is gone, once found
        self.fenced = 0  # times this node found it was declared dead
        self.beat_sent = -math.inf  # when the last good heartbeat was sent (monotonic)
        self.last_beat = 0.0  # when its reply came
        self.reaped = 0  # leases of dead nodes the last heartbeat gave back
        self.hosts, self.alive = 0, 1  # the crawl's hosts and live nodes, as it found them
        self.figures: dict[str, Any] = {}  # this node's, for status (report)

    @property
    def registering(self) -> bool:
        return self.epoch == "0"

    def header(self, prefix: str, force: bool) -> wire.Header:
        """Who calls (registering, with the id a new crawl gets)."""
        new_id = (self.new_id or uuid.uuid4().hex) if self.registering else ""
        return wire.Header(prefix, self.node, self.epoch, self.crawl_id, new_id, force)

    def beat(self, resync: bool) -> wire.Beat:
        """A heartbeat with this node's figures (and every host held, if ``resync``)."""
        figures = {"pid": os.getpid(), "host": socket.gethostname(), **self.figures}
        info = json.dumps(figures, separators=(",", ":"))
        return wire.Beat(int(self.lease_timeout * 1000), info, resync)

    def beat_due(self, now: float) -> bool:
        return now - self.last_beat >= self.beat_interval

    def answered(self, answer: wire.Reply, sent: float, beat: bool) -> None:
        """A call sent at ``sent`` came back with ``answer``."""
        self.epoch, self.crawl_id = answer.epoch, answer.crawl_id
        if beat:
            self.beat_sent = sent
        if answer.beat is not None:
            self.last_beat, self.reaped = time.monotonic(), answer.beat.reaped
            self.hosts, self.alive = answer.beat.hosts, max(1, answer.beat.alive)

    def fetch_deadline(self) -> float:
        """The monotonic time after which this node may start no fetch unless
        a heartbeat comes through: the lease timeout, less FENCE_MARGIN of
        it, after its last good heartbeat was sent."""
        return self.beat_sent + self.lease_timeout * (1 - FENCE_MARGIN)

    def check(self) -> None:
        """Raise CrawlLost once the crawl was found lost."""
        if self.lost is not None:
            raise CrawlLost(self.lost)

    def refused(self, refusal: Refused, url: str) -> str:
        """The script refused a call (nothing was written): TAKEN raises
        :class:`Taken`, LOST :class:`CrawlLost`; FENCED (declared dead:
        paused past the lease timeout, or replaced) ends the session and
        returns why, for the frontier to drop what it held and register again."""
        word, rest = refusal.word, refusal.detail
        if word == "TAKEN":
            age, _, info = rest.partition(" ")
            raise Taken(int(age) / 1000, json.loads(info or "{}"))
        if word == "LOST":
            self.lost = lost_message(self.crawl, url, rest)
            raise CrawlLost(self.lost)
        self.fenced += 1
        self.epoch = "0"  # the acks in the outbox ride on the registration: late ones count apart
        return rest

    def taken_over(self, taken: Taken) -> None:
        """Registering found this id live: raise NodeTaken unless its process
        is this host's and gone (a node restarted after a crash)."""
        if not taken.dead_here():
            raise NodeTaken(
                f"node {self.node} is already running in crawl {self.crawl} "
                f"(last heartbeat {taken.age_s:.1f} s ago); give this one another --node"
            ) from None
