"""mpcrawler's exceptions: one hierarchy with a common base, as requests has.

Catch :class:`MpcrawlerError` for anything mpcrawler raises on purpose, or a
branch of it at the level you need::

    MpcrawlerError
    +-- UsageError        the command line, a setting or a file given is wrong (exit 2)
    |   +-- JobConflict   the job directory belongs to other settings or another version
    +-- JobDamaged        a file of the job directory is damaged (exit 1; say which)
    +-- InvalidURL        not a fetchable URL (also a ValueError)
    +-- FrontierError     the frontier's files (or its Redis) cannot be used
    |   +-- FrontierUnavailable  Redis cannot be reached now; try again later
    +-- CrawlError        the crawl cannot go on (the job stays resumable)
    |   +-- PoolError     worker processes cannot be started, or one failed
    |   +-- ArchiveError  the WARC archive cannot be written (the page is not recorded)
    |   +-- SinkError     an --out sink or the --upload store refuses the records
    +-- DownloadError     one fetch failed; becomes that page's record (downloader.py
                          has a subclass per kind)

Each class lives here; the modules that raise them import them from here.
So do the two rules that tell a full disk from damage (``is_disk_full``,
``full_disk_error``): a store that cannot be written for want of room is
not damaged, and must not be called so (a ``--repair`` would set it aside).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from typing import Any

__all__ = [
    "ArchiveError",
    "CrawlError",
    "DownloadError",
    "FrontierError",
    "FrontierUnavailable",
    "InvalidURL",
    "JobConflict",
    "JobDamaged",
    "MpcrawlerError",
    "PoolError",
    "SinkError",
    "UsageError",
    "full_disk_error",
    "is_disk_full",
]

DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
LOW_SPACE = 1 << 20  # free bytes under which an SQLite I/O error is taken for a full disk


def is_disk_full(exc: BaseException) -> bool:
    """``exc`` says the disk is full (an OSError, or SQLite's own words)."""
    if isinstance(exc, OSError):
        return exc.errno in DISK_FULL
    return isinstance(exc, sqlite3.OperationalError) and "full" in str(exc)


def full_disk_error(exc: BaseException, where: str | os.PathLike[str]) -> OSError | None:
    """An ENOSPC OSError if ``exc``, raised opening a store at ``where``,
    came of a full disk (SQLite says "disk I/O error" for some writes that
    found no room: then the free space decides), else None."""
    full = is_disk_full(exc)
    if not full and isinstance(exc, sqlite3.OperationalError) and "I/O error" in str(exc):
        path = Path(where)
        while not path.exists() and path != path.parent:
            path = path.parent
        try:
            info = os.statvfs(path)
            full = info.f_bavail * info.f_frsize < LOW_SPACE
        except OSError:
            full = False
    if not full:
        return None
    return OSError(errno.ENOSPC, f"no room to write {where} ({exc})")


class MpcrawlerError(Exception):
    """The base of every exception mpcrawler raises on purpose."""


class UsageError(MpcrawlerError, ValueError):
    """A problem with the command line, a setting or a file: one line, exit 2."""


class JobConflict(UsageError):
    """The job directory cannot be used with these settings (or this version)."""


class JobDamaged(MpcrawlerError):
    """A file of the job directory is damaged: the message names it and says
    what would mend it.  Nothing is crawled from a damaged job (exit 1)."""


def store_damaged(exc: BaseException, where: str | os.PathLike[str], why: str) -> Exception:
    """What ``exc``, raised opening a store at ``where``, means: a full disk
    (an ENOSPC OSError: not damage, no room to write it), else damage
    (JobDamaged saying ``why``, and what would fix it)."""
    return full_disk_error(exc, where) or JobDamaged(why)


class InvalidURL(MpcrawlerError, ValueError):
    """The text is not a URL that can be fetched: a browser would refuse it,
    or it is not http(s).  ``reason`` is a short phrase for records."""

    def __init__(self, reason: str, url: str) -> None:
        super().__init__(f"{reason}: {url!r}")
        self.reason = reason
        self.url = url


class FrontierError(MpcrawlerError):
    """The frontier cannot be used (wrong format, unreadable state, closed, or
    its Redis unreachable for good)."""


class FrontierUnavailable(FrontierError):
    """The shared frontier's Redis cannot be reached at the moment: nothing
    was lost, and the same call may be made again once it is back."""


class CrawlError(MpcrawlerError):
    """The crawl cannot go on (workers cannot start, the disk is full...).
    The job directory is left resumable."""


class PoolError(CrawlError):
    """Workers cannot be started, or one failed in a way a restart cannot mend."""


class ArchiveError(CrawlError):
    """A page's WARC records could not be written: the crawl stops and the
    page is not recorded, so a rerun fetches and archives it again."""


class SinkError(CrawlError):
    """An ``--out`` sink (a database, a Parquet dataset, a compressed file)
    or the ``--upload`` store could not take what it was given: the crawl
    stops, and a rerun delivers what the sink had not taken, from the job's
    JSON Lines journal."""


class DownloadError(MpcrawlerError):
    """The request failed.  ``kind`` names the failure for stats; ``transient``
    says whether a retry may succeed; ``status`` is set when a response came."""

    kind = "download"
    transient = False
    exchange: Any = None  # the part that came, as a downloader.Exchange, if it keeps them

    def __init__(
        self, message: str, status: int | None = None, content_type: str = "", size: int = 0
    ) -> None:
        super().__init__(message)
        self.status = status
        self.content_type = content_type
        self.size = size
