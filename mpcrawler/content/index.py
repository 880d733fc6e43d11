"""ContentIndex: the fingerprints of the pages a crawl recorded, to know a page met again.

Beside the seen set (which knows URLs), this knows texts: the exact
digest of each page's normalized text, crawl-wide, and the 64-bit simhash
of each, by host, in pieces (:mod:`mpcrawler.content.fingerprint`).  The
master's settling (:mod:`mpcrawler.master.settle`) asks it about a batch
of pages before it admits their links (``check``); each page gets

- ``duplicate_of``: the first URL whose page had the same digest;
- ``near_duplicate_of``: else a URL of the same host whose simhash is
  within ``NEAR_BITS`` bits (the closest), found through the pieces;

and is added in the same step.  A page met again under its own URL (a
revisit, or a page fetched again after a kill) is not its own duplicate.

**A page costs the same at the 100,000th page of a host as at the 100th.**
A piece of a host (one band's value, :func:`band_key`) keeps its newest
``PIECE_KEEP`` pages, and forgets the older ones as newer come: on a host
of look-alike pages (a forum, a shop, a wiki) one piece would otherwise
hold nearly every page, and reading it whole made each page cost more than
the last.  So a page is compared with at most ``BANDS * PIECE_KEEP``
candidates, read in as many rows, whatever the host holds; the exact
digests stay crawl-wide and whole (one indexed lookup a page).  A near
copy of a page that 16 newer pages sharing its piece have pushed out is
still found when it is near one of them (on such a host it mostly is); the
share of near copies found on a set with known edits is measured by
``benchmarks/bench_simhash.py --index``.  ``read`` and ``compared`` count
the rows read and the candidates compared, for the tests that guard it.

The job dir's is :class:`mpcrawler.frontier.local.content.LocalContentIndex`
(SQLite, written behind a log); the shared crawl's is
:class:`mpcrawler.frontier.redis.content.RedisContentIndex`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

from .fingerprint import NEAR_BITS

__all__ = [
    "PIECE_KEEP",
    "ContentIndex",
    "Met",
    "Page",
    "band_key",
    "nearest",
]

PIECE_KEEP = 16  # pages a piece of a host keeps (its newest): candidates a page, per band


class Page(NamedTuple):
    """A page to look up: its URL, host key, text digest and simhash (None:
    near duplicates are not looked for, and the page is in no piece)."""

    url: str
    host: str
    digest: str
    simhash: int | None


class Met(NamedTuple):
    """What the index knew of a page: the URL that had its text first, or
    the closest near one of its host (None: neither)."""

    duplicate_of: str | None = None
    near_duplicate_of: str | None = None


class ContentIndex(Protocol):
    """Interface: the pages' fingerprints, checked and added a batch at a time."""

    read: int  # entries of pieces read so far (a page: at most BANDS * PIECE_KEEP)
    compared: int  # candidates compared so far (as many at most)

    def check(self, pages: Sequence[Page]) -> list[Met]:
        """What each page met, in order (a page meets those before it in
        ``pages`` too); every page is added."""

    def checkpoint(self) -> None:
        """What was added is durable (at the job's checkpoint)."""

    def close(self) -> None: ...


def nearest(simhash: int, candidates: Iterable[tuple[int, str]], own: str) -> str | None:
    """The name (a URL, or what stands for one) of the candidate ``(simhash,
    name)`` closest to ``simhash``, within NEAR_BITS bits (ties: the first
    met), other than ``own`` (the page's own)."""
    best, best_bits = None, NEAR_BITS + 1
    for other, name in candidates:
        bits = (other ^ simhash).bit_count()  # (hamming's, inline: 64 a page)
        if bits < best_bits and name != own:
            best, best_bits = name, bits
    return best


def band_key(host: str, band: int, value: int) -> int:
    """A signed 64-bit key of one piece of a host's simhashes; kept once
    made (a host's template gives the same few), up to ``_KEYS_HELD`` keys,
    then all forgotten at once (a dict never emptied from its front)."""
    found = _keys.get((host, band, value))
    if found is None:
        if len(_keys) >= _KEYS_HELD:
            _keys.clear()
        data = f"{band}:{value}:{host}".encode()
        found = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big", signed=True)
        _keys[(host, band, value)] = found
    return found


_KEYS_HELD = 16_384
_keys: dict[tuple[str, int, int], int] = {}
