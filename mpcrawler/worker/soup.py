"""The strained soup: the BeautifulSoup the default analyzer reads, made of
lxml's tree and holding only what it reads.

``HtmlAnalyzer`` reads a page's links, base, title, robots meta tags,
canonical link and feeds (and with --page-requisites its embeds) from a
BeautifulSoup.  A whole soup is a Python object for every element, string
and comment of the page; this one holds only the elements of ``KEPT_TAGS``
(with ``requisites``, those that name an embed, and any element with a
``style`` attribute), in the page's order, with their attributes, and the
text of ``<title>`` (and of ``<style>``).  They are the soup's children,
side by side: what the analyzer reads of one never depends on another
(libxml2 reads ``<title>`` and ``<style>`` as text only), and nesting them
as the page does would cost a walk over every element.

It is made from the tree lxml built in C (:func:`strained_soup`), read
with ``iter`` filtered by tag in C, so Python sees only the kept elements.
It was made from lxml's parser events before, a Python call for every
tag, string and comment of the page: most of the default analyzer's CPU
(the analyzer took 1.1-1.8 ms a page of the PostgreSQL docs, the lxml
analyzer 0.35-0.6 ms).  The tree is the one
the lxml analyzer reads, decoded by BeautifulSoup's rules
(``stream.parse_decoded``), so the two analyzers read one page the same
way (``tests/unit/test_analyzer.py`` checks it on a corpus, and against a
whole soup).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bs4 import BeautifulSoup
from bs4.builder import LXMLTreeBuilder

from ..archive import requisites
from .stream import FRAME_TAGS

__all__ = ["KEPT_TAGS", "strained_soup"]

# A frame's src (FRAME_TAGS) is a link of its page, as wget -r follows it
# (with --page-requisites it is an embed instead: requisites.of_element).
KEPT_TAGS = frozenset({"a", "area", "base", "title", "meta", "link", *FRAME_TAGS})
_REQUISITE_TAGS = KEPT_TAGS | frozenset(requisites.EMBED_TAGS)
_TEXT_TAGS = frozenset({"title"})  # the kept elements whose text the soup holds
_REQUISITE_TEXT_TAGS = frozenset({"title", "style"})


def strained_soup(root: Any, encoding: str | None, requisites: bool = False) -> BeautifulSoup:
    """The soup of the kept elements of the tree ``root`` (None: an empty
    soup), whose ``original_encoding`` is ``encoding``."""
    builder = _TreeWalker(root, requisites)
    soup = BeautifulSoup(b"", builder=builder)
    soup.original_encoding = encoding
    return soup


class _TreeWalker(LXMLTreeBuilder):
    """BeautifulSoup's lxml tree builder that, fed, walks a tree lxml has
    built instead of parsing: one is made for each soup (BeautifulSoup keeps
    its builder), so a worker's threads share none.
    ``multi_valued_attributes=None`` leaves ``rel`` a string, which
    ``rel_tokens`` splits."""

    def __init__(self, root: Any, requisites: bool) -> None:
        super().__init__(multi_valued_attributes=None)
        self.root = root
        self.kept_tags = _REQUISITE_TAGS if requisites else KEPT_TAGS
        self.text_tags = _REQUISITE_TEXT_TAGS if requisites else _TEXT_TAGS
        self.keep_styled = requisites  # also keep any element with a style attribute

    def prepare_markup(self, markup: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        yield markup, None, None, False  # nothing to decode: the tree is built

    def feed(self, markup: Any) -> None:
        if self.root is None:
            return
        soup = self.soup
        assert soup is not None  # (BeautifulSoup sets it before it feeds)
        if self.keep_styled:  # any element may be kept: each is looked at
            elements = (e for e in self.root.iter() if self._kept(e))
        else:
            elements = self.root.iter(*self.kept_tags)
        text_tags = self.text_tags
        for element in elements:
            tag = element.tag
            self._start(element)
            if tag in text_tags:
                # libxml2 reads <title> and <style> as text only: no
                # element within them (were there one, its text is theirs).
                text = "".join(element.itertext())
                if text:
                    soup.handle_data(text)
            soup.handle_endtag(tag)

    def _kept(self, element: Any) -> bool:
        tag = element.tag
        return isinstance(tag, str) and (tag in self.kept_tags or element.get("style") is not None)

    def _start(self, element: Any) -> None:
        # HTML has no namespaces, and lxml gives every value as a str:
        # nothing for the builder's start or the dict's __setitem__ to mend.
        # (``items``, not ``attrib``: lxml looks no name up again, and some
        # a page may have, such as "{x}", it would refuse.)  A Tag made with
        # attributes copies them one by one through that __setitem__ (a
        # seventh of the soup's CPU): it is made without, and given the
        # dict, then the one thing its making reads of them, a <meta>'s
        # charset made a placeholder (``set_up_substitutions``).
        attrs = self.attribute_dict_class()
        dict.update(attrs, element.items())
        tag = self.soup.handle_starttag(element.tag, None, None, None)  # type: ignore[union-attr]
        assert tag is not None  # (no parse_only: every tag is made)
        tag.attrs = attrs
        if tag.name == "meta":
            self.set_up_substitutions(tag)
