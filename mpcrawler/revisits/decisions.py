"""Revisits: what is kept of a page to fetch it again, and the decisions on it.

Pure values and functions, unit-tested without any process
(tests/unit/test_revisit_decisions.py).  The settling (:mod:`mpcrawler.master.settle`)
asks them once a page is recorded and hands the frontier the page's new
:class:`RevisitState` with its due time (``Frontier.schedule``); the
frontier gives the state back with the URL when it is due again
(``UrlInfo.state``), and the scheduler sends its validators with the fetch.

The schedule.  A page is due ``--revisit-after`` after it was fetched.
With ``--continuous`` each page has its own interval, which adapts as
Nutch's AdaptiveFetchSchedule does (its default factors): a page found
changed is due again after ``interval x 0.8``, an unchanged one after
``interval x 1.4``, always within ``--revisit-min`` and ``--revisit-max``;
the first interval is ``--revisit-after`` (one day if not given).  A page
that is ``gone`` (404 or 410 after a 2xx) stays scheduled and counts as
unchanged for its interval: pages come back, and one fetch an interval of
a missing page costs little.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..frontier.base import KINDS, Revisit
from ..messages import PageResult

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = [
    "DEFAULT_INTERVAL",
    "RevisitState",
    "Revisits",
    "bytes_saved",
    "classify",
    "next_interval",
    "observe",
    "schedule_from_records",
]

DEFAULT_INTERVAL = 86_400.0  # --continuous without --revisit-after: one day
CHANGED_FACTOR = 0.8  # Nutch's db.fetch.schedule.adaptive.dec_rate = 0.2
UNCHANGED_FACTOR = 1.4  # Nutch's db.fetch.schedule.adaptive.inc_rate = 0.4
GONE_STATUSES = frozenset({404, 410})


@dataclass(frozen=True, slots=True)
class RevisitState:
    """What a revisit of one URL needs, stored in the frontier as JSON
    (an array, positional: a few dozen bytes beside the URL)."""

    fetched: float  # Unix time of the last fetch
    interval: float = 0.0  # --continuous: this page's current interval, seconds
    changes: int = 0  # fetches that found it changed
    status: int | None = None  # the last fetch's HTTP status
    digest: str | None = None  # sha1:BASE32 of the last body received
    etag: str | None = None
    last_modified: str | None = None
    size: int = 0  # bytes of the last body received (what a 304 saves)
    warc_id: str | None = None  # the original capture: WARC-Record-ID, -Date, target URI
    warc_date: str | None = None
    warc_uri: str | None = None  # None: the page's own URL

    def to_json(self) -> str:
        fields = [
            round(self.fetched, 3),
            round(self.interval, 3),
            self.changes,
            self.status,
            self.digest,
            self.etag,
            self.last_modified,
            self.size,
            self.warc_id,
            self.warc_date,
            self.warc_uri,
        ]
        while fields and fields[-1] is None:
            fields.pop()
        return json.dumps(fields, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> RevisitState | None:
        """The state stored as ``text``; None for None or anything unreadable
        (the page is then fetched as new: nothing is lost)."""
        if not text:
            return None
        try:
            fields: list[Any] = json.loads(text)
            return cls(*fields[:11])
        except (ValueError, TypeError):
            return None

    @property
    def was_ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True, slots=True)
class Revisits:
    """The revisit settings of a run: ``after`` (seconds, None: no revisits
    unless continuous), ``continuous``, and the adaptive bounds."""

    after: float | None = None
    continuous: bool = False
    minimum: float = 3600.0
    maximum: float = 30 * 86_400.0

    @classmethod
    def from_settings(cls, settings: Settings) -> Revisits:
        """The revisits a crawl with these settings asks for (--revisit-after...)."""
        return cls(
            settings.revisits.revisit_after,
            settings.revisits.continuous,
            settings.revisits.revisit_min,
            settings.revisits.revisit_max,
        )

    @property
    def enabled(self) -> bool:
        return self.after is not None or self.continuous

    @property
    def lag(self) -> float:
        """How long after its stored due time a page is due in this run: a
        page is stored due at its fetch time plus its own interval (0 but
        with --continuous), and the run adds --revisit-after to that."""
        return 0.0 if self.continuous else float(self.after or 0.0)

    def before(self, pass_started: float) -> float:
        """Only pages stored due before this are due in this run: without
        --continuous, a pass revisits what was fetched before it began."""
        return math.inf if self.continuous else pass_started

    def first_interval(self) -> float:
        if not self.continuous:
            return 0.0
        start = DEFAULT_INTERVAL if self.after is None else self.after
        return min(max(start, self.minimum), self.maximum)

    def due(self, state: RevisitState) -> float:
        """The time the page is stored due at (the run adds ``lag``)."""
        return state.fetched + state.interval


def classify(prior: RevisitState | None, status: int | None, digest: str | None) -> str:
    """``new``, ``changed``, ``unchanged`` or ``gone`` for a fetch that
    answered ``status`` with a body of ``digest``, given what was kept of
    the page's last fetch.  A fetch with no answer (``status`` None) changes
    nothing known of the page: ``unchanged``."""
    if prior is None:
        return "new"
    if status is None or status == 304:
        return "unchanged"
    if status in GONE_STATUSES and prior.was_ok:
        return "gone"
    if status == prior.status and digest is not None and digest == prior.digest:
        return "unchanged"
    if status == prior.status and not (200 <= status < 300):
        return "unchanged"  # the same error again
    return "changed"


def next_interval(prior: RevisitState | None, change: str, revisits: Revisits) -> float:
    """The page's next interval (see the module's docstring)."""
    if not revisits.continuous:
        return 0.0
    if prior is None or prior.interval <= 0:
        return revisits.first_interval()
    factor = CHANGED_FACTOR if change == "changed" else UNCHANGED_FACTOR
    return min(max(prior.interval * factor, revisits.minimum), revisits.maximum)


def bytes_saved(prior: RevisitState | None, status: int | None) -> int:
    """The body bytes a 304 did not send: those of the page's last capture."""
    return prior.size if status == 304 and prior is not None else 0


def observe(
    prior: RevisitState | None,
    result: PageResult,
    revisits: Revisits,
    now: float,
    page_url: str | None = None,
) -> tuple[str, RevisitState, dict[str, Any]]:
    """What a fetch of ``page_url`` (the frontier's URL; ``result.url`` is
    its chain's last) tells of the page: its change, the state to keep for
    its next revisit, and the fields its record gets (``change``,
    ``digest``, ``etag`` and ``last_modified`` where known, ``bytes_saved``
    for a 304).  A 304 and a fetch with no answer keep what the last
    capture said."""
    status = result.status
    answered = status is not None and status != 304
    digest = result.digest if answered else (prior.digest if prior else None)
    change = classify(prior, status, digest)
    etag, last_modified = result.etag, result.last_modified
    if not answered and prior is not None:
        etag, last_modified = etag or prior.etag, last_modified or prior.last_modified
    original = result.warc_id is not None and result.revisit is None  # a new capture
    if original:  # its URI is kept only if a redirect made it another than the page's
        uri = None if result.url == page_url else result.url
        warc = (result.warc_id, result.warc_date, uri)
    elif prior is not None:
        warc = (prior.warc_id, prior.warc_date, prior.warc_uri)
    else:
        warc = (None, None, None)
    state = RevisitState(
        fetched=now,
        interval=next_interval(prior, change, revisits),
        changes=(prior.changes if prior else 0) + (change == "changed"),
        status=status if answered or prior is None else prior.status,
        digest=digest,
        etag=etag,
        last_modified=last_modified,
        size=result.bytes if answered or prior is None else prior.size,
        warc_id=warc[0],
        warc_date=warc[1],
        warc_uri=warc[2],
    )
    fields: dict[str, Any] = {"change": change, "digest": digest}
    if etag:
        fields["etag"] = etag
    if last_modified:
        fields["last_modified"] = last_modified
    if saved := bytes_saved(prior, status):
        fields["bytes_saved"] = saved
    if result.revisit is not None:
        fields["warc_revisit"] = result.revisit
    if result.warc_id is not None:
        fields["warc_id"], fields["warc_date"] = result.warc_id, result.warc_date
    return change, state, fields


def schedule_from_records(records: Iterable[dict[str, Any]], revisits: Revisits) -> list[Revisit]:
    """The revisit schedule the records of a job leave, for a job that kept
    none (crawled without revisits): each URL's last record, and its last
    capture archived in full."""
    last: dict[str, dict[str, Any]] = {}
    captures: dict[str, tuple[Any, Any, Any]] = {}
    for record in records:
        url = record.get("url")
        if not isinstance(url, str) or not isinstance(record.get("fetched_at"), (int, float)):
            continue
        last[url] = record
        if record.get("warc_id") and not record.get("warc_revisit"):
            final = record.get("final_url")
            captures[url] = (record["warc_id"], record.get("warc_date"), final)
    schedule = []
    for url, record in last.items():
        status = record.get("status")
        warc_id, warc_date, final = captures.get(url, (None, None, None))
        size = record.get("bytes")
        state = RevisitState(
            fetched=float(record["fetched_at"]),
            interval=revisits.first_interval(),
            status=status if isinstance(status, int) else None,
            digest=record.get("digest"),
            etag=record.get("etag"),
            last_modified=record.get("last_modified"),
            size=size if isinstance(size, int) else 0,
            warc_id=warc_id,
            warc_date=warc_date,
            warc_uri=None if final == url else final,
        )
        depth, priority = record.get("depth"), record.get("priority")
        schedule.append(
            Revisit(
                url,
                revisits.due(state),
                depth if isinstance(depth, int) else 0,
                priority if isinstance(priority, int) else 0,
                record.get("kind") if record.get("kind") in KINDS else "page",
                state.to_json(),
                state.fetched,
            )
        )
    return schedule
