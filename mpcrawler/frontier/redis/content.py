"""RedisContentIndex: a shared crawl's ContentIndex, in Redis.

The same contract as :class:`mpcrawler.frontier.local.content.LocalContentIndex`,
crawl-wide: every node's settling asks it about its batch of pages in one
call of ``content.lua`` (the keys it keeps are described there, under the
crawl's prefix: partition 0's in a partitioned crawl).  The script answers
with the first URL of each digest and the entries of each page's pieces;
the closest within NEAR_BITS is picked here (Lua's numbers cannot hold 64
bits).  A call that fails is an outage of the crawl's Redis
(:class:`~mpcrawler.errors.FrontierUnavailable`): the settling tries the
batch again, and a page met again under its own URL is not its own duplicate.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...content.fingerprint import BANDS, bands
from ...content.index import PIECE_KEEP, Met, Page, nearest
from .link import Link

__all__ = ["RedisContentIndex"]


def _path(page: Page) -> str:
    """``page``'s URL less its host (a piece's key names the host): from its
    ``/``; the whole URL if it does not begin with its host key."""
    rest = page.url[len(page.host) :]
    return rest if page.url.startswith(page.host) and rest.startswith("/") else page.url


def _url(host: str, path: str) -> str:
    return host + path if path.startswith("/") else path


class RedisContentIndex:
    """The index of the crawl whose keys are under ``prefix``, through ``link``."""

    def __init__(self, link: Link, prefix: str) -> None:
        self.link, self.prefix = link, prefix
        self.read = self.compared = 0  # entries of pieces read, candidates compared

    def check(self, pages: Sequence[Page]) -> list[Met]:
        if not pages:
            return []
        self.link.check_up()
        args: list[str | int] = [self.prefix, PIECE_KEEP]
        for page in pages:
            if page.simhash is None:  # (no --near-duplicates: in no piece)
                pieces: list[str] = [""] * (1 + BANDS)
            else:
                pieces = [f"{page.simhash:016x}", *(f"{v:04x}" for v in bands(page.simhash))]
            args += [page.url, page.digest, page.host, *pieces, _path(page)]
        reply = self.link.content(self.prefix + "seq", args)
        met = []
        for k, page in enumerate(pages):
            first, found = reply[2 * k].decode(), reply[2 * k + 1].decode()
            if first:
                met.append(Met(first if first != page.url else None))
                continue
            if page.simhash is None:
                met.append(Met())
                continue
            # an entry: 16 hex digits of its simhash, a space, its path (once
            # a piece: a page in several of this page's pieces is compared once)
            entries = found.split("\n") if found else []
            candidates = {line[17:]: line[:16] for line in entries}
            self.read += len(entries)
            self.compared += len(candidates)
            near = nearest(
                page.simhash, ((int(s, 16), path) for path, s in candidates.items()), _path(page)
            )
            met.append(Met(None, None if near is None else _url(page.host, near)))
        return met

    def checkpoint(self) -> None:
        """Nothing to do: Redis's own persistence (AOF) makes it durable."""

    def close(self) -> None:
        """Nothing to do: the frontier's link is closed with it."""
