"""Page requisites: what a document names that it needs to render, found
the same by both analyzers, and the rules an embed is refused by."""

from __future__ import annotations

import pytest

from mpcrawler.archive.requisites import css_urls, srcset_urls, stylesheet_urls
from mpcrawler.frontier.base import EMBED_FLOOR, embed_hops, embed_priority, page_priority
from mpcrawler.master.outcome import kind_fields
from mpcrawler.master.request import Request
from mpcrawler.settings import Settings
from mpcrawler.web.filters import UrlRules
from mpcrawler.web.urls import Scope
from mpcrawler.worker.analyzer import HtmlAnalyzer, LxmlAnalyzer
from mpcrawler.worker.downloader import Response

PAGE = b"""<!DOCTYPE html><html><head><title>T</title>
<link rel="stylesheet" href="s.css"><link rel="shortcut icon" href="/favicon.ico">
<link rel="apple-touch-icon" href="touch.png"><link rel="preload" href="f.woff2" as="font">
<link rel="modulepreload" href="m.js"><link rel="manifest" href="app.webmanifest">
<link rel="alternate" href="feed.xml"><link rel="canonical" href="/c">
<style>@import "print.css"; body { background: url('bg.png') }</style>
<script src="j.js"></script><script>var u = "url(not-this.png)";</script>
</head><body style="background-image: url(body.png)">
<img src="a.png" srcset="a-2x.png 2x, a-3x.png 3x"><img src="data:image/png;base64,AAAA">
<picture><source srcset="p.avif 1x, p2.avif 2x" type="image/avif"><img src="p.jpg"></picture>
<video poster="v.jpg" src="v.mp4"><source src="v.webm"><track src="t.vtt"></video>
<audio src="a.ogg"></audio><object data="o.svg"></object><embed src="e.swf">
<input type="image" src="go.png"><input type="text" src="not-this.png">
<svg><use href="#local"/><use xlink:href="sprite.svg#i"/><image href="i.png"/></svg>
<iframe src="frame.html"></iframe><frameset><frame src="f2.html"></frameset>
<a href="link.html" style="background: url(a-bg.png)">a link is not a requisite</a>
<div style="color: red">no url</div>
</body></html>"""

EXPECTED = [
    ("s.css", "stylesheet"),
    ("/favicon.ico", "icon"),
    ("touch.png", "icon"),
    ("f.woff2", "preload"),
    ("m.js", "preload"),
    ("app.webmanifest", "manifest"),
    ("print.css", "import"),
    ("bg.png", "style"),
    ("j.js", "script"),
    ("body.png", "style"),
    ("a.png", "img"),
    ("a-2x.png", "img"),
    ("a-3x.png", "img"),
    ("data:image/png;base64,AAAA", "img"),
    ("p.avif", "img"),
    ("p2.avif", "img"),
    ("p.jpg", "img"),
    ("v.mp4", "media"),
    ("v.jpg", "img"),
    ("v.webm", "media"),
    ("t.vtt", "media"),
    ("a.ogg", "media"),
    ("o.svg", "object"),
    ("e.swf", "object"),
    ("go.png", "img"),
    ("sprite.svg#i", "svg"),
    ("i.png", "svg"),
    ("frame.html", "frame"),
    ("f2.html", "frame"),
    ("a-bg.png", "style"),
]


def response(body: bytes, content_type: str = "text/html") -> Response:
    return Response(
        url="http://h.test/dir/page",
        status=200,
        headers={},
        content_type=content_type,
        charset=None,
        body=body,
        elapsed_ms=1.0,
    )


@pytest.mark.parametrize("analyzer", [HtmlAnalyzer, LxmlAnalyzer])
def test_both_analyzers_find_every_kind_of_requisite(analyzer: type[HtmlAnalyzer]) -> None:
    analysis = analyzer(Settings(page_requisites=True)).analyze(response(PAGE))
    assert sorted(analysis.embeds) == sorted(EXPECTED)
    assert analysis.links == ["link.html"]  # the links and title are as before
    assert analysis.item["title"] == "T" and analysis.canonical == "/c"


@pytest.mark.parametrize("analyzer", [HtmlAnalyzer, LxmlAnalyzer])
def test_without_the_option_no_requisite_is_looked_for(analyzer: type[HtmlAnalyzer]) -> None:
    analysis = analyzer(Settings()).analyze(response(PAGE))
    # frames are the page's links then, followed as wget -r follows them
    assert analysis.embeds == [] and analysis.links == ["frame.html", "f2.html", "link.html"]


def test_srcset_candidates_with_commas_and_descriptors() -> None:
    assert srcset_urls("a.png") == ["a.png"]
    assert srcset_urls(" a.png 1x ,b.png 2x,  c.png") == ["a.png", "b.png", "c.png"]
    assert srcset_urls("x.jpg 100w, y,z.jpg 200w") == ["x.jpg", "y,z.jpg"]
    assert srcset_urls("a.png,b.png") == ["a.png,b.png"]  # no space: one URL, as HTML says
    assert srcset_urls("a.png 1x (junk, more), b.png") == ["a.png", "b.png"]
    assert srcset_urls("") == [] and srcset_urls(" , ,") == []


def test_stylesheets_are_tokenised_not_matched() -> None:
    css = """
    @charset "utf-8";
    @import "a.css" screen;
    @import url(b.css);
    @IMPORT url("c.css") print;
    @font-face { font-family: X; src: url(f.woff2) format("woff2"), url('f.ttf'); }
    @media (min-width: 1px) { .m { background: url(media.png) } }
    @supports (display: grid) { .s { background: url( "supports.png" ) } }
    /* url(comment.png) */
    .q::before { content: "url(string.png)"; }
    .e { background: url(); mask: image-set(url(set.png) 1x, "set2.png" 2x); }
    .u { cursor: url(cursor.cur), auto; }
    """
    assert css_urls(css) == [
        ("a.css", "import"),
        ("b.css", "import"),
        ("c.css", "import"),
        ("f.woff2", "font"),
        ("f.ttf", "font"),
        ("media.png", "css"),
        ("supports.png", "css"),
        ("set.png", "css"),
        ("cursor.cur", "css"),
    ]


def test_a_stylesheet_is_decoded_by_its_charset() -> None:
    body = '@charset "iso-8859-1"; .a { background: url(caf\xe9.png) }'.encode("latin-1")
    assert stylesheet_urls(body, None) == [("caf\xe9.png", "css")]
    assert stylesheet_urls(b"\xff\xfe garbage {{{ url(", None) == []  # broken: nothing


def test_embeds_come_from_any_host_but_not_past_the_explicit_rules() -> None:
    scope = Scope.from_seeds(["http://h.test/"])
    rules = UrlRules(
        scope,
        reject=(r"\.swf$",),
        reject_ext=frozenset({"png"}),
        accept=("^http://h\\.test/docs/",),
        exclude=("tracker",),
    )
    assert rules.refusal("http://cdn.test/logo.png") == "scope"
    assert rules.embed_refusal("http://cdn.test/logo.png") is None  # any host, any extension
    assert rules.embed_refusal("http://h.test/e.swf") == "reject_regex"
    assert rules.embed_refusal("http://cdn.test/tracker.gif") == "exclude"
    assert rules.embed_refusal("http://h.test/a/a/a/a/x.png") == "path_trap"
    denied = UrlRules(Scope.from_seeds(["http://h.test/"], deny=["ads.test"]))
    assert denied.embed_refusal("http://x.ads.test/a.js") == "deny_domain"
    strict = UrlRules(scope, reject_ext=frozenset({"png"}), accept=("docs",), filter_embeds=True)
    assert strict.embed_refusal("http://cdn.test/docs/logo.png") == "reject_ext"
    assert strict.embed_refusal("http://cdn.test/logo.css") == "accept_regex"


def test_the_embed_band_sits_above_every_page() -> None:
    assert embed_priority(1) > embed_priority(3) >= EMBED_FLOOR > page_priority(10**9)
    assert [embed_hops(embed_priority(h)) for h in (1, 2, 8)] == [1, 2, 8]
    assert page_priority(-5) == -5


def test_an_embed_record_names_its_page() -> None:
    embed = Request.new("http://cdn.test/a.png", kind="embed", lastmod="http://h.test/")
    assert kind_fields(embed) == {"kind": "embed", "from": "http://h.test/"}
    page = Request.new("http://h.test/p", lastmod="2026-01-01")
    assert kind_fields(page) == {"lastmod": "2026-01-01"}
