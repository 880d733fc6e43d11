"""The crawl's counters, and the stats built from them.

``Counters`` is what the master counts: pages recorded, errors and statuses
by kind, links dropped by rule, results discarded, turns of the loop.  It is
read from and written to the job's state (job.json) by the job, counted
record by record by the settling, and turned into ``stats.json`` and the
progress line here.  No I/O.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

from ..modules import process_usage
from ..output.jobdir import (
    EMBED_OUTCOMES,
    JobState,
    count_duplicate,
    count_record,
    embed_outcome,
    recount,
)
from ..output.metrics import Snapshot, status_class

__all__ = ["FETCH_BUCKETS", "Counters", "crawl_stats", "metrics_snapshot"]

# Upper bounds (seconds) of the fetch-time histogram (``--metrics-port``).
FETCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass
class Counters:
    """What this crawl has done, across its runs (``pages``, ``errors``...),
    in this pass over it (``changes``, ``bytes_saved``: a revisit starts a
    pass) and in this run (``discarded``, ``loop_turns``, ``pages_at_start``)."""

    pages: int = 0  # records, embeds' included (embed_records of them)
    embed_records: int = 0
    embeds: collections.Counter[str] = field(default_factory=collections.Counter)
    embed_kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    links_dropped: collections.Counter[str] = field(default_factory=collections.Counter)
    changes: collections.Counter[str] = field(default_factory=collections.Counter)
    duplicates: collections.Counter[str] = field(default_factory=collections.Counter)
    bytes_saved: int = 0  # body bytes 304 answers did not send
    new_pages: int = 0  # records of a URL's first fetch (the others are revisits)
    discarded: int = 0  # results of leases that had passed to another node
    loop_turns: int = 0  # turns of the master loop: a spinning loop shows here
    pages_at_start: int = 0
    embeds_at_start: int = 0  # embed records of them
    restarts_before: int = 0
    elapsed_before: float = 0.0
    started: float = field(default_factory=time.monotonic)
    # This run's, for the metrics: body bytes, and fetch times by bucket
    # (FETCH_BUCKETS, then +Inf) with their sum in seconds.
    run_bytes: int = 0
    fetch_counts: list[int] = field(default_factory=lambda: [0] * (len(FETCH_BUCKETS) + 1))
    fetch_sum: float = 0.0
    first_error: str | None = None  # this run's first record with an error: "URL: error"
    # This run's browsers' requests (--render): granted, refused (robots.txt).
    browser_requests: collections.Counter[str] = field(default_factory=collections.Counter)

    @classmethod
    def from_job(cls, job: JobState) -> Counters:
        return cls(
            pages=job.pages,
            embed_records=job.embed_records,
            embeds=collections.Counter(job.embeds),
            embed_kinds=collections.Counter(job.embed_kinds),
            errors=collections.Counter(job.errors),
            statuses=collections.Counter(job.statuses),
            links_dropped=collections.Counter(job.links_dropped),
            changes=collections.Counter(job.changes),
            duplicates=collections.Counter(job.duplicates),
            bytes_saved=job.bytes_saved,
            new_pages=job.pages if job.new_pages < 0 else job.new_pages,
            pages_at_start=job.pages,
            embeds_at_start=job.embed_records,
            restarts_before=job.worker_restarts,
            elapsed_before=job.elapsed_s,
        )

    def recount(self, records: Any, pass_start: int = 0) -> None:
        """After an unclean stop, job.json lags the output: count the records
        (the changes: those of the pass from record number ``pass_start``)."""
        tally = recount(records, pass_start)
        self.pages = self.pages_at_start = tally.pages
        self.embed_records = self.embeds_at_start = tally.embed_records
        for outcome in EMBED_OUTCOMES:
            self.embeds[outcome] = tally.embeds[outcome]
        self.statuses, self.errors = tally.statuses, tally.errors
        self.changes, self.bytes_saved = tally.changes, tally.bytes_saved
        self.new_pages = tally.new_pages
        self.duplicates = tally.duplicates

    @property
    def page_records(self) -> int:
        """Records of pages and sitemaps: what --max-pages counts."""
        return self.pages - self.embed_records

    def count(self, record: dict[str, Any]) -> None:
        self.pages += 1
        if record.get("kind") == "embed":
            self.embed_records += 1
            self.embeds[embed_outcome(record)] += 1
        size, elapsed = record.get("bytes"), record.get("elapsed_ms")
        if isinstance(size, int):
            self.run_bytes += size
        if isinstance(elapsed, int | float):
            seconds = elapsed / 1000.0
            self.fetch_counts[bisect.bisect_left(FETCH_BUCKETS, seconds)] += 1
            self.fetch_sum += seconds
        self.new_pages += record.get("change", "new") == "new"
        if self.first_error is None and record.get("error"):
            self.first_error = f"{record.get('url')}: {record['error']}"
        count_duplicate(record, self.duplicates)
        self.bytes_saved += count_record(record, self.statuses, self.errors, self.changes)

    def save(self, job: JobState, restarts: int) -> None:
        """Into ``job``, with the worker restarts of this run."""
        job.pages = self.pages
        job.embed_records, job.embeds = self.embed_records, dict(self.embeds)
        job.embed_kinds = dict(self.embed_kinds)
        job.errors, job.statuses = dict(self.errors), dict(self.statuses)
        job.links_dropped = dict(self.links_dropped)
        job.duplicates = dict(self.duplicates)
        job.changes, job.bytes_saved = dict(self.changes), self.bytes_saved
        job.new_pages = self.new_pages
        job.worker_restarts = self.restarts_before + restarts
        job.elapsed_s = self.elapsed_before + self.run_elapsed()

    def run_elapsed(self) -> float:
        return time.monotonic() - self.started

    def rate(self, embeds: bool = False) -> float:
        """Pages (or ``embeds``) a second in this run."""
        elapsed = self.run_elapsed()
        embedded = self.embed_records - self.embeds_at_start
        done = embedded if embeds else self.pages - self.pages_at_start - embedded
        return round(done / elapsed, 2) if elapsed > 0 else 0.0

    def node_info(self, job_dir: str | None) -> dict[str, Any]:
        """This node's figures, for ``status --redis``."""
        return {
            "pages": self.pages,
            "errors": sum(self.errors.values()),
            "pages_per_s": self.rate(),
            "discarded": self.discarded,
            "job_dir": job_dir,
        }


def metrics_snapshot(
    counters: Counters,
    at_start: tuple[dict[str, int], dict[str, int]],
    states: dict[str, int],
    hosts_paced: int,
    paused: bool,
) -> Snapshot:
    """This run's figures for --metrics-port: pages by status class and
    errors by kind since ``at_start`` (the counts when the run began), body
    bytes and fetch times, the URLs by state."""
    statuses, errors = at_start
    pages: collections.Counter[str] = collections.Counter()
    for status, count in counters.statuses.items():
        pages[status_class(status)] += count - statuses.get(status, 0)
    cumulative = itertools.accumulate(counters.fetch_counts)
    return Snapshot(
        pages=dict(pages),
        errors={
            k: n - errors.get(k, 0) for k, n in counters.errors.items() if n > errors.get(k, 0)
        },
        bytes=counters.run_bytes,
        queued=states["queued"],
        in_flight={k: states[k] for k in ("buffered", "downloading", "parsing")},
        hosts_paced=hosts_paced,
        fetch_buckets=tuple(zip((*FETCH_BUCKETS, math.inf), cumulative, strict=True)),
        fetch_sum=counters.fetch_sum,
        paused=paused,
    )


def crawl_stats(
    counters: Counters,
    job: JobState,
    *,
    states: dict[str, Any],
    frontier: dict[str, Any],
    modules: list[dict[str, Any]],
    worker_summaries: list[dict[str, Any]],
    extra: dict[str, Any],
) -> dict[str, Any]:
    """What stats.json holds: ``states`` are the URLs by state (as in the
    progress line), ``frontier`` the frontier's own stats, ``modules`` the
    master's pipelines' summaries, ``worker_summaries`` the workers' modules."""
    summaries = sorted(worker_summaries, key=lambda m: m["id"])
    processes = {
        "master": {
            "id": f"master|pid-{os.getpid()}",
            "loop_turns": counters.loop_turns,
            **process_usage(),
        },
        "workers": [m for m in summaries if m["type"] == "Worker"],
    }
    return {
        "state": job.state,
        "pages": counters.page_records,
        **(_embed_stats(counters) if any(counters.embeds.values()) else {}),
        "errors": sum(counters.errors.values()),
        "errors_by_kind": dict(sorted(counters.errors.items())),
        "statuses": dict(sorted(counters.statuses.items())),
        "changes": dict(sorted(counters.changes.items())),
        "bytes_saved": counters.bytes_saved,
        "elapsed_s": round(counters.run_elapsed(), 3),
        "pages_per_s": counters.rate(),
        "total_elapsed_s": round(job.elapsed_s, 3),
        "runs": job.runs,
        "frontier": {k: v for k, v in frontier.items() if k != "seen"},
        **{k: v for k, v in states.items() if k != "errors"},
        "seen": frontier["seen"],
        "links_dropped": dict(counters.links_dropped),
        "duplicates": {kind: counters.duplicates[kind] for kind in ("exact", "near", "soft_404")},
        **{k: v for k, v in extra.items() if k not in ("modules", "out")},
        "discarded": counters.discarded,
        **_browser_stats(counters),
        "modules": [m for m in summaries if m["type"] != "Worker"] + modules,
        "processes": processes,
        "out": extra["out"],
    }


def _browser_stats(counters: Counters) -> dict[str, Any]:
    """stats.json's figures of --render: the browsers' requests of this run."""
    found = counters.browser_requests
    return {"browser_requests": dict(found)} if found else {}


def _embed_stats(counters: Counters) -> dict[str, Any]:
    """stats.json's figures of --page-requisites: what became of the embeds
    (jobdir.EMBED_OUTCOMES, and found, queued, skipped), the kinds found,
    and embeds a second in this run."""
    return {
        "embeds": {
            k: counters.embeds.get(k, 0)
            for k in ("found", "queued", "fetched", "failed", "refused", "skipped")
        },
        "embed_kinds": dict(counters.embed_kinds.most_common()),
        "embeds_per_s": counters.rate(embeds=True),
    }
