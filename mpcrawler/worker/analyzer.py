"""The Analyzer: a response in, links and an item out.

Runs in a worker process, one instance per worker, shared by its download
slots, so an Analyzer must be thread-safe (the default keeps no state but its
counters).  It returns links as written in the page (``href`` values) plus the
base URL to resolve them against; the worker resolves, canonicalises and
scope-filters them in one place for every analyzer.  The item's fields go
into the page's record.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning
from lxml import etree

from ..archive import requisites
from ..content.extract import extract
from ..content.fingerprint import text_digest
from ..content.language import page_language
from ..content.metadata import page_metadata
from ..messages import Link
from ..modules import BUILTIN_ANALYZERS, Module
from ..render.signals import Signals, signals
from ..robots.page import agent_token, rel_tokens
from ..settings.worker import WorkerConfig
from ..web.feeds import feed_link
from ..web.pdf import PdfContent, PdfError, is_pdf, read_pdf
from .downloader import Response
from .soup import strained_soup
from .stream import (
    FRAME_TAGS,
    HIDDEN_TAGS,
    STREAM_BYTES,
    parse_decoded,
    read_stream,
    tree_prefix,
)

__all__ = [
    "BUILTIN_ANALYZERS",
    "HTML_TYPES",
    "Analysis",
    "Analyzer",
    "HtmlAnalyzer",
    "LxmlAnalyzer",
    "is_html",
]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# XHTML served as text/html is HTML to a browser, and parsed as HTML here on
# purpose; and a body is always a document, never a file name or a URL.
warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)
warnings.filterwarnings("ignore", category=MarkupResemblesLocatorWarning)
_LINK_TAGS = ("a", "area")
_EMBED_TAGS = frozenset(requisites.EMBED_TAGS)
_HIDDEN_TAGS = HIDDEN_TAGS  # no text a reader sees
# A tree's text, its whitespace collapsed by libxml2 (XPath's string value,
# each run of spaces, tabs and line ends one space, none first or last): the
# fingerprint digests it as it is, with no list of its words
# (``content.fingerprint._joined``).  Non-breaking spaces are left to the
# fingerprint (XPath's translate() took 1.1 ms on a page of 30 KB).
_TEXT = etree.XPath("normalize-space(.)", smart_strings=False)


@dataclass
class Analysis:
    """What an Analyzer found: ``links`` to resolve against ``base``, and the
    ``item`` fields for the record."""

    base: str
    links: list[str | Link] = field(default_factory=list)  # hrefs, or Link(href, priority)
    item: dict[str, Any] = field(default_factory=dict)
    metas: list[tuple[str, str]] = field(default_factory=list)  # robots meta tags: (name, content)
    nofollow: set[str] = field(default_factory=set)  # hrefs of links marked rel=nofollow
    canonical: str | None = None  # the href of <link rel=canonical>
    embeds: list[tuple[str, str]] = field(default_factory=list)  # requisites: (href, kind)
    # The text a reader sees, its text nodes joined as they come (as lxml's
    # text serialization: an element does not part words), when the
    # analyzer was asked (``texts``); from a tree, its whitespace collapsed
    # (``_TEXT``).
    text: str | None = None
    # What the page's HTML says of needing a browser (--render auto), when asked.
    signals: Signals | None = None


class Analyzer(Module):
    """Interface: ``analyze(response) -> Analysis``.

    An analyzer that reads PDFs (``reads_pdfs``) has them read for it out of
    its worker's parser (:mod:`mpcrawler.worker.documents`): the worker asks
    ``is_document`` of each page, and gives such a page to
    ``read_document`` with what the reader found, instead of to ``analyze``."""

    type_letter = "A"
    reads_pdfs: ClassVar[bool] = False

    def __init__(self, settings: WorkerConfig) -> None:
        super().__init__()
        self.settings = settings
        # the meta tags that speak to us: <meta name="robots"> and our own name
        self.robots_names = frozenset({"robots", agent_token(settings.user_agent)})
        self.requisites = settings.page_requisites  # find each page's embeds too
        self.texts = settings.dedup  # and its text (Analysis.text)
        self.extracts = settings.extract  # and its main content (the record's text...)
        self.signals = settings.render == "auto"  # and whether it needs a browser
        self.feeds = settings.follow_feeds  # and the feeds it names (<link rel=alternate>)

    def analyze(self, response: Response) -> Analysis:
        raise NotImplementedError

    def main_content(
        self, root: Any, base: str, response: Response, metadata: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """--extract: the record's fields of the main content of the page
        whose lxml tree is ``root`` (cut down: call it last), with its
        metadata (``web.metadata``: read here unless ``metadata`` was read
        before anything was cut from the tree)."""
        declarations = [root.get("lang"), root.get("xml:lang")] if isinstance(root.tag, str) else []
        declarations += [
            m.get("content")
            for m in root.iter("meta")
            if (m.get("http-equiv") or "").strip().lower() == "content-language"
        ]
        declarations.append(response.headers.get("content-language"))
        if metadata is None:
            metadata = page_metadata(root, base)  # before extract, which cuts the tree
        content = extract(root, base)
        return self.capped(
            {
                "text": content.text,
                "markdown": content.markdown,
                "lang": page_language(declarations, content.text),
                "text_digest": text_digest(content.text),
                **metadata,
            }
        )

    def capped(self, item: dict[str, Any]) -> dict[str, Any]:
        """``item`` with its text and markdown cut at --max-text characters
        each, and ``text_truncated`` where one was (a 30 MB page's text is no
        record of 60 MB); its digest stays the whole text's."""
        limit = self.settings.max_text
        cut = False
        for name in ("text", "markdown"):
            value = item.get(name)
            if isinstance(value, str) and len(value) > limit:
                item[name], cut = value[:limit], True
        if cut:
            item["text_truncated"] = True
        return item

    def is_document(self, response: Response) -> bool:
        """A PDF this analyzer reads (--extract): ``read_document``'s."""
        return self.reads_pdfs and self.extracts and is_pdf(response.content_type, response.body)

    def read_document(self, response: Response, content: PdfContent | PdfError) -> Analysis:
        """The analysis of a document that was read elsewhere: ``content``,
        or the PdfError that is the page's error (raised)."""
        with self.track():
            return self.read_pdf(response, content)

    def read_pdf(
        self, response: Response, content: PdfContent | PdfError | None = None
    ) -> Analysis:
        """--extract: a PDF's links, and its text, pages and title for the
        record (PdfError, the page's error, if it cannot be read), from
        ``content`` (what a reader found) or read here."""
        if isinstance(content, PdfError):
            raise content
        if content is None:
            content = read_pdf(response.body)
        return Analysis(
            base=response.url,
            links=list(content.links),
            item=self.capped(
                {
                    "title": content.title,
                    "text": content.text,
                    "pages": content.pages,
                    "lang": page_language([response.headers.get("content-language")], content.text),
                    "text_digest": text_digest(content.text),
                }
            ),
            text=content.text if self.texts else None,
        )


def is_html(response: Response) -> bool:
    """Only HTML is parsed, whatever its URL looks like."""
    return response.content_type in HTML_TYPES and bool(response.body)


class HtmlAnalyzer(Analyzer):
    """The default: parses HTML only, with lxml, and reads it from a
    BeautifulSoup of the elements it needs (the strained soup,
    :mod:`mpcrawler.worker.soup`).

    Decoding order: the HTTP header's charset, then the document's meta
    charset, then detection (BeautifulSoup's EncodingDetector); a declared
    charset that lxml refuses is ignored.  ``<base href>`` is honoured.
    Anything that is not HTML yields no links and no title, whatever its URL
    looks like.  PDFs are read with --extract (``reads_pdfs``).  A page past
    ``STREAM_BYTES`` is read as a stream, with no tree (``parse_stream``, the
    same for both analyzers; :mod:`mpcrawler.worker.stream`).
    """

    reads_pdfs = True

    def soup(self, response: Response) -> BeautifulSoup:
        """The whole document as BeautifulSoup (on lxml), for an analyzer that
        extracts more; built only when asked for."""
        return BeautifulSoup(response.body, "lxml", from_encoding=response.charset)

    def analyze(self, response: Response) -> Analysis:
        with self.track():
            if not is_html(response):
                if self.is_document(response):
                    return self.read_pdf(response)
                return Analysis(base=response.url, item={"title": None})
            if len(response.body) > STREAM_BYTES:
                return self.parse_stream(response)
            return self.parse(response)

    def parse_stream(self, response: Response) -> Analysis:
        """A big page's links, base, title and text from its parser's
        events, with no tree (:mod:`mpcrawler.worker.stream`); its main
        content from a tree of its first part, ``text_truncated``."""
        found = read_stream(
            response.body, response.charset, self.robots_names, self.requisites, self.texts
        )
        base = found.base or response.url
        item: dict[str, Any] = {"title": found.title, "encoding": found.encoding}
        feeds = list(found.feeds) if self.feeds else []
        signals_found = None
        if self.extracts or self.signals:
            root, _ = _lxml_tree(tree_prefix(response.body), found.encoding or response.charset)
            if root is not None and self.signals:
                signals_found = signals(root)
            if root is not None and self.extracts:
                item.update(self.main_content(root, base, response))
                item["text_truncated"] = True  # (of the page's first part only)
        return Analysis(
            base=base,
            links=[*found.links, *feeds],
            item=item,
            metas=found.metas,
            nofollow=found.nofollow,
            canonical=found.canonical,
            embeds=found.embeds,
            text=found.text,
            signals=signals_found,
        )

    def parse(self, response: Response) -> Analysis:
        """What an HTML response says (``analyze`` has checked that it is
        one, and counts the call), from its lxml tree: its links, base and
        title (``read_links``), then what else is asked (``read_tree``)."""
        root, encoding = _lxml_tree(response.body, response.charset)
        if root is None:
            return Analysis(base=response.url, item={"title": None, "encoding": encoding})
        analysis = self.read_links(root, encoding, response)
        analysis.item["encoding"] = encoding  # (after the title, as records show them)
        return self.read_tree(root, response, analysis)

    def read_links(self, root: Any, encoding: str | None, response: Response) -> Analysis:
        """Links, base, title, robots meta tags, canonical link and embeds of
        the tree ``root``, read from its strained soup
        (:mod:`mpcrawler.worker.soup`)."""
        soup = strained_soup(root, encoding, self.requisites)
        base: str | None = None
        title: str | None = None
        canonical = None
        links: list[str | Link] = []
        nofollow: set[str] = set()
        metas: list[tuple[str, str]] = []
        embeds: list[tuple[str, str]] = []
        for tag in soup.find_all(True):  # only the tags the strained soup keeps are there
            name, attrs = tag.name, tag.attrs
            if self.requisites and (name in _EMBED_TAGS or "style" in attrs):
                embeds += requisites.of_element(name, _attr(attrs), tag.get_text)
            if name in _LINK_TAGS:
                href = attrs.get("href")
                if isinstance(href, str):
                    links.append(href)
                    rel = attrs.get("rel")
                    if rel is not None and "nofollow" in rel_tokens(rel):
                        nofollow.add(href)
            elif name in FRAME_TAGS and not self.requisites:
                src = attrs.get("src")
                if isinstance(src, str):
                    links.append(src)
            elif name == "meta":
                meta = attrs.get("name")
                if meta is not None and str(meta).strip().lower() in self.robots_names:
                    metas.append((str(meta), str(attrs.get("content") or "")))
            elif name == "link":
                href = attrs.get("href")
                if (
                    canonical is None
                    and href is not None
                    and "canonical" in rel_tokens(attrs.get("rel"))
                ):
                    canonical = str(href).strip()
                elif self.feeds and (feed := feed_link(attrs.get("rel"), attrs.get("type"), href)):
                    links.append(feed)
            elif name == "base":
                href = attrs.get("href")
                if base is None and href is not None:
                    base = href.strip() if isinstance(href, str) else ""
            elif name == "title" and title is None:
                title = tag.get_text(" ", strip=True)
        return Analysis(
            base=base or response.url,
            links=links,
            item={"title": title or None},
            metas=metas,
            nofollow=nofollow,
            canonical=canonical,
            embeds=embeds,
        )

    def read_tree(self, root: Any, response: Response, analysis: Analysis) -> Analysis:
        """``analysis`` with what else is asked of the page's tree ``root``,
        once its links are read: whether it needs a browser, its text a
        reader sees, and its main content with its metadata (the last two
        cut the tree, in that order)."""
        if self.signals:
            analysis.signals = signals(root)  # before anything is cut
        metadata = page_metadata(root, analysis.base) if self.extracts else None  # (JSON-LD too)
        if self.texts:  # late: it strips the hidden elements from the tree
            etree.strip_elements(root, *_HIDDEN_TAGS, with_tail=False)
            analysis.text = _TEXT(root)
        if self.extracts:  # last: it cuts the boilerplate from the tree
            analysis.item.update(self.main_content(root, analysis.base, response, metadata))
        return analysis


def _attr(attrs: dict[str, Any]) -> Any:
    """An attribute getter of a tag's attributes, each a string."""

    def get(name: str) -> str | None:
        value = attrs.get(name)
        return value if value is None or isinstance(value, str) else " ".join(value)

    return get


class LxmlAnalyzer(HtmlAnalyzer):
    """The same links, base and title as HtmlAnalyzer, from lxml's C tree
    without BeautifulSoup's Python objects: several times faster.

    It decodes as BeautifulSoup does (the same EncodingDetector order of
    candidates, each tried in turn) and feeds lxml's HTML parser the same
    way, so the two agree; ``tests/unit/test_analyzer.py`` checks that on a corpus.
    ``soup(response)`` still gives a BeautifulSoup when a subclass wants one.
    """

    def read_links(self, root: Any, encoding: str | None, response: Response) -> Analysis:
        """The same as HtmlAnalyzer's, read from the tree itself."""
        base = response.url
        for element in root.iter("base"):
            href = element.get("href")
            if href is not None:
                if href.strip():
                    base = href.strip()
                break
        links: list[str | Link] = []
        nofollow: set[str] = set()
        frames = () if self.requisites else FRAME_TAGS
        for element in root.iter(*_LINK_TAGS, *frames):
            if element.tag in FRAME_TAGS:
                if (src := element.get("src")) is not None:
                    links.append(src)
                continue
            href = element.get("href")
            if href is not None:
                links.append(href)
                rel = element.get("rel")
                if rel is not None and "nofollow" in rel_tokens(rel):
                    nofollow.add(href)
        metas = [
            (name, element.get("content") or "")
            for element in root.iter("meta")
            if (name := element.get("name")) is not None
            and name.strip().lower() in self.robots_names
        ]
        canonical = None
        for element in root.iter("link"):
            href = element.get("href")
            if (
                canonical is None
                and href is not None
                and "canonical" in rel_tokens(element.get("rel"))
            ):
                canonical = href.strip()
            elif self.feeds and (feed := feed_link(element.get("rel"), element.get("type"), href)):
                links.append(feed)
        title = None
        for element in root.iter("title"):
            title = " ".join(t.strip() for t in element.itertext() if t.strip())
            break
        embeds: list[tuple[str, str]] = []
        if self.requisites:
            for element in root.iter():
                tag = element.tag
                if isinstance(tag, str) and (tag in _EMBED_TAGS or element.get("style")):
                    embeds += requisites.of_element(
                        tag, element.get, lambda e=element: "".join(e.itertext())
                    )
        return Analysis(
            base=base,
            links=links,
            item={"title": title or None},
            metas=metas,
            nofollow=nofollow,
            canonical=canonical,
            embeds=embeds,
        )


def _lxml_tree(body: bytes, charset: str | None) -> tuple[Any, str | None]:
    """(root element or None, encoding) of an HTML document, decoded by
    BeautifulSoup's rules (``stream.parse_decoded``)."""
    root, encoding = parse_decoded(
        body, charset, lambda encoding: etree.HTMLParser(recover=True, encoding=encoding)
    )
    if root is not None and _at_depth_limit(root):  # libxml2 stopped at its depth
        root, encoding = parse_decoded(
            body,
            encoding,
            lambda encoding: etree.HTMLParser(recover=True, encoding=encoding, target=_DeepTree()),
        )
    return root, encoding


# libxml2's HTML parser builds no element deeper than 256 and stops there
# (what follows is lost too), unless asked for a huge tree, and then none
# deeper than 2,048: generated pages nest deeper.  Its tree then ends at that
# depth, so the last element in document order tells, in a few steps down
# the last children; such a tree is built again from the parser's events
# (_DeepTree), which have no limit.
_DEPTH_LIMIT = 255


def _at_depth_limit(root: Any) -> bool:
    """Whether the tree's last element is as deep as libxml2 builds."""
    depth, element = 0, root
    while len(element):
        element = element[-1]
        depth += 1
        if depth >= _DEPTH_LIMIT:
            return True
    return False


class _DeepTree:
    """An lxml parser target that builds the tree from the parser's events,
    at any depth (libxml2 keeps no depth limit for a target), dropping the
    attributes whose names lxml refuses (``xmlns:xlink`` in HTML)."""

    def __init__(self) -> None:
        self.builder = etree.TreeBuilder()

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        try:
            self.builder.start(tag, attrib)
        except ValueError:  # a name lxml refuses: the element without it
            self.builder.start(tag, {k: v for k, v in attrib.items() if _valid_name(k)})

    def end(self, tag: str) -> None:
        self.builder.end(tag)

    def data(self, data: str) -> None:
        self.builder.data(data)

    def comment(self, text: str) -> None:
        self.builder.comment(text)

    def close(self) -> Any:
        return self.builder.close()


def _valid_name(name: str) -> bool:
    try:
        etree.Element("x", {name: ""})
    except ValueError:
        return False
    return True
