"""Big pages read as a stream: what an analyzer needs of an HTML page,
gathered from lxml's parser events, with no tree.

A tree of a page costs ten times its size and more (a 30 MB page of short
paragraphs: 374 MB in libxml2, and BeautifulSoup's objects on top), so a
page past ``STREAM_BYTES`` is not built as one.  Its parser's events
(``_Events``, an lxml parser target: the same parser, the same decoding,
so the same elements as the tree it would have built, at any depth) give
its links, nofollow marks, base, title, robots meta tags, canonical link,
requisites and text (``Streamed``); its main content (--extract) is read
from a tree of its first ``TREE_BYTES`` only: the analyzer says so with
``text_truncated``.

``parse_decoded`` is the decoding both use: BeautifulSoup's candidate
encodings (the HTTP header's charset, the document's, then detection), each
in turn until one parses.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any, NamedTuple

from bs4.dammit import EncodingDetector
from lxml import etree

from ..archive import requisites
from ..robots.page import rel_tokens
from ..web.feeds import feed_link

__all__ = [
    "FRAME_TAGS",
    "HIDDEN_TAGS",
    "STREAM_BYTES",
    "TREE_BYTES",
    "Streamed",
    "parse_decoded",
    "read_stream",
    "tree_prefix",
]

STREAM_BYTES = 4 << 20  # a page bigger than this is read as a stream
PIECE = 1 << 20  # bytes of a stream fed to its parser at a time
TREE_BYTES = 4 << 20  # of which a tree is made for its main content
# No text a reader sees (a browser that shows frames does not show <noframes>).
HIDDEN_TAGS = ("script", "style", "template", "noscript", "noframes")
FRAME_TAGS = ("frame", "iframe")  # their src: links, unless they are embeds (requisites)
_LINK_TAGS = frozenset({"a", "area"})
_EMBED_TAGS = frozenset(requisites.EMBED_TAGS)


def parse_decoded(
    body: bytes, charset: str | None, parser_for: Callable[[str], Any], piece: int = 0
) -> tuple[Any, str | None]:
    """(what ``parser_for(encoding)``'s parser returns, or None; the encoding)
    of an HTML document fed to lxml's push parser whole, as BeautifulSoup's
    HTML builder feeds it (or in pieces of ``piece`` bytes: libxml2 then holds
    a piece, not a copy of the whole), decoded by BeautifulSoup's rules: each
    candidate encoding in turn until one parses.  (Fed in pieces of 512
    bytes, libxml2 2.14 takes time that grows with the square of the size:
    a minute for 30 MB; in pieces of 1 MB, or whole, 0.2 s for 10 MB.)"""
    detector = EncodingDetector(
        body, known_definite_encodings=[charset] if charset else [], is_html=True
    )
    markup = detector.markup
    for encoding in detector.encodings:
        try:
            parser = parser_for(encoding)
            if piece and len(markup) > piece:
                view = memoryview(markup)
                for start in range(0, len(markup), piece):
                    parser.feed(bytes(view[start : start + piece]))
            else:
                parser.feed(markup)
            return parser.close(), encoding
        except (UnicodeDecodeError, LookupError, ValueError, etree.ParserError):
            continue
        except etree.XMLSyntaxError:  # nothing to build anything of
            return None, encoding
    return None, None


class Streamed(NamedTuple):
    """What a page's events gave (``base``, ``title``, ``canonical``: None
    where the page has none)."""

    encoding: str | None
    base: str | None
    title: str | None
    links: list[str]
    nofollow: set[str]
    metas: list[tuple[str, str]]
    canonical: str | None
    embeds: list[tuple[str, str]]
    text: str | None
    feeds: list[str] = []  # the feeds its <link rel=alternate> name (--follow-feeds)


def read_stream(
    body: bytes,
    charset: str | None,
    robots_names: frozenset[str],
    embeds: bool = False,
    text: bool = False,
) -> Streamed:
    """What an analyzer reads of the HTML ``body``, from its parser's events:
    its requisites too if ``embeds``, its text a reader sees if ``text``."""

    def parser_for(encoding: str) -> Any:
        target = _Events(robots_names, embeds, text)
        return etree.HTMLParser(recover=True, encoding=encoding, target=target)

    found, encoding = parse_decoded(body, charset, parser_for, PIECE)
    if found is None:
        return Streamed(encoding, None, None, [], set(), [], None, [], "" if text else None)
    return found._replace(encoding=encoding)  # type: ignore[no-any-return]


def tree_prefix(body: bytes) -> bytes:
    """The first ``TREE_BYTES`` of ``body``, cut before a tag."""
    if len(body) <= TREE_BYTES:
        return body
    cut = body.rfind(b"<", 0, TREE_BYTES)
    return body[: cut if cut > 0 else TREE_BYTES]


class _Events:
    """An lxml parser target that keeps what ``Streamed`` holds, as the
    analyzers read it from a tree: every link's href (and frame's src,
    unless requisites are kept: then a frame is one), the first base with
    an href, the first title's text, the robots meta tags, the first
    canonical link, the requisites of each element, and the text outside
    hidden elements."""

    def __init__(self, robots_names: frozenset[str], embeds: bool, text: bool) -> None:
        self.robots_names = robots_names
        self.keep_embeds, self.keep_text = embeds, text
        self.frames = not embeds  # a frame is an embed with requisites, else a link
        self.links: list[str] = []
        self.nofollow: set[str] = set()
        self.metas: list[tuple[str, str]] = []
        self.embeds: list[tuple[str, str]] = []
        self.texts = io.StringIO()  # (no object kept a text node)
        self.base: str | None = None
        self.based = False  # a base with an href was met (only the first counts)
        self.canonical: str | None = None
        self.feeds: list[str] = []
        self.title: list[str] | None = None  # the first title's text, while and once read
        self.in_title = False
        self.style: dict[str, str] | None = None  # an open <style>'s attributes (requisites)
        self.style_text: list[str] = []
        self.hidden = 0  # open hidden elements

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.in_title = False  # (title holds no element: its text ends here)
        if tag in HIDDEN_TAGS:
            self.hidden += 1
        if tag in _LINK_TAGS:
            href = attrib.get("href")
            if href is not None:
                self.links.append(href)
                rel = attrib.get("rel")
                if rel is not None and "nofollow" in rel_tokens(rel):
                    self.nofollow.add(href)
        elif tag in FRAME_TAGS and self.frames:
            src = attrib.get("src")
            if src is not None:
                self.links.append(src)
        elif tag == "meta":
            name = attrib.get("name")
            if name is not None and name.strip().lower() in self.robots_names:
                self.metas.append((name, attrib.get("content") or ""))
        elif tag == "link":
            href = attrib.get("href")
            if (
                self.canonical is None
                and href is not None
                and "canonical" in rel_tokens(attrib.get("rel"))
            ):
                self.canonical = href.strip()
            elif feed := feed_link(attrib.get("rel"), attrib.get("type"), href):
                self.feeds.append(feed)
        elif tag == "base":
            href = attrib.get("href")
            if not self.based and href is not None:
                self.based = True
                self.base = href.strip() or None
        elif tag == "title" and self.title is None:
            self.title, self.in_title = [], True
        if self.keep_embeds and (tag in _EMBED_TAGS or attrib.get("style")):
            if tag == "style":  # its text names requisites too: read at its end
                self.style, self.style_text = dict(attrib), []
            else:
                self.embeds += requisites.of_element(tag, attrib.get, str)

    def end(self, tag: str) -> None:
        self.in_title = False
        if tag in HIDDEN_TAGS and self.hidden:
            self.hidden -= 1
        if tag == "style" and self.style is not None:
            text = "".join(self.style_text)
            self.embeds += requisites.of_element(tag, self.style.get, lambda: text)
            self.style, self.style_text = None, []

    def data(self, data: str) -> None:
        if self.keep_text and not self.hidden:
            self.texts.write(data)
        if self.in_title and self.title is not None:
            self.title.append(data)
        if self.style is not None:
            self.style_text.append(data)

    def comment(self, text: str) -> None:
        self.in_title = False

    def close(self) -> Streamed:
        title = "".join(self.title).strip() if self.title else ""
        return Streamed(
            None,
            self.base,
            title or None,
            self.links,
            self.nofollow,
            self.metas,
            self.canonical,
            self.embeds,
            self.texts.getvalue() if self.keep_text else None,
            self.feeds,
        )
