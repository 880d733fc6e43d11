"""The Frontier protocol: what the master asks of any frontier implementation.

A frontier owns both the seen set (dedup) and the queue of URLs to fetch,
kept per host.  The master admits URLs, leases the best URL of a host that
may be fetched now, and acks it once its record is written (or releases it,
to be handed out again).  The scheduler tells the frontier which hosts must
wait (``block``); the frontier never decides politeness itself.

The ordering convention, written down once:

* every URL has an integer **priority**; higher is fetched first;
* within a host, URLs leave highest priority first, and first-in, first-out
  among equal priorities (the order ``admit`` saw them);
* across hosts that may be fetched now, the host whose best URL has the
  highest priority goes first; ties go to the URL admitted first.

With no host blocked this is exactly one global order: priority, then
admission order.

A frontier shared by several processes (nodes) adds three promises:

* **liveness**: a URL queued is leasable by some live node within a bounded
  time; in particular a host a node owns, with URLs queued and nothing in
  flight, is leasable by its owner or given up within one heartbeat;
* **fencing**: ``holds(item)`` is False once the node's lease on ``item``
  has passed to another node (the node was declared dead); the frontier
  then refuses the node's calls until it joins again, and a late ack is
  not counted as done;
* ``available()`` is False while the node's leases may have passed on
  (its heartbeat is too old): the master starts no fetch and writes no
  record then.

A frontier also keeps the crawl's **revisit schedule** ("this URL is due at
time T"): ``schedule`` stores, for a URL fetched, the Unix time it is due
again and an opaque state (what the master kept of the fetch); once a run
turns revisits on (``set_revisits(lag, before)``), a URL is queued again,
in its host's queue like any other, when ``time.time() >= T + lag`` and
``T < before``, and its lease carries its state (``UrlInfo.state``).  A URL stays scheduled until
it is scheduled again; a crash never loses its schedule (the schedule is
written before the ack that follows it).

A frontier also keeps the crawl's page budgets (``set_budget``): it leases
no page past ``max_pages`` and queues no URL past ``max_pages_per_host``, so
a local and a shared crawl stop alike with no check of the master's own.

Implementations, a folder each: :class:`mpcrawler.frontier.local.LocalFrontier`
(files in the job directory; the default) and
:class:`mpcrawler.frontier.redis.RedisFrontier` (shared by the nodes of one
crawl); ``hostblocks.py`` keeps the blocked hosts for both.  The contract
test (``tests/contract/test_frontier_contract.py``) runs against every
implementation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..content.index import ContentIndex
from ..errors import FrontierError

__all__ = [
    "EMBED_FLOOR",
    "EMBED_PRIORITY",
    "FOREVER",
    "KINDS",
    "Admission",
    "Frontier",
    "FrontierError",
    "Revisit",
    "UrlInfo",
    "embed_hops",
    "embed_priority",
    "page_priority",
]

FOREVER = math.inf  # block(host, FOREVER): until the host is blocked again with a time


KINDS = ("page", "sitemap", "embed")  # what a URL is fetched as

# An embed (a page's requisite, --page-requisites) is queued in a band of
# priorities above every page's, so a page's requisites are fetched soon
# after it (Heritrix's preferEmbedHops) and a budget spent on pages still
# leases them: EMBED_PRIORITY for a page's own, one less for each further
# hop (a stylesheet's font).  A page's priority is kept below the band.
EMBED_PRIORITY = 1 << 18
EMBED_FLOOR = EMBED_PRIORITY - 16  # the band's lowest priority (more hops are refused)


def embed_priority(hops: int) -> int:
    """The priority of an embed ``hops`` embed hops from its page (1: the page's own)."""
    return EMBED_PRIORITY - (hops - 1)


def embed_hops(priority: int) -> int:
    """How many embed hops from its page an embed of ``priority`` is."""
    return EMBED_PRIORITY - priority + 1


def page_priority(priority: int) -> int:
    """A page's priority, kept below the embeds' band."""
    return min(priority, EMBED_FLOOR - 1)


class UrlInfo(NamedTuple):
    """One queued URL.  ``seq`` is its admission number, unique per frontier;
    ``kind`` one of KINDS; ``lastmod`` what a sitemap said of it, if any;
    ``state`` what was kept of its last fetch (``schedule``), given with a
    lease of a URL that is due again."""

    url: str
    depth: int
    priority: int
    seq: int
    kind: str = "page"
    lastmod: str | None = None
    state: str | None = None


Admission = tuple[str, int, int, str, str | None]  # url, depth, priority, kind, lastmod


class Revisit(NamedTuple):
    """``url``, fetched at ``fetched`` (Unix time), is due again at ``due``
    (the run adds its lag), to be queued with ``depth``, ``priority`` and
    ``kind``; ``state`` (JSON) comes back with its lease."""

    url: str
    due: float
    depth: int
    priority: int
    kind: str
    state: str
    fetched: float


@runtime_checkable
class Frontier(Protocol):
    """Dedup plus per-host, priority-ordered queues, crash-safe."""

    # Seconds the master may gather finished pages before it admits their
    # links in one ``admit_many`` (a shared frontier saves round trips).
    batch_window: float

    def admit(
        self,
        url: str,
        depth: int = 0,
        priority: int = 0,
        kind: str = "page",
        lastmod: str | None = None,
    ) -> bool:
        """Queue ``url`` unless it was ever admitted or marked seen; True if
        queued.  (By default, ``admit_many`` of one: a class that declares
        Frontier as its base gets this.)"""
        return self.admit_many([(url, depth, priority, kind, lastmod)])[0]

    def admit_many(self, items: Sequence[Admission], want: int = 0) -> list[bool]:
        """``admit`` for each item, in one step; ``want`` is a hint that that
        many leases follow (a shared frontier fetches them in the same call)."""

    def is_seen(self, url: str) -> bool:
        """``url`` was admitted or marked seen."""

    def lease(self, now: float | None = None, want: int = 1) -> UrlInfo | None:
        """The best URL of a host not blocked at ``now`` (monotonic seconds),
        or None.  It stays taken until ``ack`` or ``release``; after a crash
        it is queued again in its place.  ``want`` is how many the caller
        could take now (a shared frontier leases that many at once)."""

    def ack(
        self,
        item: UrlInfo,
        seen: list[str] | tuple[str, ...] = (),
        error: bool = False,
        wait: float = 0.0,
    ) -> None:
        """``item`` is done (``error``: its record is an error); ``seen``
        (the URLs its redirect chain went through) are marked seen in the
        same step.  ``wait``: seconds before its host may be started on again
        (a shared frontier gives a host up with it, for its next owner)."""

    def exclude(self, match: Callable[[str], bool], *, drop_queued: bool = True) -> int:
        """``control exclude``: from now on no URL that ``match`` says True of
        is leased (one met is dropped: acked unfetched, not counted done),
        and with ``drop_queued`` those queued now are dropped at once (they
        stay seen); how many were.  A shared frontier drops crawl-wide."""

    def release(self, item: UrlInfo) -> None:
        """Give a leased ``item`` back, to its place in its host's queue."""

    def block(self, host: str, until: float) -> None:
        """``host`` (see :func:`mpcrawler.web.urls.host_key`) may not be leased
        from before ``until`` (monotonic seconds; ``FOREVER`` until blocked
        again; 0 to unblock).  Not persisted: a reopened frontier has every
        host ready."""

    def next_ready(self, now: float) -> float | None:
        """The earliest time (monotonic) after ``now`` a blocked host becomes
        ready, or None."""

    def sync(self) -> None:
        """Everything so far survives this process being killed."""

    def content_index(self) -> ContentIndex:
        """Where the crawl keeps its pages' fingerprints (:mod:`.content`)."""

    def report(self, figures: Mapping[str, Any]) -> None:
        """This node's figures (pages, errors, rate), for ``status``: a
        shared frontier's heartbeat carries them; a local one keeps none."""

    def tick(self) -> None:
        """Upkeep, called once a turn of the master's loop: what has waited
        long enough is made to survive a kill (a local frontier: all of it,
        as ``sync``), and a shared frontier renews its heartbeat."""

    def checkpoint(self) -> None:
        """Everything so far is durable (survives a power cut)."""

    def stats(self) -> dict[str, Any]:
        """Counts: at least ``queued`` and ``taken``; ``seen`` if known."""

    def __len__(self) -> int:
        """URLs queued (not counting those taken)."""

    def available(self) -> bool:
        """The frontier can be used now: a shared one's server answers, and
        its leases are still this node's (its heartbeat is recent enough)."""

    def fetch_deadline(self) -> float:
        """The monotonic time after which no fetch of what is leased now may
        start (a worker checks it; 0: none)."""

    def holds(self, item: UrlInfo) -> bool:
        """The lease of ``item`` is still this process's (a shared frontier's
        node that was declared dead holds none of what it leased before)."""

    def leased_elsewhere(self) -> int:
        """URLs leased by other processes and not yet acked (a shared
        frontier's crawl is over only when none are)."""

    def schedule(self, revisits: Sequence[Revisit]) -> None:
        """Each URL (admitted before) is due again at its time, with its
        state; this replaces its earlier schedule.  Called before the ack of
        the fetch it follows, in the same step."""

    def set_revisits(self, lag: float | None, before: float = math.inf) -> None:
        """Queue the URLs scheduled at a T before ``before`` once
        ``time.time() >= T + lag`` (``lag`` None: revisits are off this run;
        nothing scheduled is queued)."""

    def next_due(self) -> float | None:
        """The Unix time the next scheduled URL is due (its T + lag), or
        None (none before ``before``, or revisits off)."""

    def expedite(self, items: Sequence[tuple[str, float]]) -> int:
        """Each scheduled URL last fetched before the Unix time given with it
        (a sitemap's newer ``<lastmod>``) is due now; how many (a shared
        frontier, whose next step does it: how many it will check)."""

    def set_budget(
        self,
        max_pages: int | None,
        max_pages_per_host: int | None,
        *,
        done: int = 0,
        host_pages: Mapping[str, int] | None = None,
    ) -> None:
        """The crawl's page budgets: ``max_pages`` leases in all (``done``:
        pages recorded before), ``max_pages_per_host`` URLs queued per host
        (``host_pages``: counted before, as an older job.json kept them; a
        frontier keeps its counts itself).  A shared frontier keeps the counts
        crawl-wide and ignores ``done`` and ``host_pages``."""

    def set_max_pages(self, max_pages: int | None) -> None:
        """A new ``max_pages`` for the running crawl (``set_budget``'s
        counts stay as they are)."""

    def budget_left(self) -> bool:
        """The page budget (``set_budget``) is not spent."""

    def take_over_budget(self) -> int:
        """URLs refused by the per-host budget since the last call (not
        queued, and not marked seen: another run with a larger budget
        queues them)."""

    def close(self) -> None:
        """Checkpoint and release everything; taken URLs are queued again on reopening."""
