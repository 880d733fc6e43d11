"""Link extraction, decoding, and the downloader (with responses)."""

from __future__ import annotations

import gzip
import os
import threading
from typing import Any

import pytest
import responses
from hostile import Reply, html, redirect, serve
from hypothesis import given, settings
from hypothesis import strategies as st

from mpcrawler.content import fingerprint as fingerprint_module
from mpcrawler.settings import Settings
from mpcrawler.testing.redis import free_port
from mpcrawler.testing.site import TestSite
from mpcrawler.web.filters import UrlRules
from mpcrawler.web.urls import Scope
from mpcrawler.worker import analyzer as analyzer_module
from mpcrawler.worker import stream as stream_module
from mpcrawler.worker.analyzer import HtmlAnalyzer, LxmlAnalyzer
from mpcrawler.worker.curl import CurlDownloader
from mpcrawler.worker.downloader import (
    BodyTooLarge,
    ConnectFailed,
    Downloader,
    Response,
    TimedOut,
    parse_content_type,
)
from mpcrawler.worker.http import HttpDownloader
from mpcrawler.worker.links import LinkResolver, document_base

BASE = "http://site.test/dir/page.html"


@pytest.fixture(params=[HtmlAnalyzer, LxmlAnalyzer], ids=["bs4", "lxml"])
def analyzer(request: pytest.FixtureRequest) -> type[HtmlAnalyzer]:
    """The analysis tests run against both built-in analyzers."""
    cls: type[HtmlAnalyzer] = request.param
    return cls


def analyze(
    cls: type[HtmlAnalyzer],
    body: bytes,
    content_type: str = "text/html",
    charset: str | None = None,
    url: str = BASE,
) -> tuple[str | None, list[str]]:
    analysis = cls(Settings()).analyze(
        Response(url=url, status=200, body=body, content_type=content_type, charset=charset)
    )
    resolver = LinkResolver(UrlRules(Scope.from_seeds([url], ["site.test"])), 2048)
    _, links = resolver.resolve(analysis.links, document_base(analysis.base, url))
    return analysis.item.get("title"), links


def test_broken_html_still_yields_links(analyzer: type[HtmlAnalyzer]) -> None:
    body = (
        b"<HTML><HEAD><TITLE>Broken &amp; fine</TITLE><BODY>"
        b"<A HREF=one.html>1</A><a href='two.html'>2<a href=\"/three\">3"
        b'<p><a href="">empty</a><a>no href</a><AREA HREF=/four>'
        b'<a href="  /five  ">5</a><a href="/six#x"><a href="/six">'
        b'<a href="/q?a=1&amp;b=2">entity</a>'
    )
    title, links = analyze(analyzer, body)
    assert title == "Broken & fine"
    assert links == [
        "http://site.test/dir/one.html",
        "http://site.test/dir/two.html",
        "http://site.test/three",
        "http://site.test/dir/page.html",
        "http://site.test/four",
        "http://site.test/five",
        "http://site.test/six",
        "http://site.test/q?a=1&b=2",
    ]


def test_ignores_non_http_links_and_too_long_ones(analyzer: type[HtmlAnalyzer]) -> None:
    long = "/" + "x" * 3000
    body = (
        b'<a href="mailto:a@b">m</a><a href="javascript:go()">j</a><a href="tel:1">t</a>'
        b'<a href="ftp://site.test/f">f</a><a href="data:text/html,x">d</a>'
        b'<a href="file:///etc/passwd">x</a><a href="' + long.encode() + b'">long</a>'
        b'<a href="/ok">ok</a>'
    )
    _, links = analyze(analyzer, body)
    assert links == ["http://site.test/ok"]


def test_base_href_is_honoured(analyzer: type[HtmlAnalyzer]) -> None:
    body = b'<head><base href="http://site.test/other/"></head><a href="x">x</a>'
    assert analyze(analyzer, body)[1] == ["http://site.test/other/x"]


def test_header_charset_wins(analyzer: type[HtmlAnalyzer]) -> None:
    body = "<title>caf\u00e9</title><a href='/caf\u00e9'>x</a>".encode("iso-8859-1")
    title, links = analyze(analyzer, body, charset="iso-8859-1")
    assert title == "caf\u00e9"
    assert links == ["http://site.test/caf%C3%A9"]


def test_meta_charset_shift_jis(analyzer: type[HtmlAnalyzer]) -> None:
    text = (
        "<html><head><meta charset='shift_jis'><title>\u65e5\u672c\u8a9e</title></head>"
        "<body><a href='/\u65e5\u672c'>x</a></body></html>"
    )
    title, links = analyze(analyzer, text.encode("shift_jis"))
    assert title == "\u65e5\u672c\u8a9e"
    assert links == ["http://site.test/%E6%97%A5%E6%9C%AC"]


def test_non_html_is_never_parsed(analyzer: type[HtmlAnalyzer]) -> None:
    title, links = analyze(
        analyzer,
        b'<a href="/x">x</a>',
        content_type="application/octet-stream",
        url="http://site.test/looks-like.html",
    )
    assert title is None and links == []


def test_parse_content_type() -> None:
    assert parse_content_type('Text/HTML; Charset="UTF-8"') == ("text/html", "utf-8")
    assert parse_content_type("") == ("", None)


class CurlEventLoopDownloader(CurlDownloader):
    """CurlDownloader's downloads made as the worker's event loop makes
    them: started in a slot of ``CurlTransfers`` and waited for."""

    def download(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        follow_redirects: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Response:
        transfers = CurlDownloader.transfers([self])
        transfers.start(
            0, url, max_bytes=max_bytes, follow_redirects=follow_redirects, headers=headers
        )
        read, write = os.pipe()
        try:
            while not (ended := transfers.wait(1.0, read)):
                pass
        finally:
            os.close(read)
            os.close(write)
            transfers.close()
        [(_, outcome)] = ended
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


# Every downloader offered keeps the same contract, and the curl one the same
# when its slots are driven by the worker's event loop.
DOWNLOADERS = [HttpDownloader, CurlDownloader, CurlEventLoopDownloader]


@pytest.mark.parametrize("downloader_class", DOWNLOADERS)
def test_downloader_does_not_follow_redirects(downloader_class: type[Downloader]) -> None:
    with serve({"/a": lambda h, n: redirect("/b", 301)}) as server:
        downloader = downloader_class(Settings(allow_private_networks=True))
        response = downloader.download(server.url + "/a")
        assert server.log.paths() == ["/a"]
    assert response.status == 301 and response.headers["location"] == "/b"


@pytest.mark.parametrize("downloader_class", DOWNLOADERS)
def test_downloader_caps_decoded_bytes(downloader_class: type[Downloader]) -> None:
    bomb = gzip.compress(b"\0" * (5 << 20))
    headers = {"Content-Encoding": "gzip", "Content-Type": "text/html"}
    with serve({"/bomb": lambda h, n: (200, headers, bomb)}) as server:
        downloader = downloader_class(Settings(max_bytes=1 << 20, allow_private_networks=True))
        with pytest.raises(BodyTooLarge) as info:
            downloader.download(server.url + "/bomb")
    assert info.value.status == 200 and not info.value.transient


@pytest.mark.parametrize("downloader_class", DOWNLOADERS)
def test_downloader_maps_failures(downloader_class: type[Downloader]) -> None:
    """A read that times out, a refused connection, a dropped one: each its kind."""
    release = threading.Event()

    def silent(handler: object, n: int) -> Reply:
        release.wait(30)  # past the client's timeout: it gives up first
        return html("late")

    def dropped(handler: Any, n: int) -> Reply:
        handler.close_connection = True
        raise ConnectionResetError  # the server closes without an answer

    with serve({"/t": silent, "/d": dropped}) as server:
        downloader = downloader_class(Settings(timeout=0.5, allow_private_networks=True))
        try:
            with pytest.raises(TimedOut):
                downloader.download(server.url + "/t")
        finally:
            release.set()
        with pytest.raises(ConnectFailed, match="connection failed"):
            downloader.download(server.url + "/d")
    with pytest.raises(ConnectFailed, match="connection refused"):
        downloader.download(f"http://127.0.0.1:{free_port()}/c")
    summary = downloader.summary()
    assert summary["called"] == 3 and summary["completed"] == 0 and summary["handling"] == 0


# ------------------------------------------------- the two analyzers agree
def _corpus() -> list[tuple[str, bytes, str | None]]:
    """(name, body, HTTP charset) of pages that test how HTML is read."""
    site = TestSite(pages=50, size=30_000)
    xhtml = (
        b'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0'
        b' Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n<html xmlns='
        b'"http://www.w3.org/1999/xhtml"><head><title>XHTML <![CDATA[page]]></title></head>'
        b'<body><a href="a.html"/><p><a href="b.html">b</a></p></body></html>'
    )
    index = b"<title>Index</title><ul>" + b"".join(
        b'<li><a href="/item/%d?x=%d&amp;y=1">item %d</a></li>' % (i, i, i) for i in range(20_000)
    )
    return [
        *((f"site page {i}", site.body(i, 8000), None) for i in (0, 1, 17, 49)),
        ("xhtml as text/html", xhtml, None),
        (
            "entities",
            b"<title>Caf&eacute; &amp; &#x263A;</title><a href='/a?b=1&amp;c=&#x2F;'>x</a>"
            b'<a href="/&eacute;t&eacute;">e</a><a href=/bare&lt;>l</a>',
            None,
        ),
        (
            "base first wins",
            b'<base target=x><base href=" /b1/ "><base href="/b2/"><a href=x>',
            None,
        ),
        ("empty base", b'<base href="  "><a href="x">x</a>', None),
        ("area and map", b'<map><area href="/m1"><area nohref><AREA HREF="/m2"></map>', None),
        ("broken nesting", b"<a href=1><b><a href=2></b><table><a href=3><tr><td><a href=4>", None),
        ("no title", b"<a href=/only>x</a>", None),
        ("text after the title", b"<title>T</title><p>body <b>text</b><a href=/a>link</a>", None),
        ("blank title", b"<title>   </title><a href=/x>", None),
        ("title with tags", b"<title>A <b>bold</b>\n claim</title>", None),
        ("svg title", b"<svg><title>drawing</title></svg><title>page</title>", None),
        (
            "latin-1 by header",
            "<title>caf\u00e9</title><a href='/\u00e9'>".encode("latin-1"),
            "iso-8859-1",
        ),
        (
            "shift_jis by meta",
            "<meta charset=shift_jis><title>\u65e5\u672c</title><a href='/\u65e5'>".encode(
                "shift_jis"
            ),
            None,
        ),
        ("utf-16 with bom", "\ufeff<title>sixteen</title><a href='/16'>".encode("utf-16-le"), None),
        ("cp1252 undeclared", b"<title>smart \x93quotes\x94</title><a href='/q\x92'>", None),
        (
            "header beats meta",
            "<meta charset=shift_jis><title>caf\u00e9</title><a href=/\u00e9>".encode(),
            "utf-8",
        ),
        ("bogus header charset", b"<title>ok</title><a href=/b>", "no-such-charset"),
        ("huge index", index, None),
        (
            "comment and script",
            b"<!-- <a href=/c> --><script>'<a href=/s>'</script><a href=/r>",
            None,
        ),
        ("nul bytes", b"<title>a\x00b</title><a href='/n\x00l'>", None),
        (
            "attribute names lxml refuses to look up",
            b"<a {x}=1 href=/braces>x</a><a href=/ctl x\x01y=2>y</a>"
            b"<link {=1 href=/c rel=canonical><base {}=2 href=/b/>",
            None,
        ),
    ]


@pytest.mark.parametrize("name, body, charset", _corpus(), ids=[c[0] for c in _corpus()])
def test_lxml_analyzer_agrees_with_beautifulsoup(
    name: str, body: bytes, charset: str | None
) -> None:
    response = Response(url=BASE, status=200, body=body, content_type="text/html", charset=charset)
    soup = HtmlAnalyzer(Settings()).analyze(response)
    tree = LxmlAnalyzer(Settings()).analyze(response)
    assert (tree.base, tree.links, tree.item) == (soup.base, soup.links, soup.item)
    assert _words(tree.text) == _words(soup.text)  # one fingerprint, whichever analyzer
    assert soup.links or name in ("no title", "blank title", "title with tags", "svg title")


def test_a_trees_text_comes_collapsed_and_is_digested_as_it_is() -> None:
    """Both analyzers hand over a page's text with its whitespace collapsed
    (libxml2's normalize-space), which the fingerprint digests without
    listing its words (``_joined``); the same fingerprint as the text as
    lxml serializes it."""
    body = (
        b"<html><head><title>T</title><style>p {}</style></head><body>\n"
        b"  <p>One\n\t two</p>  <div>three <b>fo</b>ur  2026</div>\r\n <script>x</script>"
        b"</body></html>"
    )
    response = Response(url=BASE, status=200, body=body, content_type="text/html")
    raw = "T\n  One\n\t two  three four  2026\r\n "
    for analyzer in (HtmlAnalyzer(Settings()), LxmlAnalyzer(Settings())):
        text = analyzer.analyze(response).text
        assert text == "T One two three four 2026"
        assert fingerprint_module._joined(fingerprint_module._normalized(text))
        assert fingerprint_module.fingerprint(text) == fingerprint_module.fingerprint(raw)


def _plain_soup_reading(body: bytes, charset: str | None) -> tuple[str, list[str], str | None]:
    """(base, links, title) as a whole BeautifulSoup tree gives them, without
    the analyzer's strained soup: the reference it must agree with."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body, "lxml", from_encoding=charset)
    base_tag = soup.find("base", href=True)
    base = base_tag["href"].strip() if base_tag is not None else ""
    links = [tag["href"] for tag in soup.find_all(["a", "area"], href=True)]
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag is not None else None
    return base or BASE, links, title or None


@pytest.mark.parametrize("name, body, charset", _corpus(), ids=[c[0] for c in _corpus()])
def test_the_strained_soup_reads_what_a_whole_soup_reads(
    name: str, body: bytes, charset: str | None
) -> None:
    response = Response(url=BASE, status=200, body=body, content_type="text/html", charset=charset)
    analysis = HtmlAnalyzer(Settings()).analyze(response)
    assert (analysis.base, analysis.links, analysis.item["title"]) == _plain_soup_reading(
        body, charset
    )


@pytest.mark.parametrize(
    "body",
    [
        b'<meta charset="iso-8859-1"><title>t</title><a href=/x>x</a>',
        b'<meta http-equiv="Content-Type" content="text/html; charset=latin-1"><a href=/y>',
        b'<meta name="robots" content="noindex"><meta charset=utf-8 content=x><a href=/z>',
    ],
)
def test_the_strained_soups_meta_tags_are_the_whole_soups(body: bytes) -> None:
    """A <meta>'s attributes are a whole soup's, each value of the same
    type: its declared charset the placeholder BeautifulSoup makes it, so
    the soup encoded to another encoding declares that one."""
    from bs4 import BeautifulSoup

    from mpcrawler.worker.soup import strained_soup

    whole = BeautifulSoup(body, "lxml", multi_valued_attributes=None)
    root, encoding = analyzer_module._lxml_tree(body, None)  # the tree both analyzers read
    strained = strained_soup(root, encoding)

    def metas(soup: Any) -> list[list[tuple[str, str, str]]]:
        return [
            [(k, str(v), type(v).__name__) for k, v in tag.attrs.items()]
            for tag in soup.find_all("meta")
        ]

    assert metas(strained) == metas(whole)
    assert any(t for m in metas(whole) for _, _, t in m if t.endswith("MetaAttributeValue"))
    assert "utf-16" in strained.encode("utf-16").decode("utf-16")


def test_a_soup_is_there_for_the_asking() -> None:
    response = Response(url=BASE, status=200, body=b"<p class=x>hi</p>", content_type="text/html")
    for cls in (HtmlAnalyzer, LxmlAnalyzer):
        assert cls(Settings()).soup(response).find("p", class_="x").get_text() == "hi"


_TOKENS = [
    b"<a href='",
    b'<a href="/x',
    b"'>",
    b'">',
    b"</a>",
    b"<area href=/m>",
    b"<base href=",
    b"/b/>",
    b"<title>",
    b"</title>",
    b"<meta charset=",
    b"utf-8>",
    b"latin1>",
    b"<svg>",
    b"</svg>",
    b"<table>",
    b"<td>",
    b"<!--",
    b"-->",
    b"<script>",
    b"</script>",
    b"&amp;",
    b"&eacute;",
    b"&#0;",
    b"\xe9",
    b"\xff\xfe",
    b"\x00",
    b" ",
    b"\n",
    b"text",
    b"<",
    b">",
]


@settings(max_examples=1000, derandomize=True, deadline=None, database=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=30).map(b"".join))
def test_the_analyzers_agree_on_any_token_soup(body: bytes) -> None:
    response = Response(url=BASE, status=200, body=body, content_type="text/html")
    soup = HtmlAnalyzer(Settings()).analyze(response)
    tree = LxmlAnalyzer(Settings()).analyze(response)
    assert (tree.base, tree.links, tree.item["title"]) == (
        soup.base,
        soup.links,
        soup.item["title"],
    )


def _words(text: str | None) -> list[str]:
    """The words of an analyzer's text, as a fingerprint reads them."""
    return (text or "").lower().split()


def test_a_worker_sends_each_link_once_unless_from_a_shallower_page() -> None:
    from mpcrawler.worker.links import SentLinks

    sent = SentLinks(size=3)
    assert sent.first_times([("a", 0), ("b", 5)], depth=3) == [("a", 0), ("b", 5)]
    assert sent.first_times([("a", 9), ("c", 0)], depth=3) == [("c", 0)]  # a: sent at 3
    assert sent.first_times([("a", 0), ("b", 0)], depth=4) == []  # deeper: nothing new
    # a link too deep for --max-depth from one page may be within it from a shallower one
    assert sent.first_times([("b", 1)], depth=2) == [("b", 1)]
    assert sent.first_times([("d", 0)], depth=1) == [("d", 0)]  # the oldest (a) goes
    assert sent.first_times([("a", 0)], depth=9) == [("a", 0)]  # forgotten: sent again


@responses.activate
def test_a_followed_redirect_takes_requests_own_path() -> None:
    """robots.txt follows redirects: requests' path (mocked here), not the transport's."""
    responses.add(
        responses.GET, "http://site.test/robots.txt", status=301, headers={"Location": "/r2"}
    )
    responses.add(responses.GET, "http://site.test/r2", body="User-agent: *\nDisallow: /x\n")
    downloader = HttpDownloader(Settings())
    response = downloader.download(
        "http://site.test/robots.txt", max_bytes=1000, follow_redirects=True
    )
    assert (response.status, response.url) == (200, "http://site.test/r2")
    assert response.body == b"User-agent: *\nDisallow: /x\n"


@pytest.mark.parametrize("depth", [300, 5_000])
@pytest.mark.parametrize("analyzer", [HtmlAnalyzer, LxmlAnalyzer])
def test_markup_nested_past_libxml2s_depth_loses_no_link_and_no_text(
    analyzer: type, depth: int
) -> None:
    """libxml2 builds no element deeper than 256 and stops there; both
    analyzers find every link and the text, whatever the depth (and an
    attribute lxml refuses, xmlns:xlink, costs its element nothing)."""
    body = (
        "<html><head><title>Deep</title></head><body>"
        + "<div>" * depth
        + '<a href="/inside">in</a><p xmlns:xlink="http://www.w3.org/1999/xlink">'
        + "The paragraph at the bottom of the generated nesting, read whole."
        + "</p>"
        + "</div>" * depth
        + '<a href="/after">after</a></body></html>'
    ).encode()
    response = Response(url="http://x.test/", status=200, content_type="text/html", body=body)
    found = analyzer(Settings(seeds=["http://x.test/"], extract=True)).analyze(response)
    assert found.links == ["/inside", "/after"] and found.item["title"] == "Deep"
    assert "The paragraph at the bottom of the generated nesting" in found.item["text"]
    assert "read whole" in (found.text or "")  # the text a fingerprint is taken of


# ------------------------------------------------- big pages, as a stream
def _read(cls: type[HtmlAnalyzer], response: Response, stream: bool, **options: Any) -> Any:
    """An analysis of ``response`` by ``cls``, read as a big page is (as a
    stream of the parser's events, fed in pieces of 97 bytes) or as a tree,
    whatever its size."""
    kept = analyzer_module.STREAM_BYTES, stream_module.PIECE
    analyzer_module.STREAM_BYTES = -1 if stream else 1 << 40
    stream_module.PIECE = 97  # fed in pieces, cut anywhere (a tag, a character)
    try:
        return cls(Settings(**options)).analyze(response)
    finally:
        analyzer_module.STREAM_BYTES, stream_module.PIECE = kept


def _reading(analysis: Any) -> tuple[Any, ...]:
    return (
        analysis.base,
        analysis.links,
        analysis.item["title"],
        analysis.item.get("encoding"),
        sorted(analysis.nofollow),
        analysis.metas,
        analysis.canonical,
        analysis.embeds,
        _words(analysis.text),
    )


STREAM_CORPUS = [
    *_corpus(),
    (
        "robots, canonical, nofollow, requisites",
        b'<meta name="ROBOTS" content="noindex"><meta name=robots><meta name=other content=x>'
        b'<link rel="Canonical" href=" /c1 "><link rel=canonical href=/c2>'
        b'<link rel=stylesheet href=/s.css><style>@import "/i.css"; p{background:url(/b.png)}'
        b'</style><p style="background:url(/p.png)">x</p><img src=/i.png srcset="/a.png 1x">'
        b'<a href=/n rel="external nofollow">n</a><a href=/f>f</a><script src=/j.js></script>',
        None,
    ),
    ("text runs", b"<p>AT&amp;T</p>\n<p>one</p>\n<p>two<br>three</p>caf&eacute;s", None),
]


@pytest.mark.parametrize("name, body, charset", STREAM_CORPUS, ids=[c[0] for c in STREAM_CORPUS])
@pytest.mark.parametrize("cls", [HtmlAnalyzer, LxmlAnalyzer], ids=["bs4", "lxml"])
def test_a_big_page_read_as_a_stream_reads_as_the_tree_does(
    cls: type[HtmlAnalyzer], name: str, body: bytes, charset: str | None
) -> None:
    """Past STREAM_BYTES a page is read from its parser's events, with no
    tree: the same base, links, title, encoding, nofollow marks, robots meta
    tags, canonical link, requisites and text's words as from the tree."""
    response = Response(url=BASE, status=200, body=body, content_type="text/html", charset=charset)
    stream = _read(cls, response, True, page_requisites=True)
    tree = _read(LxmlAnalyzer, response, False, page_requisites=True)
    assert _reading(stream) == _reading(tree)


@settings(max_examples=500, derandomize=True, deadline=None, database=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=30).map(b"".join))
def test_a_stream_reads_any_token_soup_as_the_tree_does(body: bytes) -> None:
    response = Response(url=BASE, status=200, body=body, content_type="text/html")
    assert _reading(_read(LxmlAnalyzer, response, True)) == _reading(
        _read(LxmlAnalyzer, response, False)
    )


@pytest.fixture
def small_big_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """A big page is one past 256 KiB here, and its tree of its first 256
    KiB (not 4 MiB each): the same paths, on pages 16 times smaller (a 12
    MB page, read twice, took 7 s of the suite's CPU);
    ``benchmarks/bench_big_page.py`` reads pages of the real sizes."""
    monkeypatch.setattr(analyzer_module, "STREAM_BYTES", 256 << 10)
    monkeypatch.setattr(stream_module, "TREE_BYTES", 256 << 10)


def test_a_big_pages_main_content_is_read_from_its_first_part(small_big_pages: None) -> None:
    """With --extract, a page past STREAM_BYTES has its main content read
    from a tree of its first TREE_BYTES, and says text_truncated; its links
    and the text its fingerprint is of are all of the page's."""
    paragraph = b"<p>A paragraph of the long page, <a href=/p%d>one link</a> in it.</p>\n"
    body = (
        b"<html><title>Long</title><body><main>"
        + b"".join(paragraph % n for n in range(4_000))
        + b"</main><p>The very end.</p></body></html>"
    )
    assert len(body) > analyzer_module.STREAM_BYTES
    response = Response(url=BASE, status=200, body=body, content_type="text/html")
    for cls in (HtmlAnalyzer, LxmlAnalyzer):
        found = cls(Settings(extract=True)).analyze(response)
        assert len(found.links) == 4_000 and found.links[-1] == "/p3999"
        assert found.item["title"] == "Long" and found.item["text_truncated"] is True
        assert "A paragraph of the long page" in found.item["text"]
        assert "The very end." not in found.item["text"]  # past the first part
        assert (found.text or "").endswith("The very end.")


def test_no_tree_is_made_of_a_big_page_past_its_first_part(
    monkeypatch: pytest.MonkeyPatch, small_big_pages: None
) -> None:
    """The memory a big page takes is bounded by what is built of it: no
    BeautifulSoup, and one lxml tree, of at most TREE_BYTES (counted)."""
    trees: list[int] = []
    made = analyzer_module._lxml_tree

    def counted(body: bytes, charset: str | None) -> Any:
        trees.append(len(body))
        return made(body, charset)

    def no_soup(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a soup of a big page")

    monkeypatch.setattr(analyzer_module, "_lxml_tree", counted)
    monkeypatch.setattr(analyzer_module, "BeautifulSoup", no_soup)
    body = b"<title>Big</title>" + b"<p>words and <a href=/x>a link</a></p>" * 20_000
    response = Response(url=BASE, status=200, body=body, content_type="text/html")
    for cls in (HtmlAnalyzer, LxmlAnalyzer):
        found = cls(Settings(extract=True, render="auto")).analyze(response)
        assert len(found.links) == 20_000
    assert len(trees) == 2 and max(trees) <= stream_module.TREE_BYTES < len(body) // 2


def test_a_page_is_fed_to_its_parser_whole_or_in_pieces_of_a_megabyte() -> None:
    """Fed in pieces of 512 bytes, libxml2 took time growing with the square
    of the size (a minute for 30 MB): a tree's document is fed in one call,
    a stream's in pieces of PIECE bytes (counted)."""
    from lxml import etree

    feeds: list[int] = []

    class Counted:
        def __init__(self, encoding: str) -> None:
            self.parser = etree.HTMLParser(recover=True, encoding=encoding)

        def feed(self, data: bytes) -> None:
            feeds.append(len(data))
            self.parser.feed(data)

        def close(self) -> Any:
            return self.parser.close()

    body = b"<title>t</title>" + b"<p>words <a href=/x>x</a></p>" * 100_000  # 3 MB
    root, encoding = stream_module.parse_decoded(body, "utf-8", Counted)
    assert encoding == "utf-8" and root is not None and feeds == [len(body)]
    feeds.clear()
    stream_module.parse_decoded(body, "utf-8", Counted, stream_module.PIECE)
    assert len(feeds) == -(-len(body) // stream_module.PIECE) == 3
