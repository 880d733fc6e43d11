"""Links, as a worker makes them: resolved, canonical, in scope, sent once.

``document_base`` is what a page's links resolve against; ``LinkResolver``
turns an analyzer's raw hrefs into canonical URLs (memoised by the part of
the base each depends on), within ``--max-url-length``, marked in or out of
scope; ``SentLinks`` remembers which links this worker already sent the
master, so most repeats of navigation links never cross the pipe.  Used by
:mod:`.process`; no I/O.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

from ..messages import Link, link_parts
from ..web.filters import UrlRules
from ..web.urls import C0_AND_SPACE, InvalidURL, resolve

__all__ = ["SENT_LINKS", "LinkResolver", "SentLinks", "document_base"]

SENT_LINKS = 1 << 16  # links a worker remembers having sent (SentLinks)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_SLASHES = ("/", "\\")
_NO_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")


def document_base(href: str, url: str) -> str:
    """What a page's links resolve against: its ``<base href>`` resolved
    against its URL (any scheme, without the fragment), or the URL itself if
    that fails, as HTML says."""
    if href == url:
        return url
    try:
        return resolve(href, url).partition("#")[0]
    except InvalidURL:
        return url


class LinkResolver:
    """Resolves, canonicalises (by the crawl's ``UrlRules``: query clean-up
    included), length-checks and filters raw hrefs.

    Keeps a bounded memo keyed by the href and the part of the base URL its
    resolution depends on (nothing, the scheme, the origin, the directory or
    the whole URL, by the WHATWG rules: a backslash counts as a slash, and
    ``http:x`` against an http base is relative), because the same links
    repeat on many pages of a site.
    """

    def __init__(self, rules: UrlRules, max_url_length: int, memo_size: int = 10_000) -> None:
        self.rules = rules
        self.max_url_length = max_url_length
        self._memo: dict[tuple[str, str], str | None] = {}
        self._memo_size = memo_size
        self._refusals: dict[str, str | None] = {}  # url -> rules.refusal(url), as memoized

    @staticmethod
    def _memo_base(href: str, base: str) -> str:
        """The part of the canonical ``base`` that resolving ``href`` depends on.

        ``href`` has no tab or newline and nothing to strip at its ends.
        """
        scheme = _SCHEME.match(href)
        if scheme:
            if scheme.group().lower() != base[: scheme.end()]:
                return ""  # another scheme than the base's: absolute
            href = href[scheme.end() :]  # the base's own scheme: "http:x" is relative
        if href[:1] in _SLASHES:
            if href[1:2] in _SLASHES:
                return base[: base.find(":")]  # "//host/...": the scheme
            origin_end = base.find("/", base.find("//") + 2)
            return base if origin_end < 0 else base[:origin_end]  # scheme and host
        if not href or href[0] in "?#":
            return base  # the whole page URL
        query = base.find("?")
        path = base if query < 0 else base[:query]
        return path[: path.rfind("/") + 1]  # the page's directory

    def canonical(self, href: str, base: str) -> str | None:
        """The canonical URL ``href`` names on a page whose base is ``base``
        (canonical), or None if it is not a fetchable URL or too long."""
        stripped = href.strip(C0_AND_SPACE)
        if "\t" in stripped or "\n" in stripped or "\r" in stripped:
            stripped = stripped.translate(_NO_TAB_OR_NEWLINE)
        key = (self._memo_base(stripped, base), stripped)
        cached = self._memo.get(key, "")
        if cached != "":
            return cached
        try:
            url: str | None = self.rules.canonical(stripped, base)
        except InvalidURL:
            url = None
        if url is not None and len(url) > self.max_url_length:
            url = None
        if len(self._memo) >= self._memo_size:
            self._memo.clear()
        self._memo[key] = url
        return url

    def resolve(self, hrefs: list[str | Link], base: str) -> tuple[int, list[str]]:
        """(number of distinct fetchable links, the allowed ones in page order)."""
        links = self.resolve_all(hrefs, base)
        return len(links), [url for url, refusal, _ in links if refusal is None]

    def resolve_all(self, hrefs: list[str | Link], base: str) -> list[tuple[str, str | None, int]]:
        """The distinct fetchable links in page order, each with the rule
        that refuses it (None: the crawl wants it) and its priority (a
        Link's, else 0; the highest, for a URL linked more than once)."""
        found: dict[str, tuple[str | None, int]] = {}
        refusals = self._refusals
        for link in hrefs:
            href, priority = (link, 0) if type(link) is str else link_parts(link)
            if len(href) > self.max_url_length * 3:
                continue
            url = self.canonical(href, base)
            if url is None:
                continue
            known = found.get(url)
            if known is None:
                rule = refusals.get(url, "")
                if rule == "":  # the same links repeat on many pages: asked once
                    if len(refusals) >= self._memo_size:
                        refusals.clear()
                    rule = refusals[url] = self.rules.refusal(url)
                found[url] = (rule, priority)
            elif priority > known[1]:
                found[url] = (known[0], priority)
        return [(url, rule, priority) for url, (rule, priority) in found.items()]


class SentLinks:
    """The links this worker has sent the master, by the smallest depth sent.

    Most links on a page were on the pages before it (navigation, index
    pages), and the master would only find them seen again; a link is sent
    again only from a shallower page (it may be within --max-depth there).
    A link left out was admitted, or refused for good (seen, or its host's
    budget spent), at that depth or less; unless the master did not follow
    the page that sent it (a duplicate): it says so (``forget``), and the
    links held back meanwhile (``held``) are sent again.  Bounded: the
    oldest ``size`` entries go.
    """

    def __init__(self, size: int = SENT_LINKS) -> None:
        self.size = size
        # (OrderedDicts: emptied from their front, a dict costs a scan of its holes)
        self._depths: OrderedDict[str, int] = OrderedDict()
        self._held: OrderedDict[str, tuple[int, int]] = OrderedDict()  # url -> (priority, depth)
        self._lock = threading.Lock()  # the worker's threads parse at once

    def forget(self, urls: list[str]) -> list[tuple[str, int, int]]:
        """``urls`` were not followed from the page that sent them: sent again
        from the next page that has them; those held back since, to send
        now: (url, priority, depth)."""
        late = []
        with self._lock:
            for url in urls:
                self._depths.pop(url, None)
                held = self._held.pop(url, None)
                if held is not None:
                    late.append((url, *held))
        return late

    def first_times(self, links: list[tuple[str, int]], depth: int) -> list[tuple[str, int]]:
        """The links of a page at ``depth`` not sent before at this depth or less."""
        depths = self._depths
        fresh = []
        with self._lock:
            held = self._held
            for link in links:
                known = depths.get(link[0])
                if known is None or depth < known:
                    depths[link[0]] = depth
                    fresh.append(link)
                elif link[0] not in held:
                    held[link[0]] = (link[1], depth)
            while len(depths) > self.size:
                depths.popitem(last=False)
            while len(held) > self.size:
                held.popitem(last=False)
        return fresh
