"""Page requisites: the URLs a document needs to render (its *embeds*).

``--page-requisites`` fetches them, as wget's ``-p`` does and Heritrix's
embed hops: images, stylesheets, scripts, fonts, media, frames.  This module
only finds them; the worker resolves, canonicalises and filters them
(``UrlRules.embed_refusal``) and the master queues them as URLs of kind
``embed``.  Pure functions, no I/O.

Each found URL comes with its *how*, one of ``HOWS``: the kind of embed,
counted in ``stats.json``.

- From HTML (``of_element``, asked of each element of ``EMBED_TAGS``):
  ``img`` ``src``/``srcset``, ``picture > source`` ``srcset``, ``link rel``
  stylesheet/icon/apple-touch-icon/preload/modulepreload/manifest, ``script
  src``, ``video poster``, ``src`` of ``video``/``audio``/``source``/
  ``track``, ``object data``, ``embed src``, ``input type=image``, SVG
  ``image``/``use`` ``href`` (and ``xlink:href``), ``iframe``/``frame``
  ``src``, and ``url()`` in ``style`` attributes and ``<style>`` blocks.
- From CSS (``css_urls``, tokenised by tinycss2, never a regex): ``url()``
  and ``url("...")`` anywhere, ``@import`` (a string or a url), and the
  sources of ``@font-face``; nested rules (``@media``, ``@supports``) too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import tinycss2
from tinycss2 import ast

from ..robots.page import rel_tokens

__all__ = ["EMBED_TAGS", "HOWS", "css_urls", "of_element", "srcset_urls", "stylesheet_urls"]

# The kinds of embed, as stats.json counts them.
HOWS = (
    "img",
    "stylesheet",
    "script",
    "icon",
    "preload",
    "manifest",
    "media",
    "object",
    "svg",
    "frame",
    "style",  # url() in a style attribute or a <style> block
    "import",  # a stylesheet's @import
    "font",  # a source of @font-face
    "css",  # url() elsewhere in a stylesheet
)

EMBED_TAGS = (
    "img",
    "source",
    "link",
    "script",
    "video",
    "audio",
    "track",
    "object",
    "embed",
    "input",
    "image",
    "use",
    "iframe",
    "frame",
    "style",
)
_LINK_RELS = {
    "stylesheet": "stylesheet",
    "icon": "icon",
    "apple-touch-icon": "icon",
    "apple-touch-icon-precomposed": "icon",
    "mask-icon": "icon",
    "preload": "preload",
    "modulepreload": "preload",
    "manifest": "manifest",
}

Found = list[tuple[str, str]]  # (href as written, how)


def srcset_urls(value: str) -> list[str]:
    """The URLs of a ``srcset`` (HTML's candidate list: a URL, then an
    optional descriptor, comma-separated; a URL may itself hold commas)."""
    urls: list[str] = []
    text, at, end = value, 0, len(value)
    while at < end:
        while at < end and (text[at].isspace() or text[at] == ","):
            at += 1
        start = at
        while at < end and not text[at].isspace():
            at += 1
        url = text[start:at]
        if url.endswith(","):  # "a.png," : no descriptor
            url = url.rstrip(",")
        else:  # skip the descriptor, up to its comma (not inside parentheses)
            depth = 0
            while at < end and (text[at] != "," or depth):
                depth += {"(": 1, ")": -1}.get(text[at], 0)
                at += 1
        if url:
            urls.append(url)
    return urls


def of_element(tag: str, attr: Callable[[str], str | None], text: Callable[[], str]) -> Found:
    """The embeds of one HTML element ``tag`` (lower case), whose attributes
    ``attr(name)`` gives and whose text ``text()``; ``style`` attributes
    included."""
    found: Found = []

    def add(name: str, how: str) -> None:
        value = attr(name)
        if value and value.strip() and not value.lstrip().startswith("#"):
            found.append((value, how))

    def add_srcset(how: str) -> None:
        value = attr("srcset")
        if value:
            found.extend((url, how) for url in srcset_urls(value))

    if tag == "img":
        add("src", "img")
        add_srcset("img")
    elif tag == "source":
        add("src", "media")
        add_srcset("img")
    elif tag == "link":
        hows = {_LINK_RELS[t] for t in rel_tokens(attr("rel")) if t in _LINK_RELS}
        if hows:
            add("href", min(hows, key=HOWS.index))
    elif tag == "script":
        add("src", "script")
    elif tag in ("video", "audio", "track"):
        add("src", "media")
        if tag == "video":
            add("poster", "img")
    elif tag == "object":
        add("data", "object")
    elif tag == "embed":
        add("src", "object")
    elif tag == "input":
        if (attr("type") or "").strip().lower() == "image":
            add("src", "img")
    elif tag in ("image", "use"):
        add("href", "svg")
        add("xlink:href", "svg")
    elif tag in ("iframe", "frame"):
        add("src", "frame")
    elif tag == "style":
        found.extend(css_urls(text(), inline=True))
    style = attr("style")
    if style and "url" in style.lower():
        found.extend((url, "style") for url, _ in _urls(tinycss2.parse_component_value_list(style)))
    return found


def css_urls(text: str, inline: bool = False) -> Found:
    """The URLs a stylesheet's text names (``inline``: a ``<style>`` block,
    whose plain ``url()`` count as ``style``)."""
    return list(_rules(tinycss2.parse_stylesheet(text), "style" if inline else "css"))


def stylesheet_urls(body: bytes, charset: str | None) -> Found:
    """The URLs of a stylesheet as fetched, decoded as CSS says (the HTTP
    charset, then ``@charset``, then UTF-8)."""
    rules, _ = tinycss2.parse_stylesheet_bytes(body, protocol_encoding=charset)
    return list(_rules(rules, "css"))


def _rules(rules: Iterable[ast.Node], how: str) -> Iterator[tuple[str, str]]:
    for rule in rules:
        if isinstance(rule, ast.AtRule):
            keyword = rule.lower_at_keyword
            if keyword == "import":
                for token in rule.prelude:
                    if isinstance(token, ast.StringToken) and token.value:
                        yield token.value, "import"
                        break
                    if isinstance(token, ast.URLToken | ast.FunctionBlock):
                        yield from ((u, "import") for u, _ in _urls([token]))
                        break
                continue
            if rule.content is None:
                continue
            if keyword == "font-face":
                yield from ((url, "font") for url, _ in _urls(rule.content))
            elif keyword in ("media", "supports", "document", "layer", "container", "scope"):
                yield from _rules(tinycss2.parse_rule_list(rule.content), how)
            else:
                yield from ((url, how) for url, _ in _urls(rule.content))
        elif isinstance(rule, ast.QualifiedRule):
            yield from ((url, how) for url, _ in _urls(rule.content))


def _urls(tokens: Iterable[ast.Node] | None) -> Iterator[tuple[str, str]]:
    """Every ``url(...)`` among ``tokens``, at any nesting."""
    for token in tokens or ():
        if isinstance(token, ast.URLToken):
            if token.value:
                yield token.value, ""
        elif isinstance(token, ast.FunctionBlock):
            if token.lower_name in ("url", "src"):
                for argument in token.arguments:
                    if isinstance(argument, ast.StringToken):
                        if argument.value:
                            yield argument.value, ""
                        break
                    if not isinstance(argument, ast.WhitespaceToken | ast.Comment):
                        break
            else:
                yield from _urls(token.arguments)
        elif isinstance(
            token,
            ast.ParenthesesBlock | ast.SquareBracketsBlock | ast.CurlyBracketsBlock,
        ):
            yield from _urls(token.content)
