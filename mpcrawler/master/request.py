"""Request: one fetch the master tracks, from its lease (or a redirect) to its record.

Plain data, written by the master only: the scheduler sets when and where it
was sent, the pool whether its download is over, the result handling how
often it was tried.  Nothing here crosses a process boundary (a worker gets
a :class:`mpcrawler.messages.Fetch`).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from ..frontier import UrlInfo
from ..messages import Prior
from ..revisits.decisions import RevisitState
from ..web.urls import host_key

__all__ = ["Request"]


@dataclass(slots=True)
class Request:
    """One fetch the master tracks, from the frontier (or a redirect) to its result."""

    id: int
    url: str
    host: str  # scheme://host[:port], the unit of politeness
    depth: int = 0
    priority: int = 0
    kind: str = "page"  # "page", "sitemap", "embed", "robots" or "sub" (a browser's request)
    lastmod: str | None = None  # what a sitemap said of it
    info: UrlInfo | None = None  # the frontier item to ack when the chain ends
    origin: str | None = None  # the first URL of a redirect chain
    hops: list[str] = field(default_factory=list)  # URLs this chain redirected through
    attempts: int = 0
    worker: int = -1
    sent_at: float = 0.0
    crashes: int = 0
    downloaded: bool = False  # its download is over (the host is free of it)
    known: RevisitState | None = None  # a revisit: what was kept of the page's last fetch
    permit: int = 0  # a "sub": the asking worker's token (its worker is ``worker``)

    @property
    def prior(self) -> Prior | None:
        """What the worker sends and compares on a revisit (the first hop only:
        a redirect's target is fetched unconditionally)."""
        known = self.known
        if known is None or self.hops:
            return None
        return Prior(
            known.etag,
            known.last_modified,
            known.digest,
            known.warc_id,
            # Not archived before: a 304's revisit record refers to the last fetch.
            known.warc_date or _warc_date(known.fetched),
            known.warc_uri or self.url,
        )

    @classmethod
    def new(cls, url: str, **fields: Any) -> Request:
        """A request for ``url`` (canonical), with the next id."""
        return cls(next(_IDS), url, host_key(url), **fields)

    @classmethod
    def leased(cls, item: UrlInfo) -> Request:
        """The request for a frontier item (acked when its chain ends)."""
        return cls.new(
            item.url,
            depth=item.depth,
            priority=item.priority,
            kind=item.kind,
            lastmod=item.lastmod,
            info=item,
            known=RevisitState.from_json(item.state),
        )

    def hop(self, target: str) -> Request:
        """The next request of this one's redirect chain, to ``target``."""
        return Request.new(
            target,
            depth=self.depth,
            priority=self.priority,
            kind=self.kind,
            lastmod=self.lastmod,
            info=self.info,
            known=self.known,
            origin=self.first_url,
            hops=[*self.hops, target],
        )

    @property
    def first_url(self) -> str:
        return self.origin or self.url


_IDS = itertools.count(1)  # request ids, unique in the master


def _warc_date(when: float) -> str:
    """A Unix time as a WARC-Date (W3C datetime, UTC, seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
