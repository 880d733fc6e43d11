"""Whether a page needs a browser: its signals, and the decision (--render).

Pure functions.  The analyzer takes a page's ``Signals`` from the tree it
parsed (``signals``), before anything is cut from it; the worker asks
``render_reason`` and, when it gives a reason, has the page rendered
(:mod:`mpcrawler.render.browser`) and records ``rendered: true`` and
``render_reason``.

``auto`` renders only where the static parse falls short, as a reader would
see it: a page with few links and little text that is an application's
shell (an empty mount point such as ``<div id="root"></div>``, a framework's
marker), that asks for JavaScript in its ``<noscript>``, or that has no
link and hardly any text but scripts.  A page with its content in its
HTML, whatever framework built it (a server-rendered Next.js page), is not
rendered.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

__all__ = ["FEW_LINKS", "LITTLE_TEXT", "MODES", "Signals", "render_reason", "signals"]

MODES = ("never", "auto", "always")
FEW_LINKS = 3  # a page with fewer links than this ...
LITTLE_TEXT = 50  # ... and fewer words than this may be a shell
# Where applications mount: an element with one of these ids, or attributes.
_MOUNT_IDS = frozenset(
    {"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "q-app", "main-app", "react-root",
     "app-root", "application", "ember-application"}
)  # fmt: skip
_MOUNT_TAGS = frozenset({"app-root", "ng-app", "my-app"})
_MARKER_ATTRIBUTES = (
    "data-reactroot",
    "ng-version",
    "ng-app",
    "data-v-app",
    "data-server-rendered",
)
_MARKER_SCRIPTS = frozenset({"__NEXT_DATA__", "__NUXT_DATA__", "__remixContext"})
_ASKS_FOR_JS = re.compile(
    r"(enable|turn on|activate|allow)\s+javascript|javascript\s+(is\s+)?(required|disabled|"
    r"needed|must be enabled)|requires?\s+javascript|need(s)?\s+javascript|"
    r"javascript\s+(aktivieren|activ)|activez\s+javascript|habilita\s+javascript",
    re.IGNORECASE,
)


class Signals(NamedTuple):
    """What the static parse saw of a page, for the render decision."""

    links: int  # <a>/<area> with an href (counted up to FEW_LINKS)
    words: int | None  # of the text a reader sees (None: not counted, the page has links)
    scripts: int  # <script> elements
    empty_mount: bool  # an application's mount point with no child element and no text
    noscript_asks: bool  # a <noscript> asks to enable JavaScript
    framework: bool  # a framework's marker (data-reactroot, ng-version, __NEXT_DATA__...)


def signals(root: Any) -> Signals:
    """The signals of the page whose lxml tree is ``root`` (read only).  A
    page with FEW_LINKS links or more is not sparse, and ``render_reason``
    reads nothing else of it: its other signals are not gathered (zero,
    False), so that ``auto`` costs a page with links a count of its first
    few links and no more."""
    links = 0
    for element in root.iter("a", "area"):
        if element.get("href") is not None:
            links += 1
            if links >= FEW_LINKS:
                return Signals(links, None, 0, False, False, False)
    scripts = 0
    empty_mount = noscript_asks = framework = False
    for element in root.iter():
        tag = element.tag
        if not isinstance(tag, str):
            continue
        if tag == "script":
            scripts += 1
            framework = framework or element.get("id") in _MARKER_SCRIPTS
        elif tag == "noscript":
            noscript_asks = noscript_asks or bool(_ASKS_FOR_JS.search(_all_text(element)))
        mount = tag in _MOUNT_TAGS or element.get("id") in _MOUNT_IDS
        if mount and len(element) == 0 and not (element.text or "").strip():
            empty_mount = True
        if not framework and any(element.get(a) is not None for a in _MARKER_ATTRIBUTES):
            framework = True
    return Signals(links, _visible_words(root), scripts, empty_mount, noscript_asks, framework)


def _all_text(element: Any) -> str:
    return " ".join(element.itertext())


def _visible_words(root: Any) -> int:
    words = 0
    for text in root.xpath(
        "//text()[not(ancestor::script or ancestor::style or ancestor::noscript "
        "or ancestor::template or ancestor::head)]"
    ):
        words += len(text.split())
    return words


def render_reason(mode: str, page: Signals | None) -> str | None:
    """Why the page is to be rendered under ``--render mode``; None: it is not.
    ``page`` is None for a response that is not an HTML page."""
    if mode == "never" or page is None:
        return None
    if mode == "always":
        return "always"
    sparse = page.links < FEW_LINKS and page.words is not None and page.words < LITTLE_TEXT
    if not sparse:
        return None  # its content is in its HTML
    if page.empty_mount:
        return "empty application root"
    if page.noscript_asks:
        return "noscript asks for JavaScript"
    if page.framework:
        return "framework marker"
    if page.links == 0 and page.scripts and page.words < LITTLE_TEXT // 5:  # (sparse: counted)
        return "no links and no text but scripts"
    return None
