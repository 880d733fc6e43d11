"""Worker processes: download slots that turn requests into result messages.

A worker owns ``threads`` download slots, each with its own Downloader (and
so its own HTTP session) and thread, and one parser thread with the
Analyzer.  It talks to the master over one duplex pipe, in the small named
types of :mod:`mpcrawler.messages`::

    master -> worker   FetchBatch([Fetch(id, url, kind, depth, deadline), ...])
                       NewRules(scope, exclude)                 control add-seeds, exclude
                       Grants(granted, refused)                 --render: the browser's permits
                       Stop()
    worker -> master   Hello(worker, pid, slots)                slots free at start
                       Results(worker, [PageResult, ...], [(downloaded id, started), ...],
                               summaries | None, ..., asks, subs, freed)
                       Bye(worker, summaries)
                       Failed(worker, error)                    it cannot start

Scheduling is pull-based: ``Hello`` announces every slot free, each
downloaded id says that request's download is over (its host is free of
it; its result follows, in the same message or a later one), and ``freed``
counts the slots free again, so the master never sends a worker more
requests than it has free slots, and a host's concurrency counts only
requests actually talking to it.  A slot is free as soon as its page has
room to wait for the parser, which is as soon as its download ends: parsing
never holds a download slot.  At most ``threads`` pages wait for the parser
(then the slots stay taken and no more requests come: a request never waits
in the worker, counted against its host, for a parser or a browser busy
with other pages), so at most ``2 x threads + 1`` responses are in
memory.  One parser, not one per slot: parsing holds the GIL, so parsers
would only take turns, and each thread more that wants the GIL costs CPU.

With --extract, a PDF goes from the parser to the worker's documents
thread (:mod:`mpcrawler.worker.documents`), which has it read in a process
of its own within --pdf-timeout and reports it: the parser goes on.

With --render, a parsed page that needs a browser goes to the render
threads instead (:mod:`mpcrawler.render.renderer`), whose browser's
requests each wait for the master's permit; the parser and the render
threads analyze one page at a time (``parse_lock``).

A receiver thread reads the pipe at all times, so a send from the master
never blocks on a busy worker; the main thread batches what is finished into
one message.  Workers ignore SIGINT: the master alone decides how to stop.
If the master's end of the pipe closes, the worker exits at once.

A worker is a batch task to Linux's scheduler (``SCHED_BATCH``,
``as_batch``): its work is throughput, the master's is the crawl's
latency, and a worker woken by the master's send no longer takes the CPU
the master was sending from.  In a crawl of the lab site's 2,000 pages on
2 cores (2 x 4), the master was preempted about 3,000 times and 300 so, its CPU a
page fell 16%, the workers' 7%, and pages/s rose 8% (medians of 8
alternated runs).

With a downloader that drives its slots from one thread
(``Downloader.transfers``: ``--downloader curl``) and no browser, none of
these threads run: one thread does it all (:mod:`mpcrawler.worker.loop`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from .. import framing, stopsignals
from ..archive.recorder import WarcRecorder
from ..content.fingerprint import fingerprint
from ..messages import (
    Bye,
    Failed,
    Fetch,
    FetchBatch,
    Grants,
    Hello,
    NewRules,
    PageResult,
    Results,
    Stop,
    Unsent,
)
from ..modules import load_object, process_usage
from ..revisits.records import revisit_of
from ..robots.page import (
    agent_token,
    apply_nofollow,
    page_directives,
)
from ..robots.rules import decode_robots
from ..settings.worker import WorkerConfig
from ..web.filters import FirstSeen, UrlRules
from ..web.pdf import PdfContent, PdfError
from ..web.urls import Scope
from .analyzer import Analyzer
from .documents import Documents, Page
from .downloader import Downloader, DownloadError, Response
from .fetches import PARSE, REDIRECT, SKIPPED, SLOW_DOWN, fetch_call, response_action
from .links import SENT_LINKS, LinkResolver, SentLinks, document_base
from .listings import Listings
from .outbox import ENDED, WAKE, Outgoing, to_parser

if TYPE_CHECKING:
    from ..render.renderer import Rendering

__all__ = ["run_worker"]

_SUMMARY_INTERVAL = 0.5


class Worker:
    """A worker process's parts: its download slots, parser, pipe and archive (see the module)."""

    def __init__(
        self,
        index: int,
        conn: Connection,
        settings: WorkerConfig,
        scope: Scope,
        exclude: Sequence[str] = (),
    ) -> None:
        self.index, self.conn = index, conn
        # The master is gone (its end of the pipe closed): nobody wants our
        # results, so the process exits at once.  (A test that runs a worker
        # in a thread stops it instead: an exit would end the test run, 0.)
        self.master_gone: Callable[[], None] = lambda: os._exit(0)
        self.settings = settings
        self.slots = settings.threads
        downloader_cls = load_object(settings.downloader)
        analyzer_cls = load_object(settings.analyzer)
        self.downloaders: list[Downloader] = downloader_cls.for_slots(settings, self.slots)
        self.analyzer: Analyzer = analyzer_cls(settings)
        self.refused = FirstSeen(SENT_LINKS)  # links refused and reported (once each)
        self.set_rules(scope, exclude)
        self.sent = SentLinks()
        self.agent = agent_token(settings.user_agent)
        self.recorder = WarcRecorder.of(settings)
        self.inbox: queue.SimpleQueue[Fetch | None] = queue.SimpleQueue()
        # A thread per download slot, and one parser: parsing is Python under
        # the GIL, so parsing threads would only take turns, and every thread
        # more that wants the GIL costs each page CPU (one worker of 4 slots
        # spent 1.45 ms a page with a parser per slot, against 0.84 with one
        # slot).  A download ends, its slot is free, the page waits for the
        # parser (at most ``slots`` pages: then downloads wait too).
        self.threads = self.slots
        self.free_downloaders: queue.SimpleQueue[Downloader] = queue.SimpleQueue()
        for downloader in self.downloaders:
            self.free_downloaders.put(downloader)
        self.to_parse: queue.Queue[tuple[PageResult, Response, int] | None] = queue.Queue(
            maxsize=self.slots
        )
        self._downloading = self.threads
        self._downloading_lock = threading.Lock()
        # What the threads hand the sender (``run``), sent in one message
        # with whatever else waits then.
        self.outbox: queue.SimpleQueue[Outgoing] = queue.SimpleQueue()
        self._late: list[tuple[str, int, int]] = []  # (url, priority, depth)
        self._answers = 0  # Unsent messages to answer
        self._late_lock = threading.Lock()
        self.parse_lock = threading.Lock()  # one analysis at a time: the parser's or the render's
        self.looping = False  # one thread does everything (``loop.run_loop``)
        self.rendering: Rendering | None = None
        if settings.render != "never":
            from ..render.renderer import Rendering  # playwright only when rendering

            self.rendering = Rendering(self)
        self.documents: Documents | None = None  # --extract: PDFs read off the parser
        if settings.extract and self.analyzer.reads_pdfs:
            self.documents = Documents(settings.pdf_timeout, self.slots, self.document_read)
        self.documents_read: deque[PageResult] = deque()  # for the event loop to send

    # -------------------------------------------------------------- threads
    def receive(self) -> None:
        """The receiver thread: take in every message until Stop."""
        try:
            while self.take(self.conn.recv()):
                pass
        except (EOFError, OSError):
            self.master_gone()
        for _ in range(self.threads):
            self.inbox.put(None)

    def take(self, message: Any) -> bool:
        """Act on a message from the master: requests go to ``inbox``
        (False: it says stop)."""
        if isinstance(message, FetchBatch):
            for fetch in message.requests:
                self.inbox.put(fetch)
        elif isinstance(message, Grants) and self.rendering is not None:
            self.rendering.answer(message)
        elif isinstance(message, NewRules):
            self.set_rules(Scope.from_dict(message.scope), message.exclude)
        elif isinstance(message, Unsent):  # answered, even with nothing
            late = self.sent.forget(message.urls)
            with self._late_lock:  # the sender sends them
                self._late += late
                self._answers += 1
            if not self.looping:  # (the event loop sends at every turn)
                self.outbox.put(WAKE)
        elif isinstance(message, Stop):
            return False
        return True

    def set_rules(self, scope: Scope, exclude: Sequence[str]) -> None:
        """The crawl's rules changed: links are filtered by them from now on
        (one assignment each, so the parser sees the old rules or the new)."""
        self.rules = UrlRules.from_settings(self.settings, scope, exclude)
        self.resolver = LinkResolver(self.rules, self.settings.max_url_length)
        self.listings = Listings(self.settings, self.rules, self.resolver, self.refused)

    def work(self) -> None:
        """A download thread: take a request, download it in a free slot,
        free the slot, hand the page to the parser (or report it)."""
        while (fetch := self.inbox.get()) is not None:
            # The master sends no more requests than there are free slots, so
            # a Downloader is always free here.
            downloader = self.free_downloaders.get()
            started = time.monotonic()  # the host's politeness counts from here
            try:
                result, response = self.download(downloader, fetch)
            finally:
                self.free_downloaders.put(downloader)
            if response is None:
                self.outbox.put(Outgoing(result, (fetch.id, started), 1))
                continue
            to_parser(
                self.outbox, self.to_parse, (result, response, fetch.depth + 1), (fetch.id, started)
            )
        with self._downloading_lock:
            self._downloading -= 1
            if not self._downloading:
                self.to_parse.put(None)  # the last one out stops the parser
        self.outbox.put(ENDED)

    def parse(self) -> None:
        """The parser thread: analyze each downloaded page, report it."""
        while (job := self.to_parse.get()) is not None:
            result, response, depth = job
            if self.hand_off(result, response, depth):
                continue
            with self.parse_lock:
                reason = self.analyze(result, response, depth)
            if reason is not None and self.rendering is not None:
                self.rendering.put((result, response, depth, reason))  # it reports the page
            else:
                self.outbox.put(Outgoing(result))
        if self.rendering is not None:
            self.rendering.end()  # the render threads end after the parser
        if self.documents is not None:  # so does the documents thread, before this one
            self.documents.end()
            self.documents.join()
        self.outbox.put(ENDED)

    def hand_off(self, result: PageResult, response: Response, depth: int) -> bool:
        """Give a document (a PDF to read) to the documents thread, which
        reports it (True); anything else is for the caller to analyze."""
        if (
            self.documents is None
            or result.kind == "sitemap"
            or not self.analyzer.is_document(response)
        ):
            return False
        self.documents.put(Page(result, response, depth))
        return True

    def document_read(self, page: Page, content: PdfContent | PdfError) -> None:
        """The documents thread: a page whose document was read (``content``,
        or the error that is the page's), analyzed and reported."""
        with self.parse_lock:
            self.analyze(page.result, page.response, page.depth, document=content)
        if self.looping:
            self.documents_read.append(page.result)
        else:
            self.outbox.put(Outgoing(page.result))

    def summaries(self) -> list[dict[str, Any]]:
        """Module counters, and this process's own CPU time and memory."""
        return [
            *(d.summary() for d in self.downloaders),
            self.analyzer.summary(),
            *([self.rendering.summary()] if self.rendering is not None else []),
            {
                "id": f"W{self.index}|pid-{os.getpid()}",
                "type": "Worker",
                **process_usage(),
                "scheduling": scheduling(),
                **(self.documents.summary() if self.documents is not None else {}),
            },
        ]

    def run(self) -> None:
        """Serve the master until told to stop: with one thread for every
        slot (:mod:`mpcrawler.worker.loop`) when the downloader can drive
        them so and no browser renders, else with a thread a slot."""
        transfers = None
        if self.rendering is None:
            transfers = type(self.downloaders[0]).transfers(self.downloaders)
        if transfers is not None:
            from .loop import run_loop

            run_loop(self, transfers)
        else:
            self.run_threads()
        self.finish()

    def run_threads(self) -> None:
        """A thread a download slot, one parser, and this one that sends."""
        threading.Thread(target=self.receive, name="receiver", daemon=True).start()
        for n in range(self.threads):
            threading.Thread(target=self.work, name=f"download-{n}", daemon=True).start()
        threading.Thread(target=self.parse, name="parser", daemon=True).start()
        running = self.threads + 1
        if self.rendering is not None:
            for n in range(self.rendering.tabs):
                threading.Thread(target=self.rendering.run, name=f"render-{n}", daemon=True).start()
            running += self.rendering.tabs
        framing.send(self.conn, Hello(self.index, os.getpid(), self.slots))
        last_summary = 0.0
        while running:
            batch: list[PageResult] = []
            downloaded: list[tuple[int, float]] = []
            freed = 0
            item = self.outbox.get()
            while True:
                if item.ended:
                    running -= 1
                else:
                    if item.result is not None:
                        batch.append(item.result)
                    if item.downloaded is not None:
                        downloaded.append(item.downloaded)
                    freed += item.freed
                try:
                    item = self.outbox.get_nowait()
                except queue.Empty:
                    break
            last_summary = self.send_results(batch, downloaded, freed, last_summary)

    def send_results(
        self,
        batch: list[PageResult],
        downloaded: list[tuple[int, float]],
        freed: int,
        last_summary: float,
    ) -> float:
        """Send what is finished, with the links held back and the
        browser's permits, in one message if there is any; the module
        summaries go with it every ``_SUMMARY_INTERVAL`` (returns when they
        last went)."""
        with self._late_lock:
            late, self._late = self._late, []
            answers, self._answers = self._answers, 0
        asks, subs = self.rendering.permits.take() if self.rendering else ([], [])
        if batch or downloaded or freed or answers or asks or subs:
            now = time.monotonic()
            summaries = None
            if now - last_summary >= _SUMMARY_INTERVAL:
                summaries, last_summary = self.summaries(), now
            message = Results(
                self.index,
                batch,
                downloaded,
                summaries,
                late,
                answers,
                asks=asks or None,
                subs=subs or None,
                freed=freed,
            )
            framing.send(self.conn, message)
        return last_summary

    def finish(self) -> None:
        """Close the slots and the archive, and say goodbye with the last figures."""
        for downloader in self.downloaders:
            downloader.close()
        lines = self.recorder.close()
        framing.send(self.conn, Bye(self.index, self.summaries(), lines))

    # ------------------------------------------------------------- requests
    def download(self, downloader: Downloader, fetch: Fetch) -> tuple[PageResult, Response | None]:
        """The result so far, and the response if it still needs parsing."""
        result, call = fetch_call(fetch, self.settings, downloader.id)
        if call is None:
            return result, None
        started = time.perf_counter()
        try:
            outcome: Response | Exception = downloader.download(fetch.url, **call)
        except Exception as exc:  # what it means: ``downloaded``
            outcome = exc
        return self.downloaded(result, fetch, outcome, started)

    def downloaded(
        self, result: PageResult, fetch: Fetch, outcome: Response | Exception, started: float
    ) -> tuple[PageResult, Response | None]:
        """What the download ``started`` (``perf_counter``) ended with, its
        response or what it raised, in ``result``, archived; and the response
        if it still needs parsing."""
        result.elapsed_ms = round((time.perf_counter() - started) * 1000.0, 2)
        if isinstance(outcome, DownloadError):
            self.recorder.fetch(result, fetch.url, outcome.exchange)
            result.status, result.error, result.error_kind = (
                outcome.status,
                str(outcome),
                outcome.kind,
            )
            result.transient, result.content_type, result.bytes = (
                outcome.transient,
                outcome.content_type,
                outcome.size,
            )
            return result, None
        if isinstance(outcome, Exception):  # a user Downloader's bug is this page's error
            result.error = f"downloader: {type(outcome).__name__}: {outcome}"
            result.error_kind = "downloader"
            return result, None
        response = outcome
        if fetch.kind == "robots":
            self.recorder.fetch(result, response.url, response.exchange)
            result.status = response.status
            result.body = decode_robots(response.body)
            return result, None
        self.recorder.fetch(result, fetch.url, response.exchange, revisit_of(fetch.prior, response))
        result.status, result.content_type = response.status, response.content_type
        result.bytes = len(response.body)
        result.digest = response.digest
        result.etag = response.headers.get("etag")
        result.last_modified = response.headers.get("last-modified")
        action = response_action(response.status, response.headers, response.skipped)
        if action == PARSE:
            return result, response
        if action == SLOW_DOWN:
            # Not parsed: its result goes with the end of its download, so the
            # host is slowed down before its next request can start.
            result.retry_after = response.headers.get("retry-after")
        elif action == REDIRECT:
            result.location = response.headers["location"]  # the master resolves it
        elif action == SKIPPED:  # a type not accepted: its headers are all there is
            result.skipped = response.skipped
        if response.skipped:
            result.digest = None  # of no body read
        return result, None  # NOT_MODIFIED: the last capture's links stand

    def analyze(
        self,
        result: PageResult,
        response: Response,
        depth: int,
        rendered: bool = False,
        navigations: Sequence[str] = (),
        document: PdfContent | PdfError | None = None,
    ) -> str | None:
        """Add the Analyzer's links (those of ``depth``) and item to
        ``result`` (its error, if it raises).  Returns why the page is to be
        rendered first (--render; nothing is added then), unless it is
        ``rendered`` already (``navigations``: where its scripts tried to go,
        links too).  A ``document`` was read by the documents thread: what it
        found, or the page's error."""
        if self.listings.read(result, response):
            return None
        try:
            analysis = (
                self.analyzer.analyze(response)
                if document is None
                else self.analyzer.read_document(response, document)
            )
            if self.rendering is not None and not rendered:
                reason = self.rendering.reason(result, response, analysis)
                if reason is not None:
                    return reason
            base = document_base(analysis.base, response.url)
            links = self.resolver.resolve_all([*analysis.links, *navigations], base)
            result.links = len(links)
            directives = page_directives(
                analysis.metas, _header_values(response, "x-robots-tag"), self.agent
            )
            result.robots_meta = directives
            obey = not self.settings.ignore_nofollow
            if obey:
                marked = {self.resolver.canonical(href, base) for href in analysis.nofollow}
                links = apply_nofollow(links, directives, marked)
            result.outlinks = [(url, priority) for url, rule, priority in links if rule is None]
            result.dropped = [
                (url, rule)
                for url, rule, _ in links
                if rule is not None and self.refused.first(url)
            ]
            if self.settings.record_links:
                result.all_links = [(url, rule is None, p) for url, rule, p in links]
            if analysis.embeds and self.settings.page_requisites:
                self.listings.add_embeds(result, analysis.embeds, base)
            result.canonical = self.listings.canonical(analysis.canonical, response, base)
            if analysis.text and self.settings.dedup:  # (a simhash: --near-duplicates)
                found = fingerprint(analysis.text, self.settings.near_duplicates)
                result.text_digest, result.simhash = found or (None, None)
            result.item = analysis.item if not (obey and "noindex" in directives) else {}
            self.recorder.page(result, response, [url for url, _, _ in links])
        except Exception as exc:
            kind = getattr(exc, "error_kind", "analyzer")  # a PDF that cannot be read: "pdf"
            result.error = (
                f"{kind}: {exc}"
                if kind != "analyzer"
                else (f"analyzer: {type(exc).__name__}: {exc}")
            )
            result.error_kind = kind
            result.links, result.outlinks, result.embeds = 0, [], []
        if result.error is None and 200 <= (result.status or 0) < 300:
            result.outlinks = self.sent.first_times(result.outlinks, depth)
        return None


def _header_values(response: Response, name: str) -> list[str]:
    value = response.headers.get(name)
    return [value] if value else []


def _log_to_file(log_file: str | None) -> None:
    """A worker's log, and the warnings its libraries and plug-ins raise (each
    once), go to the log file, never to the terminal under the progress line."""
    warnings.simplefilter("once", append=True)  # after the filters that ignore
    logging.captureWarnings(True)
    root = logging.getLogger()
    if log_file:
        handler: logging.Handler = logging.FileHandler(log_file, encoding="utf-8")
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s[worker]: %(message)s")
        )
        root.setLevel(logging.INFO)
    else:
        handler = logging.NullHandler()
    root.addHandler(handler)


def run_worker(
    index: int,
    conn: Connection,
    config: dict[str, Any],
    scope: dict[str, list[str]],
    exclude: list[str],
) -> None:
    """Entry point of a worker process (``config``: its WorkerConfig as
    plain data).  It ignores stop signals (they are the master's), and says
    why before it exits if it cannot start."""
    for signum in stopsignals.STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    as_batch()  # before any thread starts: a thread takes its creator's policy
    _log_to_file(config.get("log_file"))
    try:
        worker = Worker(
            index, conn, WorkerConfig.from_dict(config), Scope.from_dict(scope), exclude
        )
    except Exception as exc:
        with contextlib.suppress(OSError):
            framing.send(conn, Failed(index, f"{type(exc).__name__}: {exc}"))
        raise SystemExit(1) from None  # the master reports it, in one line
    worker.run()


def as_batch() -> None:
    """Make this thread, and those it starts, a batch task of the kernel's
    scheduler where there is one (Linux's ``SCHED_BATCH``: never preempts a
    task on waking, treated as CPU-bound); elsewhere, or where it is
    refused (a sandbox's system call filter), nothing changes."""
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is not None:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, policy, os.sched_param(0))


def scheduling() -> str:
    """This thread's scheduling policy, as stats.json shows a worker's:
    ``batch``, ``other`` (the default), ``idle``, ``fifo``, ``rr``;
    ``unknown`` where there is no such call."""
    if not hasattr(os, "sched_getscheduler"):
        return "unknown"
    policy = os.sched_getscheduler(0)
    names = ("OTHER", "BATCH", "IDLE", "FIFO", "RR")
    return next((n.lower() for n in names if getattr(os, "SCHED_" + n, None) == policy), "unknown")
