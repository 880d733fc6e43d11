"""What crosses a process boundary, and what analyzers hand back: small named
types of plain data (picklable by value, no behaviour beyond validation).

Between the master (:mod:`mpcrawler.master.pool`) and a worker (:mod:`mpcrawler.worker.process`),
over one pipe each way::

    master --FetchBatch([Fetch, ...]) / Grants / Stop--> worker
    master <--Hello / Results([PageResult, ...], asks, subs) / Bye / Failed-- worker

A browser rendering a page (--render) asks the master for a permit for each
request the page makes (``Results.asks``); the master holds it as a request
of kind ``sub`` under its host's politeness and robots.txt and answers with
``Grants``; the worker fetches it and reports it done (``Results.subs``).

``Link`` is what an Analyzer may return in ``Analysis.links`` instead of a
plain ``href`` string, to give the URL a priority (higher is fetched first;
see :mod:`mpcrawler.frontier.base` for the order).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

__all__ = [
    "EXPIRED",
    "WARC_FAILED",
    "Analyzed",
    "Archived",
    "Bye",
    "Failed",
    "Fetch",
    "FetchBatch",
    "Fetched",
    "FromWorker",
    "Grants",
    "Hello",
    "Link",
    "NewRules",
    "PageResult",
    "Prior",
    "Results",
    "Stop",
    "SubDone",
    "ToWorker",
    "link_parts",
]


class Link(NamedTuple):
    """A link as written in the page (resolved like any ``href``), with a priority."""

    url: str
    priority: int = 0


def link_parts(link: str | Link) -> tuple[str, int]:
    """(href, priority) of a plain string (priority 0) or a Link.  Raises
    TypeError for anything else, or a priority that is not an int."""
    if isinstance(link, str):
        return link, 0
    if isinstance(link, tuple) and len(link) == 2:
        href, priority = link
        if isinstance(href, str) and isinstance(priority, int) and not isinstance(priority, bool):
            return href, priority
    raise TypeError(f"a link is a str or a Link(url, priority: int), not {link!r}")


@dataclass(slots=True)
class Fetched:
    """What a worker reports of one request's download (``worker/fetches.py``,
    ``Worker.downloaded``): the request's identity, the answer's status,
    headers and validators, or what went wrong.  The first stage of a
    :class:`PageResult`."""

    id: int
    url: str
    kind: str = "page"  # "page" or "robots"
    worker: str | None = None  # the id of the Downloader that fetched it
    status: int | None = None
    error: str | None = None
    error_kind: str | None = None
    transient: bool = False  # a retry may succeed
    content_type: str = ""
    bytes: int = 0
    elapsed_ms: float | None = None
    retry_after: str | None = None  # the header, as sent (429, 503)
    location: str | None = None  # a redirect's Location, unresolved
    body: str | None = None  # robots.txt, decoded
    digest: str | None = None  # sha1:BASE32 of the body as sent (WARC-Payload-Digest)
    etag: str | None = None  # the validators the server sent
    last_modified: str | None = None
    skipped: str | None = None  # why the body was not read (--accept-type)


@dataclass(slots=True)
class Archived(Fetched):
    """What the archive adds (--warc: :class:`mpcrawler.archive.recorder.WarcRecorder`):
    where the response's records are, and their index lines."""

    warc_file: str | None = None  # --warc: the file and offset of its response record
    warc_offset: int | None = None
    warc_errno: int | None = None  # why the archive could not be written (errno)
    warc_id: str | None = None  # the WARC-Record-ID and -Date of its response record
    warc_date: str | None = None
    revisit: str | None = None  # archived as a revisit record: its profile's short name
    cdxj: list[str] = field(default_factory=list)  # --cdxj: index lines of the records written


@dataclass(slots=True)
class Analyzed(Archived):
    """What the analysis adds (the parser thread: ``Worker.analyze``, the
    listings): the page's links, its record's fields, its fingerprint."""

    links: int = 0  # distinct fetchable links on the page
    outlinks: list[tuple[str, int]] = field(default_factory=list)  # in scope: (url, priority)
    all_links: list[tuple[str, bool, int]] | None = (
        None  # --record-links: (url, in scope, priority)
    )
    item: dict[str, Any] = field(default_factory=dict)  # the Analyzer's fields for the record
    sitemaps: list[str] = field(default_factory=list)  # a sitemap index's children, in scope
    lastmods: dict[str, str] = field(default_factory=dict)  # a sitemap's <lastmod> by URL
    dropped: list[tuple[str, str]] = field(default_factory=list)  # links refused: (url, rule)
    robots_meta: tuple[str, ...] = ()  # what the page asks of robots (noindex, nofollow...)
    canonical: str | None = None  # rel=canonical (the page's or its Link header's), canonical
    embeds: list[str] = field(default_factory=list)  # --page-requisites: to fetch, canonical
    embeds_found: int = 0  # distinct requisites the document named (refused ones included)
    embed_kinds: dict[str, int] = field(default_factory=dict)  # of those, by kind (HOWS)
    text_digest: str | None = None  # the fingerprint of its text (web.fingerprint), if any
    simhash: int | None = None


@dataclass(slots=True)
class PageResult(Analyzed):
    """What a worker reports for one request, a page or a robots.txt: each
    stage's fields (``Fetched``, then ``Archived``, then ``Analyzed``), in
    one flat record the master reads.
    """

    def __reduce__(self) -> tuple[type[PageResult], tuple[Any, ...]]:
        """Pickled as its fields in order, rebuilt by ``__init__``: a third
        smaller, and about 30% quicker both ways, than a slotted
        dataclass's state (a loop over ``fields()`` in Python)."""
        return PageResult, _result_fields(self)


_result_fields = operator.attrgetter(*(f.name for f in fields(PageResult)))


# The error_kind of a request a worker did not start because its deadline
# had passed (the master fetches it again, or drops it if no longer its own).
EXPIRED = "expired"
# The error_kind of a page whose WARC records could not be written: the
# master stops the crawl and records nothing of it (see Crawler._on_result).
WARC_FAILED = "warc"


# Master -> worker
class Prior(NamedTuple):
    """What a revisit knows of a page's last fetch: the validators to send,
    the digest to compare, and the original capture a WARC revisit record
    refers to."""

    etag: str | None = None
    last_modified: str | None = None
    digest: str | None = None
    warc_id: str | None = None
    warc_date: str | None = None
    warc_uri: str | None = None


class Fetch(NamedTuple):
    """A request for a worker to fetch: its URL, kind, depth and deadline."""

    id: int
    url: str
    kind: str
    depth: int = 0  # the page's; its links are depth + 1
    deadline: float = 0.0  # monotonic: not started by then, it is not fetched (0: none)
    prior: Prior | None = None  # a revisit: a conditional request


class FetchBatch(NamedTuple):
    """The requests for a worker's free slots, sent at once."""

    requests: list[Fetch]


class Grants(NamedTuple):
    """Answers to a worker's permits (``Results.asks``): each granted one,
    (token, request id), may start now; each refused one, (token, why), may not."""

    granted: list[tuple[int, int]]
    refused: list[tuple[int, str]]


class SubDone(NamedTuple):
    """A browser's request the master granted is over (``Results.subs``):
    when its download started (None: it was not made, the page no longer
    wanted it) and how the host answered."""

    request: int  # the id the master granted it with
    started: float | None
    status: int | None = None
    error_kind: str | None = None
    retry_after: str | None = None


class Stop(NamedTuple):
    """Finish what you hold, say Bye, exit."""


class NewRules(NamedTuple):
    """The crawl's URL rules changed while it runs (``control add-seeds``
    grew the scope, ``control exclude`` added a pattern): filter links by these."""

    scope: dict[str, Any]
    exclude: list[str]


class Unsent(NamedTuple):
    """Links the master did not follow (a duplicate's): each worker sends
    them again when another page has them (``SentLinks.forget``)."""

    urls: list[str]


# Worker -> master
class Hello(NamedTuple):
    """A worker has started: its pid, and its slots, all free."""

    worker: int
    pid: int
    slots: int


class Results(NamedTuple):
    """Results done, requests whose download ended (their hosts are free of
    them: each id with the monotonic time its download started), slots
    freed, and now and then the worker's module counters.  A slot is free
    once its page has room to wait for the parser, which is as soon as its
    download ends unless pages wait for a browser."""

    worker: int
    results: list[PageResult]
    downloaded: list[tuple[int, float]]
    summaries: list[dict[str, Any]] | None
    # Links held back as sent before, that the master asked for again
    # (``Unsent``): (url, priority, depth), for the frontier.
    late: list[tuple[str, int, int]] | None = None
    answers: int = 0  # the Unsent messages these late links answer
    asks: list[tuple[int, str]] | None = None  # a browser's permits wanted: (token, url)
    subs: list[SubDone] | None = None  # granted browser requests that are over
    freed: int = 0  # slots free again


class Bye(NamedTuple):
    """A worker's last word: its modules' figures and its WARC index lines."""

    worker: int
    summaries: list[dict[str, Any]]
    warc_lines: dict[str, int] = {}  # --cdxj: the index lines sent, by WARC file


class Failed(NamedTuple):
    """The worker cannot start (its exit follows)."""

    worker: int
    error: str


ToWorker = FetchBatch | Grants | Stop | NewRules
FromWorker = Hello | Results | Bye | Failed
