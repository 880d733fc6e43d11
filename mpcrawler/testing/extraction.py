"""Measures of main-content extraction, for tests and benchmarks.

A gold set is a directory with ``gold.json`` (``pages``: ``file``, ``url``,
``lang``) and the pages, each marking its main content with the comments
``<!-- gold:start -->`` and ``<!-- gold:end -->``
(``tests/data/extract/``).  Scores compare bags of lower-case word tokens.
"""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path
from typing import NamedTuple

from lxml import etree

__all__ = ["GoldPage", "boilerplate_share", "f1", "gold_pages", "html_text", "tokens"]

# A word; or one character of a script written without spaces (Han, kana,
# Hangul, Thai...), each its own token, as word tokens would make a whole
# sentence one token there.
_TOKEN = re.compile(
    r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
    r"|[^\W\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
_GOLD = re.compile(r"<!-- gold:start -->(.*?)<!-- gold:end -->", re.DOTALL)
_HIDDEN = ("script", "style", "template", "noscript")


class GoldPage(NamedTuple):
    """A page of the gold set, with the text of its marked spans."""

    file: str
    url: str
    lang: str
    body: bytes
    gold: str  # the text of the marked spans


def tokens(text: str) -> collections.Counter[str]:
    """The bag of lower-case word tokens of ``text`` (a character each in
    the scripts written without spaces)."""
    return collections.Counter(_TOKEN.findall(text.lower()))


def f1(found: collections.Counter[str], gold: collections.Counter[str]) -> float:
    """Token F1 of an extraction against its gold."""
    common = sum((found & gold).values())
    if not common:
        return 1.0 if not found and not gold else 0.0
    precision, recall = common / sum(found.values()), common / sum(gold.values())
    return 2 * precision * recall / (precision + recall)


def boilerplate_share(
    found: collections.Counter[str],
    gold: collections.Counter[str],
    page: collections.Counter[str],
) -> float:
    """The share of the extracted tokens that are the page's boilerplate:
    beyond the gold's, and among the page's tokens outside the gold."""
    total = sum(found.values())
    if not total:
        return 0.0
    return sum(((found - gold) & (page - gold)).values()) / total


def html_text(markup: str | bytes) -> str:
    """The text of an HTML document or fragment, without scripts and styles."""
    root = etree.HTML(markup)
    if root is None:
        return ""
    etree.strip_elements(root, *_HIDDEN, with_tail=False)
    return " ".join(root.itertext())


def gold_pages(directory: Path) -> list[GoldPage]:
    """The pages of the gold set in ``directory``, with their gold text."""
    index = json.loads((directory / "gold.json").read_text(encoding="utf-8"))
    pages = []
    for page in index["pages"]:
        body = (directory / page["file"]).read_bytes()
        markup = body.decode("utf-8" if b"utf-8" in body[:400].lower() else "latin-1")
        spans = _GOLD.findall(markup)
        if not spans:
            raise ValueError(f"{page['file']} marks no gold span")
        gold = " ".join(html_text(f"<div>{span}</div>") for span in spans)
        pages.append(GoldPage(page["file"], page["url"], page["lang"], body, gold))
    return pages
