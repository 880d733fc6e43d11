"""The Analyzer: a response in, links and an item out.

Runs in a worker process, one instance per worker, shared by its download
slots, so an Analyzer must be thread-safe (the default keeps no state but its
counters).  It returns links as written in the page (``href`` values) plus the
base URL to resolve them against; the worker resolves, canonicalises and
scope-filters them in one place for every analyzer.  The item's fields go
into the page's record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bs4 import BeautifulSoup, SoupStrainer, UnicodeDammit

from .downloader import Response
from .modules import Module
from .settings import Settings

__all__ = ["HTML_TYPES", "Analysis", "Analyzer", "HtmlAnalyzer"]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_LINK_TAGS = ("a", "area")
_STRAINER = SoupStrainer(["a", "area", "base", "title"])


@dataclass
class Analysis:
    """What an Analyzer found: ``links`` to resolve against ``base``, and the
    ``item`` fields for the record."""

    base: str
    links: list[str] = field(default_factory=list)
    item: dict[str, Any] = field(default_factory=dict)


class Analyzer(Module):
    """Interface: ``analyze(response) -> Analysis``."""

    type_letter = "A"

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings

    def analyze(self, response: Response) -> Analysis:
        raise NotImplementedError


class HtmlAnalyzer(Analyzer):
    """The default: parses HTML only, with BeautifulSoup on lxml.

    Decoding order: the HTTP header's charset, then the document's meta
    charset, then detection (BeautifulSoup's UnicodeDammit); a declared
    charset that lxml refuses is ignored.  ``<base href>`` is honoured.
    Anything that is not HTML yields no links and no title, whatever its URL
    looks like.
    """

    def analyze(self, response: Response) -> Analysis:
        with self.track():
            if response.content_type not in HTML_TYPES or not response.body:
                return Analysis(base=response.url, item={"title": None})
            try:
                soup = BeautifulSoup(
                    response.body, "lxml", parse_only=_STRAINER, from_encoding=response.charset
                )
                encoding = soup.original_encoding
            except (ValueError, LookupError):  # a declared charset lxml refuses (b"\x00")
                dammit = UnicodeDammit(response.body, [response.charset or ""], is_html=False)
                text = dammit.unicode_markup or response.body.decode("utf-8", "replace")
                soup = BeautifulSoup(text, "lxml", parse_only=_STRAINER)
                encoding = dammit.original_encoding
            base = response.url
            base_tag = soup.find("base", href=True)
            if base_tag is not None:
                href = base_tag["href"]
                if isinstance(href, str) and href.strip():
                    base = href.strip()
            links: list[str] = []
            for tag in soup.find_all(_LINK_TAGS, href=True):
                href = tag["href"]
                if isinstance(href, str):
                    links.append(href)
            title_tag = soup.find("title")
            title = title_tag.get_text(" ", strip=True) if title_tag is not None else None
            return Analysis(
                base=base,
                links=links,
                item={"title": title or None, "encoding": encoding},
            )
