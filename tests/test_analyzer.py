"""Link extraction, decoding, and the downloader (with responses)."""

from __future__ import annotations

import gzip

import pytest
import requests
import responses

from mpcrawler.analyzer import HtmlAnalyzer
from mpcrawler.downloader import (
    BodyTooLarge,
    ConnectFailed,
    HttpDownloader,
    Response,
    TimedOut,
    parse_content_type,
)
from mpcrawler.settings import Settings
from mpcrawler.urls import Scope
from mpcrawler.worker import LinkResolver

BASE = "http://site.test/dir/page.html"


def analyze(
    body: bytes, content_type: str = "text/html", charset: str | None = None, url: str = BASE
) -> tuple[str | None, list[str]]:
    analysis = HtmlAnalyzer(Settings()).analyze(
        Response(url=url, status=200, body=body, content_type=content_type, charset=charset)
    )
    resolver = LinkResolver(Scope.from_seeds([url], ["site.test"]), 2048)
    _, links = resolver.resolve(analysis.links, analysis.base)
    return analysis.item.get("title"), links


def test_broken_html_still_yields_links() -> None:
    body = (
        b"<HTML><HEAD><TITLE>Broken &amp; fine</TITLE><BODY>"
        b"<A HREF=one.html>1</A><a href='two.html'>2<a href=\"/three\">3"
        b'<p><a href="">empty</a><a>no href</a><AREA HREF=/four>'
        b'<a href="  /five  ">5</a><a href="/six#x"><a href="/six">'
        b'<a href="/q?a=1&amp;b=2">entity</a>'
    )
    title, links = analyze(body)
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


def test_ignores_non_http_links_and_too_long_ones() -> None:
    long = "/" + "x" * 3000
    body = (
        b'<a href="mailto:a@b">m</a><a href="javascript:go()">j</a><a href="tel:1">t</a>'
        b'<a href="ftp://site.test/f">f</a><a href="data:text/html,x">d</a>'
        b'<a href="file:///etc/passwd">x</a><a href="' + long.encode() + b'">long</a>'
        b'<a href="/ok">ok</a>'
    )
    _, links = analyze(body)
    assert links == ["http://site.test/ok"]


def test_base_href_is_honoured() -> None:
    body = b'<head><base href="http://site.test/other/"></head><a href="x">x</a>'
    assert analyze(body)[1] == ["http://site.test/other/x"]


def test_header_charset_wins() -> None:
    body = "<title>caf\u00e9</title><a href='/caf\u00e9'>x</a>".encode("iso-8859-1")
    title, links = analyze(body, charset="iso-8859-1")
    assert title == "caf\u00e9"
    assert links == ["http://site.test/caf%C3%A9"]


def test_meta_charset_shift_jis() -> None:
    text = (
        "<html><head><meta charset='shift_jis'><title>\u65e5\u672c\u8a9e</title></head>"
        "<body><a href='/\u65e5\u672c'>x</a></body></html>"
    )
    title, links = analyze(text.encode("shift_jis"))
    assert title == "\u65e5\u672c\u8a9e"
    assert links == ["http://site.test/%E6%97%A5%E6%9C%AC"]


def test_non_html_is_never_parsed() -> None:
    title, links = analyze(
        b'<a href="/x">x</a>',
        content_type="application/octet-stream",
        url="http://site.test/looks-like.html",
    )
    assert title is None and links == []


def test_parse_content_type() -> None:
    assert parse_content_type('Text/HTML; Charset="UTF-8"') == ("text/html", "utf-8")
    assert parse_content_type("") == ("", None)


@responses.activate
def test_downloader_does_not_follow_redirects() -> None:
    responses.add(responses.GET, "http://site.test/a", status=301, headers={"Location": "/b"})
    response = HttpDownloader(Settings()).download("http://site.test/a")
    assert response.status == 301 and response.headers["location"] == "/b"


@responses.activate
def test_downloader_caps_decoded_bytes() -> None:
    bomb = gzip.compress(b"\0" * (5 << 20))
    responses.add(
        responses.GET,
        "http://site.test/bomb",
        body=bomb,
        headers={"Content-Encoding": "gzip", "Content-Type": "text/html"},
    )
    downloader = HttpDownloader(Settings(max_bytes=1 << 20))
    with pytest.raises(BodyTooLarge) as info:
        downloader.download("http://site.test/bomb")
    assert info.value.status == 200 and not info.value.transient


@responses.activate
def test_downloader_maps_failures() -> None:
    responses.add(responses.GET, "http://site.test/t", body=requests.ReadTimeout("slow"))
    responses.add(responses.GET, "http://site.test/c", body=requests.ConnectionError("down"))
    downloader = HttpDownloader(Settings())
    with pytest.raises(TimedOut):
        downloader.download("http://site.test/t")
    with pytest.raises(ConnectFailed):
        downloader.download("http://site.test/c")
    summary = downloader.summary()
    assert summary["called"] == 2 and summary["completed"] == 0 and summary["handling"] == 0
