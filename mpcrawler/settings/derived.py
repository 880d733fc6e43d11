"""Derived: what the settings mean beyond their values (the types read, the
extensions skipped, the headers sent, the browser used), computed the
same way for :class:`mpcrawler.settings.Settings` (the master) and
:class:`mpcrawler.settings.worker.WorkerConfig` (a worker), which both
hold the fields these read.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .options import BROWSERS, HTML_TYPES, _type_of, comma_list

__all__ = ["Derived"]


class Derived:
    """The methods both settings objects share; they read only the fields
    declared here."""

    if TYPE_CHECKING:
        reject_ext: str | None
        warc_dir: str | None
        accept_type: str | None
        follow_feeds: bool
        strip_query: list[str]
        headers: list[str]
        render_block: str
        page_requisites: bool
        browser_path: str | None
        render: str

    def effective_reject_ext(self) -> list[str]:
        """The extensions --reject-ext skips: its own, else the default list
        less the extensions of the types --accept-type asks for (none with
        --warc or --accept-type '*': an archive, or a crawl of every type,
        wants everything)."""
        if self.reject_ext is None:
            if self.warc_dir:
                return []
            from ..web.filters import DEFAULT_REJECT_EXT

            accepted = self.accepted_types()
            if accepted is None:  # --accept-type '*': every type asked for, no extension skipped
                return []
            return sorted(  # an extension of a type asked for (--accept-type) is not skipped
                e for e in DEFAULT_REJECT_EXT if _type_of(e) not in accepted
            )
        return [e.lstrip(".") for e in comma_list(self.reject_ext)]

    def accepted_types(self) -> frozenset[str] | None:
        """The content types whose bodies are read (None: every type);
        with --follow-feeds, feeds' too (and the XML and JSON types a feed
        may be served as)."""
        if self.accept_type is None:
            types = None if self.warc_dir else frozenset(HTML_TYPES)
        else:
            types = frozenset(comma_list(self.accept_type))
            types = None if "*" in types or "*/*" in types else types
        if types is not None and self.follow_feeds:
            from ..web.feeds import FEED_TYPES, SNIFF_TYPES

            types |= FEED_TYPES | SNIFF_TYPES
        return types

    def strip_patterns(self) -> list[str]:
        """--strip-query's parameter name globs, lower-case."""
        return comma_list(*self.strip_query)

    def header_pairs(self) -> list[tuple[str, str]]:
        """--header values as (name, value)."""
        pairs = []
        for text in self.headers:
            name, _, value = text.partition(":")
            pairs.append((name.strip(), value.strip()))
        return pairs

    def render_blocked(self) -> frozenset[str]:
        """The resource types the browser does not fetch (--render-block)."""
        kinds = frozenset(comma_list(self.render_block)) - {"none"}
        return frozenset() if self.page_requisites else kinds

    def browser(self) -> str:
        """The browser's executable: --browser-path, else the first Chromium
        on the PATH.  ValueError (one line, how to get one) if there is none."""
        import shutil

        if self.browser_path is not None:
            if not (os.path.isfile(self.browser_path) and os.access(self.browser_path, os.X_OK)):
                raise ValueError(f"--browser-path {self.browser_path}: not an executable file")
            return self.browser_path
        for name in BROWSERS:
            found = shutil.which(name)
            if found is not None:
                return found
        raise ValueError(
            f"--render {self.render}: no Chromium found on the PATH (apt-get install chromium, "
            "or give one with --browser-path)"
        )
