"""What the worker's render threads and its event loop use of it: two
small interfaces, so neither imports the Worker (no import circle), and
what each reaches is named here, not found in the Worker's internals.

:class:`mpcrawler.worker.process.Worker` is both; a test checks it.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Protocol

from ..messages import Fetch, PageResult
from ..settings.worker import WorkerConfig
from ..web.filters import UrlRules
from .links import LinkResolver
from .outbox import Outgoing

if TYPE_CHECKING:
    from ..archive.recorder import WarcRecorder
    from .documents import Documents
    from .downloader import Downloader, Response

__all__ = ["LoopSide", "RenderSide"]


class _Analyzes(Protocol):
    """What both use: the page's analysis, one at a time (``parse_lock``)."""

    slots: int
    parse_lock: threading.Lock

    def analyze(
        self,
        result: PageResult,
        response: Response,
        depth: int,
        rendered: bool = False,
        navigations: Any = (),
        document: Any = None,
    ) -> str | None: ...


class RenderSide(_Analyzes, Protocol):
    """The worker as its render threads (:mod:`mpcrawler.render.renderer`) see it."""

    settings: WorkerConfig
    outbox: queue.SimpleQueue[Outgoing]
    rules: UrlRules
    resolver: LinkResolver
    recorder: WarcRecorder


class LoopSide(_Analyzes, Protocol):
    """The worker as its event loop (:mod:`mpcrawler.worker.loop`) sees it."""

    index: int
    conn: Connection
    inbox: queue.SimpleQueue[Fetch | None]
    looping: bool
    downloaders: list[Downloader]
    documents: Documents | None
    documents_read: deque[PageResult]
    master_gone: Callable[[], None]

    def take(self, message: Any) -> bool: ...

    def downloaded(
        self, result: PageResult, fetch: Fetch, outcome: Response | Exception, started: float
    ) -> tuple[PageResult, Response | None]: ...

    def hand_off(self, result: PageResult, response: Response, depth: int) -> bool: ...

    def send_results(
        self,
        batch: list[PageResult],
        downloaded: list[tuple[int, float]],
        freed: int,
        last_summary: float,
    ) -> float: ...
