"""``--repair``: go on from a damaged job dir with what can be trusted, and say what was lost.

Called by the crawler (:mod:`mpcrawler.master.crawler`) in place of the refusal
when :func:`mpcrawler.frontier.local.integrity.damage` found damage and ``--repair`` was
given, before the frontier is opened.  What can be trusted are the records
(``pages.jsonl``: they are what the crawl delivered) and whatever the queue
can still replay; the seen set is rebuilt from those two, because after a
loss it holds URLs that are neither queued nor recorded, and those would
never be fetched.  Step by step:

1. Damaged stores are moved aside, never deleted: ``frontier/`` (if its
   ``state.json`` is gone: nothing can read its files), ``seen/``, the
   per-host page counts (``host-pages.db``) and the revisit schedule
   (``revisits.db``, whose rows name queue entries: the next run that
   revisits builds it again from the records), as ``NAME.damaged-STAMP``;
   and the frontier's frozen hosts (``frontier/cold-hosts.db``) if they
   cannot be read: the URLs listed there are lost (``state.json`` then
   counts none), and found again only through links.
2. The queue is opened: a journal cut or garbled replays up to the damage.
3. Every URL still queued is read out (leased, then released in place, or
   acked if it was recorded already: its ack was what got lost).
4. A new seen set holds the records' URLs (``url`` and ``final_url``) and
   the queued ones, and new per-host counts count them.
5. The caller admits again the seeds and, where the records kept them
   (``--record-links``), their in-scope links, one level deeper: what was
   queued once and lost is found again that way.

It returns the lines to log and print: what was moved aside, how many URLs
were recorded, queued and re-admitted, and what cannot be found again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...web.urls import host_key
from .cold import COLD_FILE
from .frontier import LocalFrontier
from .hostcounts import FILE as COUNTS_FILE
from .integrity import frozen_damage
from .journal import STATE_FILE
from .revisits import FILE as REVISITS_FILE
from .storage import atomic_write

__all__ = ["Repair", "repair"]


class Repair:
    """What a repair did: ``frontier`` to crawl on, ``links`` to admit again
    as (url, depth), and ``report`` lines."""

    def __init__(self, frontier: LocalFrontier) -> None:
        self.frontier = frontier
        self.links: list[tuple[str, int]] = []
        self.report: list[str] = []


def _records(out: Path) -> Iterator[dict[str, Any]]:
    if not out.exists():
        return
    with open(out, "rb") as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if isinstance(record, dict) and isinstance(record.get("url"), str):
                yield record


def _set_aside_frozen_hosts(frontier_dir: Path, stamp: str) -> list[str]:
    """Move an unreadable (or lost) ``cold-hosts.db`` aside, and let
    ``state.json`` count none of its URLs; what was done, as report lines."""
    cold, state_path = frontier_dir / COLD_FILE, frontier_dir / STATE_FILE
    try:
        state = json.loads(state_path.read_text("utf-8"))
    except (OSError, ValueError):
        return []  # the queue itself refuses that, with its own message
    why = frozen_damage(frontier_dir, state)
    if why is None:
        return []
    for end in ("", "-wal", "-shm"):
        if (path := cold.with_name(cold.name + end)).exists():
            path.rename(path.with_name(f"{path.name}.damaged-{stamp}"))
    state["cold"] = {"gen": (state.get("cold") or {}).get("gen", 0), "urls": 0}
    atomic_write(state_path, json.dumps(state).encode(), fsync=True)
    return [f"{why}: moved aside to {cold.name}.damaged-{stamp}, its URLs lost"]


def _set_aside_damaged(job_dir: Path, stamp: str) -> list[str]:
    """Move aside what cannot be trusted (a queue without its state, frozen
    hosts that do not add up, the seen set, the revisit and host-count
    stores); what was said of it."""
    report: list[str] = []
    frontier_dir, seen_dir = job_dir / "frontier", job_dir / "seen"
    if frontier_dir.exists() and not (frontier_dir / STATE_FILE).exists():
        aside = frontier_dir.with_name(f"frontier.damaged-{stamp}")
        frontier_dir.rename(aside)
        report.append(f"the queue could not be read: moved aside to {aside.name}")
    if (frontier_dir / STATE_FILE).exists():
        report += _set_aside_frozen_hosts(frontier_dir, stamp)
    if seen_dir.exists():
        seen_dir.rename(seen_dir.with_name(f"seen.damaged-{stamp}"))
    stores = (REVISITS_FILE, COUNTS_FILE)
    for name in (f"{store}{end}" for store in stores for end in ("", "-wal", "-shm")):
        if (job_dir / name).exists():
            (job_dir / name).rename(job_dir / f"{name}.damaged-{stamp}")
    return report


def _recorded(out: Path, max_depth: int | None) -> tuple[set[str], dict[str, int], int]:
    """From the records in ``out``: the URLs recorded (and their final
    URLs), the in-scope links of each page at their depth (first met, within
    ``max_depth``), and how many records kept no links."""
    recorded: set[str] = set()
    links: dict[str, int] = {}
    without_links = 0
    for record in _records(out):
        recorded.update(u for u in (record["url"], record.get("final_url")) if isinstance(u, str))
        outlinks = record.get("outlinks")
        if outlinks is None:
            without_links += 1
            continue
        depth = int(record.get("depth") or 0) + 1
        if max_depth is not None and depth > max_depth:
            continue
        for link in outlinks:
            if isinstance(link, dict) and link.get("in_scope") and isinstance(link.get("url"), str):
                links.setdefault(link["url"], depth)
    return recorded, links, without_links


def repair(job_dir: Path, out: Path, cache_size: int, max_depth: int | None) -> Repair:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report = _set_aside_damaged(job_dir, stamp)
    frontier = LocalFrontier(job_dir, cache_size=cache_size)  # a cut journal replays to the cut
    taken = []
    while (item := frontier.lease(float("inf"))) is not None:
        taken.append(item)
    recorded, links, without_links = _recorded(out, max_depth)
    done = 0
    for item in taken:  # queued again by a lost ack, but recorded: done
        if item.url in recorded:
            frontier.ack(item)
            done += 1
        else:
            frontier.release(item)
    for url in recorded | {item.url for item in taken}:
        if frontier.seen.add(url):
            frontier.counts.add(host_key(url))
    frontier.checkpoint()
    result = Repair(frontier)
    result.links = [(url, depth) for url, depth in links.items() if url not in recorded]
    report.append(
        f"the seen set was rebuilt from {len(recorded)} recorded URLs and {len(taken) - done} "
        f"still queued ({done} queued ones were recorded already: dropped); "
        f"{len(result.links)} links of recorded pages are admitted again"
    )
    if without_links:
        report.append(
            f"{without_links} records kept no links (crawled without --record-links): "
            "pages that only they linked to, and that were queued when the damage happened, "
            "are lost"
        )
    result.report = report
    return result
