"""What becomes of a result: retry it, follow its redirect, or record it.

Small pure functions of a request, its result and the settings, unit-tested
without any process (tests/unit/test_outcome.py).  The result handling
(:mod:`mpcrawler.master.results`) asks them and the engine carries out the answer; nothing here
touches the frontier, the scheduler or a file.
"""

from __future__ import annotations

import email.utils
import secrets
from dataclasses import dataclass
from typing import Any

from ..content.index import Met
from ..messages import PageResult
from .request import Request

__all__ = [
    "MAX_WORKER_CRASHES",
    "RETRY_STATUSES",
    "Redirect",
    "backoff",
    "build_record",
    "follows",
    "http_error",
    "is_ok",
    "kind_fields",
    "link_priority",
    "lost_verdict",
    "parse_retry_after",
    "redirect_refusal",
    "robots_failed",
    "rule_refusal",
    "should_retry",
]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_WORKER_CRASHES = 3


def should_retry(result: PageResult, attempts: int, retries: int, stopping: bool) -> bool:
    """A transient failure (a network error that may mend, or 429/5xx) is
    tried again, ``retries`` times at most, unless the crawl is stopping."""
    transient = result.transient or result.status in RETRY_STATUSES
    return transient and attempts < retries and not stopping


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds a Retry-After header asks to wait (a number, or an HTTP date
    against ``now``, Unix time); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def backoff(attempt: int, retry_delay: float, retry_after: float | None, cap: float) -> float:
    """Seconds before retry number ``attempt``: ``retry_delay`` doubling, at
    least what Retry-After asked, at most ``cap``."""
    delay = retry_delay * 2 ** (attempt - 1)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(delay, cap)


@dataclass(frozen=True)
class Redirect:
    """The limits a redirect hop is checked against."""

    max_redirects: int
    max_url_length: int


def redirect_refusal(
    target: str, request: Request, limits: Redirect, rule: str | None, seen: bool
) -> str | None:
    """Why the hop of ``request`` to ``target`` (canonical) is not followed,
    or None to follow it.  ``rule``: the URL rule that refuses the target
    (None: none does); ``seen``: the target was queued or is in a chain."""
    if len(request.hops) >= limits.max_redirects:
        return f"more than {limits.max_redirects} redirects"
    if len(target) > limits.max_url_length:
        return "URL too long"
    if rule is not None:
        return rule_refusal(rule)
    if target == request.first_url or target in request.hops:
        return "redirect loop"
    if seen:
        return "already seen"
    return None


def rule_refusal(rule: str) -> str:
    """Why a redirect is not followed when the URL rule ``rule`` refuses its target."""
    return "out of scope" if rule == "scope" else f"refused by {rule}"


def lost_verdict(crashes: int) -> str | None:
    """A request lost with a worker that died: None to try it again, or the
    error for its record once it has crashed MAX_WORKER_CRASHES workers."""
    if crashes >= MAX_WORKER_CRASHES:
        return f"crashed {crashes} worker processes"
    return None


def robots_failed(result: PageResult) -> bool:
    """A robots.txt fetch that failed, as opposed to one that answered."""
    return result.transient or (result.error is not None and result.status is None)


def http_error(result: PageResult) -> tuple[str | None, str | None]:
    """(error, error kind) of a result: its own, or HTTP 4xx/5xx."""
    if result.error is None and result.status is not None and result.status >= 400:
        return f"HTTP {result.status}", f"http_{result.status // 100}xx"
    return result.error, result.error_kind if result.error else None


def link_priority(priority: int, depth: int, depth_priority: int) -> int:
    """A link's priority in the frontier: its own, less ``depth_priority`` x
    its depth (Scrapy's DEPTH_PRIORITY: > 0 breadth-first, < 0 depth-first)."""
    return priority - depth_priority * depth


def build_record(
    request: Request,
    result: PageResult,
    *,
    new_links: int,
    fetched_at: float,
    record_links: bool,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of a chain that ended with ``result``: what pages.jsonl holds."""
    error, error_kind = http_error(result)
    item = result.item
    record: dict[str, Any] = {
        "url": request.first_url,
        "final_url": request.url,
        "status": result.status,
        "depth": request.depth,
        "priority": request.priority,
        "content_type": result.content_type or None,
        "bytes": result.bytes,
        "title": item.get("title"),
        "links": result.links,
        "new_links": new_links,
        "elapsed_ms": result.elapsed_ms,
        "worker": result.worker,
        "error": error,
        "error_kind": error_kind,
        "redirects": len(request.hops),
        "attempts": request.attempts + 1,
        "fetched_at": round(fetched_at, 3),
    }
    if result.warc_file is not None:
        record["warc_file"], record["warc_offset"] = result.warc_file, result.warc_offset
    if result.robots_meta:
        record["robots_meta"] = list(result.robots_meta)
    if result.canonical is not None:
        record["canonical"] = result.canonical
    if result.skipped is not None:
        record["skipped"] = result.skipped
    record.update(extra or {})
    if record_links:
        record["outlinks"] = [
            {"url": url, "in_scope": in_scope, "priority": priority}
            for url, in_scope, priority in result.all_links or ()
        ]
    for key, value in item.items():
        record.setdefault(key, value)
    if request.kind == "embed" and not result.links:  # a short record: no document's fields
        for key in _DOCUMENT_FIELDS:
            record.pop(key, None)
    return record


# What an embed's record leaves out unless it is a document with links (a frame).
# (Its priority stays: its band says its embed hops, and a schedule rebuilt
# from the records queues it in that band again.)
_DOCUMENT_FIELDS = ("title", "links", "new_links", "encoding")


def kind_fields(request: Request) -> dict[str, Any]:
    """What a record says of its URL's kind: ``kind`` for a sitemap or an
    embed, the ``lastmod`` a sitemap gave a page, and ``from``, the page
    that first needed an embed."""
    fields: dict[str, Any] = {}
    if request.kind != "page":
        fields["kind"] = request.kind
    if request.kind == "embed":
        if request.lastmod:  # an embed's slot holds the page that needed it
            fields["from"] = request.lastmod
    elif request.lastmod:
        fields["lastmod"] = request.lastmod
    return fields


def is_ok(result: PageResult) -> bool:
    """A page whose links are followed: 2xx and no error."""
    return result.status is not None and 200 <= result.status < 300 and result.error is None


def follows(met: Met, skip_near: bool) -> bool:
    """The links of a page whose text the content index ``met`` before are
    followed: not those of an exact duplicate (a soft-404 part, a calendar
    ends), nor those of a near one with ``skip_near`` (--skip-near-duplicates)."""
    if met.duplicate_of is not None:
        return False
    return not (skip_near and met.near_duplicate_of is not None)


def recorded_before(request: Request, recorded: set[str]) -> bool:
    """A chain's record is in the journal already: ``recorded`` holds the
    URLs recorded since the last checkpoint before a kill, and a first
    visit (no revisit state known) of one of them is a page whose ack the
    kill took.  Its record is not written twice; a revisit is a new record."""
    return request.known is None and request.first_url in recorded


def probe_path() -> str:
    """A path no site has (--soft-404-probe): random, so that no server can
    know it in advance and no cache holds an answer to it."""
    return f"/mpcrawler-soft-404-probe-{secrets.token_hex(8)}"


def soft_404_answer(result: PageResult | None) -> str | None:
    """What a host's answer to its probe says: the text digest of a 200
    with a text (the page it gives for any path: its soft 404), else None
    (a real 404, a redirect, an error, no answer)."""
    if result is None or result.status != 200 or result.error:
        return None
    return result.text_digest


def is_soft_404(result: PageResult, soft_404: str | None) -> bool:
    """A page is its host's soft-404 answer: a 200 whose text is the one
    the host gave for a path that cannot exist (Bar-Yossef et al., 2004)."""
    return (
        soft_404 is not None
        and result.status == 200
        and result.text_digest is not None
        and result.text_digest == soft_404
    )
