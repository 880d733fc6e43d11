"""Settling: the chains that ended become links admitted, records, acks.

Each frontier item becomes exactly one record: fetched, failed, refused by
robots.txt, or dropped after crashing workers.  When its chain ends (a
``Finish`` of :mod:`mpcrawler.master.results`) it waits here; ``settle()``
then, for every chain that ended in the frontier's ``batch_window``, in one
step of the frontier, admits their links, then writes their records through
the pipelines, then acks each item with its redirect hops marked seen, in
that order.  So a record is never written for links that were not admitted,
and an item is never acked before its record.  If a shared frontier cannot
be reached, or its leases may have passed to another node (not
``available``), the chains wait for the next turn.

Before the links, the pages' fingerprints are looked up in the crawl's
content index (:mod:`mpcrawler.content.index`): a page whose text
another URL had is recorded with ``duplicate_of`` and its links are not
followed (``outcome.follows``), nor are those of a page whose text is
its host's soft-404 answer (``soft_404``, ``outcome.is_soft_404``); those
links go back to the workers (``unsend``), which send them again when a
later page has them (``add_late``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..content.index import ContentIndex, Met, Page
from ..errors import FrontierUnavailable
from ..frontier import Frontier
from ..frontier.base import Admission, Revisit, embed_hops, embed_priority, page_priority
from ..messages import PageResult
from ..output.pipelines import Pipelines
from ..output.rejected import RejectedLog
from ..revisits import decisions as revisit
from ..settings import Settings
from ..web import sitemaps
from ..web.filters import FirstSeen
from ..web.urls import host_key
from . import outcome
from .counters import Counters
from .request import Request
from .results import Chains, Finish

__all__ = ["MAX_FROM_BYTES", "Settling"]

MAX_FROM_BYTES = 255  # an embed's ``from`` longer than this is not kept (the frontier's slot)


class Settling:
    """The chains that ended and wait for their records, and how they settle."""

    def __init__(
        self,
        settings: Settings,
        frontier: Frontier,
        pipelines: Pipelines,
        counters: Counters,
        chains: Chains,
        node: str | None = None,
        rejected: RejectedLog | None = None,
        host_wait: Callable[[str], float] | None = None,
        content: ContentIndex | None = None,
        unsend: Callable[[list[str]], None] | None = None,
        soft_404_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self.settings = settings
        self.content = content  # the pages' fingerprints met so far (None: --no-dedup)
        # The workers send each link once: those not followed (a duplicate's)
        # are handed back, for the next page that has them (the pool's).
        self.unsend = unsend
        # The scheduler's wait before a host's next start: an ack carries it
        # (a shared frontier gives an idle host up with it, for its next owner).
        self.host_wait = host_wait
        # The text digest of a host's soft-404 answer, if its probe found one.
        self.soft_404_of = soft_404_of
        self.frontier = frontier
        self.pipelines = pipelines
        self.counters = counters
        self.chains = chains
        self.node = node  # a shared crawl's records say which node wrote them
        self.ended: list[Finish] = []
        self.since = 0.0  # when the first of ``ended`` ended
        self.loose: list[Admission] = []  # to admit with no record (robots' sitemaps)
        self.revisits = revisit.Revisits.from_settings(settings)
        self.rejected = rejected  # --rejected-log
        self.refused = FirstSeen()  # links refused and counted (each once, while remembered)
        # --max-embeds: the embeds offered to the frontier in the batch
        # settling, and those this run queued (at most --max-embeds): a
        # stylesheet every page names takes no room a second time.
        self._offered: set[str] = set()
        self._queued_embeds: set[str] = set()
        # After a kill: the URLs recorded since the last checkpoint, whose
        # acks the kill may have taken (``outcome.recorded_before``).
        self.recorded: set[str] = set()

    def __bool__(self) -> bool:
        """Something waits to settle."""
        return bool(self.ended or self.loose)

    def finish(self, finished: Finish) -> None:
        if not self.ended:
            self.since = time.monotonic()
        self.ended.append(finished)

    def add_sitemaps(self, urls: list[str]) -> None:
        """Sitemaps a robots.txt named (once: the seen set), depth 0."""
        self.loose.extend((url, 0, 0, "sitemap", None) for url in urls)

    def add_late(self, links: list[tuple[str, int, int]]) -> None:
        """Links a worker held back, sent again (``unsend``): admitted with no
        record, as the page that had them would have (within --max-depth)."""
        max_depth = self.settings.limits.max_depth
        self.loose.extend(
            (url, depth, priority, "page", None)
            for url, priority, depth in links
            if max_depth is None or depth <= max_depth
        )
        if not self.ended:
            self.since = time.monotonic()

    def admit(self, items: list[Admission], want: int = 0) -> list[bool]:
        """Queue each URL unless it was seen or its host's page budget is
        spent; True for each one queued.  One step of the frontier, which
        also leases ``want`` ahead."""
        depth_priority = self.settings.limits.depth_priority
        items = [
            (
                url,
                depth,
                priority
                if kind == "embed"  # its priority is its band's (frontier.base.embed_priority)
                else page_priority(outcome.link_priority(priority, depth, depth_priority)),
                kind,
                lastmod,
            )
            for url, depth, priority, kind, lastmod in items
        ]
        admitted = self.frontier.admit_many(items, want=want)
        if over := self.frontier.take_over_budget():
            self.counters.links_dropped["host_budget"] += over
        if self.revisits.enabled:  # a sitemap's newer <lastmod> makes a page due now
            newer = [
                (url, when)
                for (url, _, _, _, lastmod), new in zip(items, admitted, strict=True)
                if lastmod and not new and (when := sitemaps.lastmod_time(lastmod)) is not None
            ]
            if newer:
                self.frontier.expedite(newer)
        return admitted

    def wait(self) -> float:
        """Seconds until the chains waiting to settle are due (0.5 if none)."""
        if not self.ended:
            return 0.5
        due = self.since + self.frontier.batch_window
        return max(0.0, due - time.monotonic())

    def lease_lost(self, request: Request) -> bool:
        """The one rule for leases that passed to another node (this one was
        declared dead; ``Frontier.holds``): the request is dropped, wherever
        it is met, and counted as ``discarded``."""
        if request.info is None or self.frontier.holds(request.info):
            return False
        self.counters.discarded += 1
        self.chains.end(request)
        return True

    def settle(self, now: float | None = None, want: int = 0) -> None:
        """Settle what ended (gathered for the frontier's ``batch_window``
        when ``now`` is given), dropping the chains whose lease was lost;
        ``want`` leases ahead in the same step."""
        if not (self.ended or self.loose):
            return
        if not self.frontier.available():  # no record without a lease still this node's
            return
        self.ended = [f for f in self.ended if not self.lease_lost(f.request)]
        window = self.frontier.batch_window
        if now is not None and window and now - self.since < window:
            return
        batch = self.ended
        try:
            met = self._content_of(batch)
        except FrontierUnavailable:
            return  # tried again next turn (a page met under its own URL is not its duplicate)
        links: list[Admission] = list(self.loose)
        spans: list[tuple[int, int, int]] = []
        too_deep, self._offered = 0, set()
        unfollowed: list[str] = []
        for finished, seen in zip(batch, met, strict=True):
            found, dropped = self._links_of(finished.request, finished.result)
            soft = self.soft_404_of is not None and outcome.is_soft_404(
                finished.result, self.soft_404_of(finished.request.host)
            )
            if soft:
                finished.extra["soft_404"] = True
            if soft or (
                seen is not None
                and not outcome.follows(seen, self.settings.content.skip_near_duplicates)
            ):
                unfollowed += [url for url, *_ in found]
                found = []
            embeds, skipped = self._embeds_of(finished.request, finished.result)
            spans.append((len(found), len(embeds), skipped))
            links.extend(found)
            links.extend(embeds)
            too_deep += dropped
        try:
            admitted = self.admit(links, want)
        except FrontierUnavailable:
            return  # tried again next turn; nothing is dispatched meanwhile
        if too_deep:
            self.counters.links_dropped["sitemap_depth"] += too_deep
        if unfollowed:
            self.counters.links_dropped["duplicate"] += len(unfollowed)
            if self.unsend is not None:
                self.unsend(unfollowed)
        start, self.ended, self.loose = len(self.loose), [], []
        self._record_batch(batch, met, spans, links, admitted, start)

    def _record_batch(
        self,
        batch: list[Finish],
        met: list[Met | None],
        spans: list[tuple[int, int, int]],
        links: list[Admission],
        admitted: list[bool],
        start: int,
    ) -> None:
        """Each page's record, once its links (``spans``: its links', its
        embeds' and the skipped embeds' counts, in ``links`` from ``start``)
        were admitted."""
        for finished, seen, (span, embeds, skipped) in zip(batch, met, spans, strict=True):
            if seen is not None:
                finished.extra.update((k, v) for k, v in seen._asdict().items() if v)
            new_links = sum(admitted[start : start + span])
            start += span
            new_embeds = sum(admitted[start : start + embeds])
            if self.settings.archive.max_embeds is not None:
                self._queued_embeds.update(
                    url
                    for (url, *_), new in zip(
                        links[start : start + embeds], admitted[start : start + embeds], strict=True
                    )
                    if new
                )
            start += embeds
            self._count_embeds(finished.result, new_embeds, skipped)
            self._record(finished, new_links, embeds)

    def _content_of(self, batch: list[Finish]) -> list[Met | None]:
        """What the content index knew of each finished page that has a
        fingerprint (None: no fingerprint, or --no-dedup); each is added."""
        met: list[Met | None] = [None] * len(batch)
        if self.content is None:
            return met
        pages, where = [], []
        for k, finished in enumerate(batch):
            result, page = finished.result, finished.request.kind == "page"
            digest, simhash = result.text_digest, result.simhash  # (simhash: --near-duplicates)
            if digest is not None and page and outcome.is_ok(result):
                pages.append(Page(result.url, host_key(result.url), digest, simhash))
                where.append(k)
        for k, seen in zip(where, self.content.check(pages), strict=True):
            met[k] = seen
        return met

    def _links_of(self, request: Request, result: PageResult) -> tuple[list[Admission], int]:
        """What a finished chain's page asks to admit: its links (within
        --max-depth, not in a redirect chain in progress) and, for a
        sitemap index, its sitemaps (MAX_DEPTH levels deep at most); and how
        many sitemaps were too deep."""
        if not outcome.is_ok(result):
            return [], 0
        sitemap = request.kind == "sitemap"  # its pages are depth 1 from their root
        depth = 1 if sitemap else request.depth + 1
        found: list[Admission] = []
        max_depth = self.settings.limits.max_depth
        if max_depth is None or depth <= max_depth:
            chains, lastmods = self.chains.urls, result.lastmods or {}
            found = [
                (url, depth, priority, "page", lastmods.get(url))
                for url, priority in result.outlinks
                if url not in chains
            ]
        if sitemap and result.sitemaps:
            level = request.depth + 1
            if level > sitemaps.MAX_DEPTH:
                return found, len(result.sitemaps)
            found += [(url, level, 0, "sitemap", None) for url in result.sitemaps]
        return found, 0

    def _embeds_of(self, request: Request, result: PageResult) -> tuple[list[Admission], int]:
        """--page-requisites: the embeds a finished chain's document needs,
        within --max-embed-hops and --max-embeds, and how many of them are
        skipped past those bounds.  An embed keeps its page's depth (--max-depth does not
        apply: a page at the last depth still renders whole, as with wget
        -p) and names the page that needed it (``from``, in the frontier's
        ``lastmod`` slot, which only a sitemap's pages use)."""
        if not result.embeds or not outcome.is_ok(result):
            return [], 0
        s = self.settings
        if request.kind == "embed":
            hops, page = embed_hops(request.priority) + 1, request.lastmod or request.first_url
        else:
            hops, page = 1, request.url
        urls = [url for url in result.embeds if url not in self.chains.urls]
        if hops > s.archive.max_embed_hops:
            return [], len(urls)
        skipped = 0
        if s.archive.max_embeds is not None:
            known = self._queued_embeds
            urls = [url for url in urls if url not in known and url not in self._offered]
            queued = self.counters.embeds["queued"] + len(self._offered)  # this batch's too
            room = max(0, s.archive.max_embeds - queued)
            skipped = max(0, len(urls) - room)
            urls = urls[:room]
            self._offered.update(urls)
        priority = embed_priority(hops)
        # The local frontier keeps 255 bytes of it: none rather than a cut one.
        source = page if len(page.encode("utf-8")) <= MAX_FROM_BYTES else None
        return [(url, request.depth, priority, "embed", source) for url in urls], skipped

    def _count_embeds(self, result: PageResult, queued: int, skipped: int) -> None:
        """Once admitted (a settle the frontier refused is tried again, and
        counts nothing twice): the requisites a document named, by kind,
        those queued, those skipped past the bounds."""
        if not result.embeds_found or not outcome.is_ok(result):
            return
        counts = self.counters.embeds
        counts["found"] += result.embeds_found
        self.counters.embed_kinds.update(result.embed_kinds)
        for name, n in (("queued", queued), ("skipped", skipped)):
            if n:
                counts[name] += n

    def refused_links(self, source: str, dropped: list[tuple[str, str]]) -> None:
        """Count the URLs the rules refused on ``source`` (a page, a redirect,
        a sitemap or a robots.txt) by rule, each once, and log them."""
        for url, rule in dropped:
            if self.refused.first(url):
                self.counters.links_dropped[rule] += 1
                if self.rejected is not None:
                    self.rejected.write(url, rule, source)

    def _record(self, finished: Finish, new_links: int, embeds: int = 0) -> None:
        """Write a chain's record and ack it; ``embeds``: of its document's
        requisites, how many went to the frontier (queued, or queued before)."""
        request, result = finished.request, finished.result
        if result.dropped:
            self.refused_links(request.url, result.dropped)
        now = time.time()
        _, state, fields = revisit.observe(
            request.known, result, self.revisits, now, request.first_url
        )
        extra: dict[str, Any] = {**finished.extra, **outcome.kind_fields(request), **fields}
        if result.embeds_found:
            extra["embeds"], extra["embeds_archived"] = result.embeds_found, embeds
        if self.node is not None:
            extra["node"] = self.node
        record = outcome.build_record(
            request,
            result,
            new_links=new_links,
            fetched_at=now,
            record_links=self.settings.outputs.record_links,
            extra=extra,
        )
        known = outcome.recorded_before(request, self.recorded)
        if known:  # its record is in the journal: once is enough
            self.recorded.discard(request.first_url)
        else:
            self.pipelines.emit(record)
        self.chains.end(request)
        info = request.info
        if info is not None:
            if self.revisits.enabled:
                due = self.revisits.due(state)
                kept = state.to_json()
                again = Revisit(info.url, due, info.depth, info.priority, info.kind, kept, now)
                self.frontier.schedule([again])
            error = bool(record["error"])
            if self.host_wait is None:
                self.frontier.ack(info, seen=request.hops, error=error)
            else:  # a shared frontier's
                self.frontier.ack(info, request.hops, error, self.host_wait(request.host))
        if not known:
            self.counters.count(record)
