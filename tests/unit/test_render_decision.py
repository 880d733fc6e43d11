"""--render: the signals of a page's static parse and the decision (web/render.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpcrawler.render.signals import Signals, render_reason, signals
from mpcrawler.worker.analyzer import _lxml_tree

GOLD = Path(__file__).resolve().parent.parent / "data" / "extract"


def of(markup: str) -> Signals:
    root, _ = _lxml_tree(markup.encode("utf-8"), "utf-8")
    return signals(root)


SHELL = "<html><body><div id='root'></div><script src='/main.js'></script></body></html>"


@pytest.mark.parametrize(
    "markup, reason",
    [
        (SHELL, "empty application root"),
        (
            "<body><app-root></app-root><script src='m.js'></script></body>",
            "empty application root",
        ),
        (
            "<body><noscript>You need to enable JavaScript to run this app.</noscript>"
            "<div id='content'>Loading</div><script src='a.js'></script></body>",
            "noscript asks for JavaScript",
        ),
        (
            "<body><div data-reactroot>Loading…</div><script src='a.js'></script></body>",
            "framework marker",
        ),
        ("<body><script>document.write('hi')</script></body>", "no links and no text but scripts"),
        # content in the HTML: not rendered, whatever built it
        (
            "<body><div id='__next'>"
            + "<p>words of a server-rendered page</p>" * 20
            + "<a href='/a'>a</a></div><script id='__NEXT_DATA__'>{}</script></body>",
            None,
        ),
        ("<body><div id='root'></div>" + "<a href='/x'>x</a>" * 5 + "</body>", None),
        ("<body><p>A short page, with no script at all.</p></body>", None),
        ("<body></body>", None),  # empty, and no script: nothing a browser would add
    ],
)
def test_auto_renders_only_shells(markup: str, reason: str | None) -> None:
    assert render_reason("auto", of(markup)) == reason


def test_never_and_always() -> None:
    assert render_reason("never", of(SHELL)) is None
    page = of("<body>" + "<p><a href='/a'>many words and links</a></p>" * 50 + "</body>")
    assert render_reason("always", page) == "always"
    assert render_reason("auto", None) is None and render_reason("always", None) is None


def test_signals_count_what_a_reader_sees() -> None:
    page = of(
        "<html><head><title>five words in the title</title><style>p{}</style></head><body>"
        "<p>one two three</p><script>var a = 'not words';</script>"
        "<noscript>please enable JavaScript</noscript><a href='/x'>four</a><a>no href</a>"
        "</body></html>"
    )
    assert page == Signals(
        links=1, words=6, scripts=1, empty_mount=False, noscript_asks=True, framework=False
    )


@pytest.mark.parametrize("page", sorted(GOLD.glob("*.html")), ids=lambda p: p.name)
def test_no_page_of_the_gold_set_is_rendered(page: Path) -> None:
    """Static pages, even the Next.js one (server-rendered): none is a shell."""
    root, _ = _lxml_tree(page.read_bytes(), None)
    assert render_reason("auto", signals(root)) is None
