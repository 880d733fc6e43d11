"""WarcRecorder: the archive's side in a worker (``--warc``): each fetch
written to the worker's WARC files before its result leaves, and what a
failure to write means for the page.

Owned by one worker process (:mod:`mpcrawler.worker.process`), shared by
its download threads, its parser and its render threads (the files take
a lock around each fetch's records).  Without ``--warc`` it holds no files
and writes nothing, and warcio is never imported.

A failure to write (a full disk, an I/O error) is the page's error
(``WARC_FAILED``): the master stops the crawl without recording the page,
since a page recorded without its archive would be lost for good, and
nothing more is written from then on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..messages import WARC_FAILED, PageResult
from ..settings.worker import WorkerConfig

if TYPE_CHECKING:
    from ..revisits.records import Revisit
    from ..worker.downloader import Exchange, Response
    from .warc import WarcFiles

__all__ = ["WarcRecorder"]


class WarcRecorder:
    """A worker's WARC files (None: not archiving) and whether they failed."""

    def __init__(self, files: WarcFiles | None) -> None:
        self.files = files
        self.failed: OSError | None = None  # after a failure nothing more is written

    @classmethod
    def of(cls, settings: WorkerConfig) -> WarcRecorder:
        """The recorder of a worker with these settings (warcio imported only with --warc)."""
        if not settings.warc_dir:
            return cls(None)
        from .warc import WarcFiles

        return cls(
            WarcFiles(
                settings.warc_dir,
                settings.warc_size,
                {"robots": settings.robots, "user_agent": settings.user_agent},
                index=settings.cdxj or bool(settings.wacz),
            )
        )

    def fetch(
        self,
        result: PageResult,
        url: str,
        exchange: Exchange | None,
        revisit: Revisit | None = None,
    ) -> None:
        """Write the fetch, if archiving, into ``result``'s WARC fields: a
        ``revisit`` record for a page unchanged since ``revisit``'s capture."""
        if self.files is None or exchange is None:
            return
        if self.failed is not None:
            self.fail(result, self.failed)
            return
        try:
            written = self.files.write_fetch(url, exchange, revisit)
        except OSError as exc:
            self.fail(result, exc)
            return
        result.warc_file, result.warc_offset = written.file, written.offset
        result.cdxj = written.cdxj
        result.warc_id, result.warc_date = written.record_id, written.date
        result.revisit = revisit.profile if revisit is not None else None

    def page(self, result: PageResult, response: Response, links: Sequence[str]) -> None:
        """The page's analysis, archived beside its response: its outlinks
        and (with --extract) its text as a conversion record."""
        if self.files is None or response.exchange is None or self.failed:
            return
        try:
            self.files.write_outlinks(response.url, list(links))
            if result.item.get("text") and result.warc_id is not None:
                self.files.write_conversion(response.url, result.warc_id, result.item["text"])
        except OSError as exc:
            self.fail(result, exc)

    def fail(self, result: PageResult, exc: OSError) -> None:
        """The archive cannot be written: the page's result says so, and
        nothing more is written."""
        self.failed = exc
        result.error = f"cannot write the WARC archive: {exc}"
        result.error_kind = WARC_FAILED
        result.warc_errno = exc.errno
        result.warc_file = result.warc_offset = None

    def close(self) -> dict[str, int]:
        """Close the files; how many CDXJ lines each gave (--cdxj, --wacz), for the master."""
        if self.files is None:
            return {}
        with contextlib.suppress(OSError):  # after a failure it may not flush
            self.files.close()
        return dict(self.files.lines) if self.files.index else {}
