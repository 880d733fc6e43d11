"""Main-content extraction: a page's main text, as plain text and as Markdown.

Pure functions over the lxml tree an analyzer parsed (``--extract``): the
worker's analyzer calls ``extract(root, base)`` after it has read the links,
and the fields go into the page's record.  No I/O, no state but caches of
verdicts on class names.

How the main content is found:

1. **Boilerplate is cut** from the tree (``_prune``): what a reader never
   reads (scripts, forms' controls, media), ``nav`` and ``aside`` anywhere, a
   page-level ``header`` and any ``footer``, elements whose ARIA role is a
   landmark of the page's chrome (navigation, banner, contentinfo...),
   hidden elements, and elements whose class or id names boilerplate
   (``nav``, ``sidebar``, ``cookie``, ``breadcrumb``... unless it also names
   content: ``entry-header`` stays).  An element that holds most of the
   page's text, or the page's ``main``, is never cut: a form around the
   whole page (ASP.NET) stays.
2. **The container** (``_declared``, else ``_densest``): the page's ``<main>`` (or
   ``role=main``) when it holds a fair share of the text; else its one
   ``<article>`` likewise; else the deepest element that holds ``_MOST``
   of the page's words, a word in a link weighing a quarter of one outside.
   Inside a container found that way, blocks that are mostly links (a list
   of related posts, a pager) are dropped too, unless they are most of it
   (a table of contents: the page is its links).
3. **The writing** (``_Writer``): one walk of the container writes both the
   Markdown (headings, lists, links made absolute, code blocks, tables,
   emphasis) and the plain text (a line a block, a list item as ``- ``).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ada_url import join_url
from lxml import etree

__all__ = ["Extracted", "extract"]

# Never text a reader reads as the page's content.
_DROPPED_TAGS = (
    "script", "style", "template", "noscript", "noframes", "iframe", "svg", "canvas", "button",
    "select", "input", "textarea", "option", "dialog", "object", "embed", "video",
    "audio", "map", "nav", "aside", "img", "picture", "source", "link", "meta", "head",
    "annotation", "annotation-xml",
)  # fmt: skip
_CHROME_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar",
     "dialog", "alertdialog", "toolbar", "tablist"}
)  # fmt: skip
# Class or id words that name boilerplate: cut, unless a content word is named too
# (``entry-header`` is the title of a post) ...
_WEAK_WORDS = frozenset(
    {"header", "masthead", "menu", "widget", "widgets", "toolbar", "tags", "byline", "toc",
     "skip", "topbar", "bottombar", "sitemap", "login", "search", "author", "dateline",
     "print", "meta", "info"}
)  # fmt: skip
_WEAK_PREFIXES = ("menu",)
_WEAK_SUFFIXES = ("menu", "toolbar")
# ... cut whatever else they name.
_STRONG_WORDS = frozenset(
    {"cookie", "cookies", "consent", "gdpr", "advert", "advertisement", "ad", "ads", "adv",
     "sponsor", "sponsored", "promo", "newsletter", "subscribe", "popup", "modal", "share",
     "sharing", "social", "sns", "banner", "overlay", "outbrain", "taboola", "footer",
     "comments", "comment", "related", "breadcrumb", "breadcrumbs", "pagination", "pager",
     "sidebar", "nav", "navbar", "navigation", "prevnext", "catlinks", "noprint", "similar",
     "sitenotice", "centralnotice"}
)  # fmt: skip
_STRONG_PREFIXES = (
    "cookie", "consent", "advert", "sponsor", "newsletter", "social", "share", "nav",
    "sidebar", "footer", "breadcrumb", "comment", "related",
)  # fmt: skip
_STRONG_SUFFIXES = ("sidebar", "footer", "navbar", "nav", "navigation", "banner")
_CONTENT_WORDS = frozenset(
    {"article", "body", "content", "entry", "main", "post", "story", "text", "blog",
     "page", "prose", "document", "section", "chapter"}
)  # fmt: skip
_CHECKED_TAGS = (
    "div", "section", "ul", "ol", "table", "p", "dl", "header", "footer", "form", "article",
    "figure", "center", "details",
)  # fmt: skip
_HIDING_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_NAME_PARTS = re.compile(r"[^a-z0-9]+")
_MOST = 0.8  # the container holds this share of the page's weighted words, at least
_PLAIN_WEIGHT = 4  # a word outside links weighs this many words in links
_FAIR_SHARE = 0.25  # a <main> or an <article> holds this much of the text to be the container
_KEEP_SHARE = 0.6  # boilerplate that holds this much of the page's text is not cut
_LINK_DENSE = 0.5  # a block with more of its text in links than this is navigation
# A list of other pages' teasers: _TEASERS items at least, _TEASER_SHARE of them a
# teaser (_is_teaser: at most _TEASER_WORDS words, headed by a link or an article).
_TEASERS = 3
_TEASER_SHARE = 0.5  # (ads and promos between them are not teasers)
_TEASER_WORDS = 120
_LISTING_SHARE = 0.8  # teaser lists holding more of the container than this: it is a listing
_ITEM_TAGS = frozenset({"li", "article", "div", "section"})
# Page furniture (_drop_page_furniture): short blocks that are a byline or a
# widget's word.
_FURNITURE_TAGS = ("p", "div", "address")
_QUOTED = frozenset({"pre", "code", "table", "li", "blockquote", "cite", "figcaption"})
_FURNITURE_WORDS = 14
_LABEL_CHARS = 8  # a block this short without a letter is a label (a chart's axis, a counter)
_BYLINE = re.compile(  # "By" and a name: two words or more, each capitalized
    r"(?i:by|par|por|von|door|di|av)\s+[A-Z\u00c0-\u00de][\w.'\-]*(\s+[A-Z\u00c0-\u00de][\w.'\-]*)+"
)
_WIDGET_WORDS = frozenset(
    {"advertising", "advertisement", "ad", "loading...", "loading", "close", "share",
     "comments", "view comments", "show comments", "print", "email", "tweet", "sponsored",
     "skip to content", "jump to navigation jump to search"}
)  # fmt: skip
# A heading that names what follows as other pages, not this one's content.
_OTHER_PAGES = re.compile(
    r"(related( \w+)?|more (from|on|in|stories|news|like this|to read|articles)\b.*"
    r"|read (more|next)|recommended( for you)?|you (may|might) (also )?like"
    r"|most (popular|read|viewed|shared)"
    r"|trending( now)?|popular( now)?|next on\b.*|also on\b.*|don't miss|latest (news|stories)"
    r"|further reading|see also)\W*$",
    re.IGNORECASE,
)
_verdicts: dict[str, bool] = {}  # class + id -> names boilerplate (a process's cache)


class Extracted(NamedTuple):
    """A page's main content, as plain text and as Markdown."""

    text: str  # the main content, a line a block
    markdown: str


def extract(root: Any, base: str) -> Extracted:
    """The main content of the page whose lxml tree is ``root`` (changed:
    boilerplate is cut from it), its links resolved against ``base``."""
    body = _body(root)
    if body is None:
        return Extracted("", "")
    _prune(body)
    container = _declared(body)
    if container is None:
        words = _count_words(body)
        container = _densest(body, words)
        _drop_link_dense(container, words)
    else:
        words = _count_words(container)
    _drop_teaser_lists(container, words)
    _drop_headed_boilerplate(container)
    _drop_page_furniture(container)
    writer = _Writer(base)
    writer.node(container)
    return writer.result()


def _body(root: Any) -> Any:
    """The page's body; without a ``<body>``, the whole page, its ``<head>``
    read as a block: libxml2 keeps there what follows the head's elements
    until one it knows starts a body (``<title>T</title><main>...`` puts
    ``<main>`` in the head), and the head would be cut (changed: the head's
    title is cut from the tree)."""
    if not isinstance(root.tag, str):
        return None
    if root.tag == "body":
        return root
    body = next(root.iter("body"), None)
    if body is not None:
        return body
    for head in list(root.iter("head")):
        etree.strip_elements(head, "title", with_tail=False)
        head.tag = "div"
    return root


def _text_length(element: Any) -> int:
    """The words of ``element``'s text."""
    return len(etree.tostring(element, method="text", encoding=str, with_tail=False).split())


def _names_boilerplate(names: str) -> bool:
    """Class and id values that name boilerplate (cached: a site repeats them)."""
    verdict = _verdicts.get(names)
    if verdict is None:
        parts = set(_NAME_PARTS.split(names.lower()))
        parts.discard("")
        if "section" in parts:
            parts = {"section"}  # a part of the document, whatever its anchor says
        strong = any(
            p in _STRONG_WORDS or p.startswith(_STRONG_PREFIXES) or p.endswith(_STRONG_SUFFIXES)
            for p in parts
        )
        weak = any(
            p in _WEAK_WORDS or p.startswith(_WEAK_PREFIXES) or p.endswith(_WEAK_SUFFIXES)
            for p in parts
        )
        verdict = strong or (weak and not parts & _CONTENT_WORDS)
        if len(_verdicts) < 65_536:
            _verdicts[names] = verdict
    return verdict


def _is_chrome(element: Any, tag: str) -> bool:
    """Boilerplate by its tag, role, hiding or names."""
    get = element.get
    if tag == "footer" or (tag == "header" and not _in_content(element)):
        return True
    role = get("role")
    if role is not None and role.strip().lower() in _CHROME_ROLES:
        return True
    if get("hidden") is not None or get("aria-hidden") == "true":
        return True
    style = get("style")
    if style is not None and _HIDING_STYLE.search(style):
        return True
    names = get("class") or ""
    if tag != "section":  # a section's id is its heading's anchor
        names += " " + (get("id") or "")
    return len(names) > 1 and _names_boilerplate(names)


def _in_content(element: Any) -> bool:
    return any(a.tag in ("article", "main") for a in element.iterancestors())


def _prune(body: Any) -> None:
    """Cut the boilerplate from ``body`` (see the module's docstring)."""
    etree.strip_elements(body, *_DROPPED_TAGS, with_tail=False)
    chrome = [e for e in body.iter(*_CHECKED_TAGS) if _is_chrome(e, e.tag)]
    if not chrome:
        return
    total = _text_length(body)
    for element in chrome:
        parent = element.getparent()
        if parent is None or element.get("role") == "main":
            continue
        if next(element.iter("main", "article"), None) is not None:
            continue  # it holds the content, whatever it is named
        if _text_length(element) > _KEEP_SHARE * total:
            continue
        _remove(element)


def _remove(element: Any) -> None:
    """Take ``element`` out of the tree, keeping its tail text."""
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail
    if tail and tail.strip():
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


def _declared(body: Any) -> Any:
    """The element the page declares its main content (``main``,
    ``role=main``, its one ``article``), if it holds a fair share of the text."""
    total = _text_length(body)
    if total == 0:
        return body
    mains = [e for e in body.iter("main", "div", "section") if _is_main(e)]
    for declared in (mains, list(body.iter("article"))):
        if len(declared) == 1 and _text_length(declared[0]) >= _FAIR_SHARE * total:
            return declared[0]
    return None


def _is_main(element: Any) -> bool:
    return bool(element.tag == "main" or element.get("role") == "main")


class _Words(NamedTuple):
    """The words under each element of a tree: all of them, and those in links."""

    all: dict[Any, int]
    linked: dict[Any, int]

    def weighted(self, element: Any) -> int:
        """Its words, those outside links weighing ``_PLAIN_WEIGHT`` times
        those in links: a menu of many links is not the content."""
        linked = self.linked.get(element, 0)
        return _PLAIN_WEIGHT * (self.all.get(element, 0) - linked) + linked


def _count_words(body: Any) -> _Words:
    """One pass up the tree from its leaves."""
    words: dict[Any, int] = {}
    linked: dict[Any, int] = {}
    for element in reversed([e for e in body.iter() if isinstance(e.tag, str)]):
        own = len(element.text.split()) if element.text else 0
        for child in element:
            if child.tail:
                own += len(child.tail.split())
        total = words.get(element, 0) + own
        if not total:
            continue
        words[element] = total
        in_links = total if element.tag == "a" else linked.get(element, 0)
        if in_links:
            linked[element] = in_links
        parent = element.getparent()
        if parent is not None and element is not body:
            words[parent] = words.get(parent, 0) + total
            if in_links:
                linked[parent] = linked.get(parent, 0) + in_links
    return _Words(words, linked)


def _densest(body: Any, words: _Words) -> Any:
    """The deepest element holding ``_MOST`` of the page's weighted words."""
    whole = words.weighted(body)
    best = body
    while whole:  # down from the body, while one child still holds most of the words
        child = max(best, key=words.weighted, default=None)
        if child is None or words.weighted(child) < _MOST * whole:
            break
        best = child
    return best


def _drop_link_dense(container: Any, words: _Words) -> None:
    """Drop the blocks of ``container`` whose text is mostly links, unless
    they are most of it (a table of contents, an index: the page is links)."""
    dense: list[Any] = []
    for element in container.iter("ul", "ol", "div", "table", "p", "dl", "section"):
        if element is container or (dense and dense[-1] in element.iterancestors()):
            continue  # (inside a block already dropped)
        total = words.all.get(element, 0)
        if total and words.linked.get(element, 0) > _LINK_DENSE * total:
            dense.append(element)
    if sum(words.all.get(e, 0) for e in dense) > _LINK_DENSE * words.all.get(container, 0):
        return
    for element in dense:
        _remove(element)


def _drop_teaser_lists(container: Any, words: _Words) -> None:
    """Drop the lists of other pages' teasers in ``container`` (related
    stories, a stream, "more from"): a block of at least ``_TEASERS`` items
    (list items, articles, sections or divs), half of them teasers or more, unless
    such blocks are most of the container (a page that is a listing)."""
    found: list[Any] = []
    for element in container.iter("ul", "ol", "div", "section"):
        if found and found[-1] in element.iterancestors():
            continue  # (inside a block already found)
        items = [c for c in element if isinstance(c.tag, str) and c.tag in _ITEM_TAGS]
        if len(items) < _TEASERS:
            continue
        teasers = sum(1 for item in items if _is_teaser(item, words))
        if teasers >= _TEASERS and teasers >= _TEASER_SHARE * len(items):
            found.append(element)
    total = words.all.get(container, 0)
    if sum(words.all.get(e, 0) for e in found) > _LISTING_SHARE * total:
        return
    for element in found:
        if element is not container:
            _remove(element)


def _drop_headed_boilerplate(container: Any) -> None:
    """Drop the parts of ``container`` that a heading names as other pages
    ("Related coverage", "More from", "Read next"...): the heading and what
    follows it up to the next heading of its rank or higher, within its parent."""
    for heading in list(container.iter(*_HEADINGS)):
        parent = heading.getparent()
        if parent is None or not _OTHER_PAGES.match(_one_line(" ".join(heading.itertext()))):
            continue
        rank = _HEADINGS[heading.tag]
        doomed = [heading]
        for sibling in heading.itersiblings():
            if isinstance(sibling.tag, str) and _HEADINGS.get(sibling.tag, 7) <= rank:
                break
            doomed.append(sibling)
        for element in doomed:
            _remove(element)


def _drop_page_furniture(container: Any) -> None:
    """Drop the short blocks of ``container`` that are no part of the
    writing: a byline ("By Ann Writer, Staff Reporter"), a widget's word
    ("Advertising", "Loading..."), a chart's label ("$915", "'17").  Each is a block of at most
    _FURNITURE_WORDS words holding no other block, outside code, tables,
    lists and quotes."""
    for element in list(container.iter(*_FURNITURE_TAGS)):
        if element is container or any(
            isinstance(c.tag, str) and c.tag in _BLOCKS for c in element
        ):
            continue
        text = _one_line(" ".join(element.itertext()))
        if not text or len(text.split()) > _FURNITURE_WORDS:
            continue
        furniture = (
            _BYLINE.match(text)
            or text.lower() in _WIDGET_WORDS
            or (len(text) <= _LABEL_CHARS and not any(c.isalpha() for c in text))
        )
        if furniture and not any(a.tag in _QUOTED for a in element.iterancestors()):
            _remove(element)


def _is_teaser(item: Any, words: _Words) -> bool:
    """A short item whose headline is a link to another page (a link in a
    heading, or a heading in a link), or an article of its own."""
    size = words.all.get(item, 0)
    if not size or size > _TEASER_WORDS:
        return False
    if item.tag == "article" or item.find(".//article") is not None:
        return True
    for heading in item.iter("h1", "h2", "h3", "h4", "h5", "h6"):
        if heading.find(".//a") is not None or any(a.tag == "a" for a in heading.iterancestors()):
            return True
    return False


_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = frozenset(
    {"p", "div", "section", "article", "main", "body", "header", "figure", "figcaption",
     "caption", "address", "center", "details", "summary", "form", "fieldset", "legend",
     "html", "hgroup", "dt", "dd", "li", "td", "th", "tr"}
)  # fmt: skip
_PLAIN_INLINE = frozenset(
    {"span", "font", "small", "big", "abbr", "acronym", "cite", "dfn", "label", "sup", "sub",
     "u", "s", "strike", "del", "ins", "mark", "time", "q", "bdi", "bdo", "data", "nobr"}
)  # fmt: skip
_CODE = frozenset({"code", "kbd", "samp", "tt", "var"})
_EMPHASIS = {"em": "*", "i": "*", "strong": "**", "b": "**"}
_BACKTICKS = re.compile(r"`{3,}")
_ROWS = etree.XPath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")
_LAYOUT_CELL = etree.XPath(
    "boolean(./tr/td[p or div or ul or ol or table or pre or h1 or h2 or h3] | "
    "./*/tr/td[p or div or ul or ol or table or pre or h1 or h2 or h3])"
)
_MD_ESCAPES = str.maketrans({c: "\\" + c for c in "\\`*_[]"})


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Writer:
    """One walk of the container: Markdown and plain text, block by block."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.md: list[str] = []  # finished blocks
        self.text: list[str] = []
        self.inline_md: list[str] = []  # the block being written
        self.inline_text: list[str] = []
        self.flushes = 0  # blocks finished: a wrapper around a block boundary is not written

    def result(self) -> Extracted:
        self.flush()
        return Extracted("\n".join(self.text), "\n\n".join(self.md))

    def flush(self, md_prefix: str = "", text_prefix: str = "") -> None:
        self.flushes += 1
        if not self.inline_text:
            return
        md = _one_line("".join(self.inline_md))
        text = _one_line("".join(self.inline_text))
        self.inline_md, self.inline_text = [], []
        if text:
            self.md.append(md_prefix + md)
            self.text.append(text_prefix + text)

    def add(self, text: str) -> None:
        self.inline_md.append(text.translate(_MD_ESCAPES))
        self.inline_text.append(text)

    def children(self, element: Any) -> None:
        if element.text:
            self.add(element.text)
        for child in element:
            if isinstance(child.tag, str):
                self.node(child)
            if child.tail:
                self.add(child.tail)

    def node(self, element: Any) -> None:
        tag = element.tag
        if tag in _PLAIN_INLINE:  # the most common: only its text
            self.children(element)
        elif tag in _BLOCKS:
            self.block(element)
        elif tag in _HEADINGS:
            self.flush()
            self.children(element)
            self.flush("#" * _HEADINGS[tag] + " ")
        elif tag == "pre":
            self.pre(element)
        elif tag in ("ul", "ol"):
            self.list(element, ordered=tag == "ol")
        elif tag == "table":
            self.table(element)
        elif tag == "blockquote":
            self.quoted(element)
        elif tag == "br":  # (a block's whitespace is collapsed: a space)
            self.add(" ")
        elif tag == "hr":
            self.flush()
        elif tag == "a":
            href = self.href(element)
            if href:
                self.wrapped(element, "[", f"]({href})")
            else:
                self.children(element)
        elif tag in _CODE:
            code = "".join(element.itertext())
            if code.strip():
                self.inline_md.append(f"`{_one_line(code)}`")
                self.inline_text.append(code)
        elif tag in _EMPHASIS:
            self.wrapped(element, _EMPHASIS[tag], _EMPHASIS[tag])
        else:
            self.children(element)

    def block(self, element: Any) -> None:
        self.flush()
        self.children(element)
        self.flush()

    def wrapped(self, element: Any, before: str, after: str) -> None:
        """Inline content between ``before`` and ``after`` in the Markdown
        (a link, emphasis), if it stays in one block and is not empty."""
        start, flushes = len(self.inline_md), self.flushes
        self.children(element)
        inner = "".join(self.inline_md[start:])
        if flushes == self.flushes and inner.strip():
            lead = " " if inner[:1].isspace() else ""
            trail = " " if inner[-1:].isspace() else ""
            self.inline_md[start:] = [lead, before, inner.strip(), after, trail]

    def href(self, element: Any) -> str:
        href = (element.get("href") or "").strip()
        if not href or href.startswith(("#", "javascript:")):
            return ""
        try:
            return join_url(self.base, href).replace(")", "%29")  # (WHATWG: spaces escaped)
        except ValueError:
            return ""

    def pre(self, element: Any) -> None:
        self.flush()
        code = "".join(element.itertext()).strip("\n")
        if code.strip():
            runs = _BACKTICKS.findall(code)
            fence = "`" * max(3, max(map(len, runs), default=0) + 1)  # longer than any in it
            self.md.append(f"{fence}\n{code}\n{fence}")
            self.text.append(code)
        self.flushes += 1

    def list(self, element: Any, ordered: bool) -> None:
        self.flush()
        number = 0
        md: list[str] = []
        text: list[str] = []
        for item in element:
            if not isinstance(item.tag, str):
                continue
            number += 1
            sub = _Writer(self.base)
            if item.tag == "li":
                sub.children(item)
            else:
                sub.node(item)
            sub.flush()
            if not sub.text:
                continue
            marker = f"{number}. " if ordered else "- "
            indent = " " * len(marker)
            md.append(marker + "\n".join(sub.md).replace("\n", "\n" + indent))
            text.append("- " + "\n".join(sub.text).replace("\n", "\n  "))
        if md:
            self.md.append("\n".join(md))
            self.text.append("\n".join(text))
        self.flushes += 1

    def quoted(self, element: Any) -> None:
        self.flush()
        sub = _Writer(self.base)
        sub.children(element)
        sub.flush()
        if sub.md:
            self.md.append("> " + "\n\n".join(sub.md).replace("\n", "\n> "))
            self.text.extend(sub.text)
        self.flushes += 1

    def table(self, element: Any) -> None:
        """A table of data as a Markdown table; a table that lays out
        blocks (a cell holds paragraphs, lists, tables) as its blocks."""
        self.flush()
        if _LAYOUT_CELL(element):
            self.children(element)
            self.flush()
            return
        rows: list[list[tuple[str, str]]] = []
        for row in _ROWS(element):
            cells = []
            for cell in row:
                if cell.tag in ("td", "th"):
                    sub = _Writer(self.base)
                    sub.children(cell)
                    sub.flush()
                    cells.append((" ".join(sub.md).replace("|", "\\|"), " ".join(sub.text)))
            if any(text for _, text in cells):
                rows.append(cells)
        if rows:
            width = max(len(r) for r in rows)
            lines = []
            for index, row in enumerate(rows):
                padded = [md for md, _ in row] + [""] * (width - len(row))
                lines.append("| " + " | ".join(padded) + " |")
                if index == 0:
                    lines.append("|" + " --- |" * width)
            self.md.append("\n".join(lines))
            self.text.extend(" | ".join(t for _, t in row if t) for row in rows)
        self.flushes += 1
