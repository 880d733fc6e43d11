"""Redirects, retries, caps, encodings and traps against a scripted server.

What was fetched, and how often, is read from the server's own log.
"""

from __future__ import annotations

import gzip
import threading
import time
from pathlib import Path

from hostile import Handler, Reply, Route, html, links, redirect, serve, stream_forever
from support import crawl_records


def crawl(url: str, tmp_path: Path, *extra: str) -> dict[str, dict]:  # type: ignore[type-arg]
    """The records by path; every URL must have exactly one."""
    records = crawl_records(url, tmp_path / "job", "--timeout", "2", "--no-robots", *extra)
    by_path = {r["url"].split("/", 3)[3]: r for r in records}
    assert len(by_path) == len(records), "a URL was recorded twice"
    return by_path


# ---------------------------------------------------------------- redirects
def test_redirect_chains_loops_and_limits(tmp_path: Path) -> None:
    routes = {
        "/": lambda h, n: links(
            "/r1", "/loop1", "/far0", "/off", "/mail", "/to-home", "/seen", "/target"
        ),
        "/r1": lambda h, n: redirect("/r2", 301),
        "/r2": lambda h, n: redirect("/final", 307),
        "/final": lambda h, n: links(title="final"),
        "/loop1": lambda h, n: redirect("/loop2"),
        "/loop2": lambda h, n: redirect("/loop1"),
        "/off": lambda h, n: redirect("http://127.0.0.2:9/elsewhere"),
        "/mail": lambda h, n: redirect("mailto:someone@example.invalid"),
        "/to-home": lambda h, n: redirect("/"),
        "/seen": lambda h, n: redirect("/target"),
        "/target": lambda h, n: links(title="target"),
    }

    def next_far(h: Handler, n: int) -> Reply:
        return redirect(f"/far{int(h.path[4:]) + 1}")

    for i in range(10):
        routes[f"/far{i}"] = next_far
    with serve(routes) as server:
        records = crawl(server.url + "/", tmp_path, "--max-redirects", "3")
        counts = server.log.counts()
    chain = records["r1"]
    assert (
        chain["final_url"].endswith("/final"),
        chain["status"],
        chain["title"],
        chain["redirects"],
    ) == (True, 200, "final", 2)
    assert "final" not in records  # one record per chain, under its first URL
    assert records["loop1"]["error"] == "redirect not followed: redirect loop"
    assert records["far0"]["error"] == "redirect not followed: more than 3 redirects"
    assert [counts[f"/far{i}"] for i in range(5)] == [1, 1, 1, 1, 0]
    assert records["off"]["error"] == "redirect not followed: out of scope"
    assert records["mail"]["error"] == "redirect not followed: not an http(s) URL"
    assert records["to-home"]["error"] is None and records["to-home"]["status"] == 302
    # /target is reached once, as a link or through /seen, never twice
    assert counts["/target"] == 1 and counts["/"] == 1
    assert all(n == 1 for n in counts.values()), counts


# ------------------------------------------------------------------ retries
def test_transient_failures_are_retried_then_recorded(tmp_path: Path) -> None:
    def flaky(status: int, fail_times: int, **headers: str):  # type: ignore[no-untyped-def]
        def route(h: Handler, n: int) -> Reply:
            if n < fail_times:
                return html("busy", status=status, **headers)
            return links(title="recovered")

        return route

    retry_after_seen: list[float] = []

    def throttled(h: Handler, n: int) -> Reply:
        retry_after_seen.append(time.monotonic())
        return html("slow down", status=429, **{"Retry-After": "1"}) if n == 0 else links()

    routes = {
        "/": lambda h, n: links("/503", "/500x3", "/404", "/429", "/502"),
        "/503": flaky(503, 2),
        "/500x3": flaky(500, 3),
        "/404": lambda h, n: html("missing", status=404),
        "/429": throttled,
        "/502": flaky(502, 1),
    }
    with serve(routes) as server:
        records = crawl(server.url + "/", tmp_path, "--retries", "2")
        counts = server.log.counts()
    assert counts["/503"] == 3 and records["503"]["status"] == 200
    assert records["503"]["attempts"] == 3 and records["503"]["error"] is None
    assert counts["/500x3"] == 3
    assert records["500x3"]["status"] == 500 and records["500x3"]["error"] == "HTTP 500"
    assert counts["/404"] == 1 and records["404"]["error_kind"] == "http_4xx"
    assert counts["/502"] == 2 and records["502"]["status"] == 200
    assert counts["/429"] == 2
    assert retry_after_seen[1] - retry_after_seen[0] >= 0.95  # Retry-After honoured


def test_statuses_mean_the_same_whatever_the_content_type(tmp_path: Path) -> None:
    """--accept-type decides whether a body is read, never what a status
    means: redirects, 429 and 503 with Retry-After, and errors sent as
    text/plain or JSON are acted on as if they were HTML."""
    seen: dict[str, list[float]] = {"/429": [], "/503": []}

    def typed(status: int, kind: str, **headers: str) -> Reply:
        return status, {"Content-Type": kind, **headers}, b"not html"

    def throttled(status: int, kind: str) -> Route:
        def route(h: Handler, n: int) -> Reply:
            seen[h.path].append(time.monotonic())
            return typed(status, kind, **{"Retry-After": "1"}) if n == 0 else links()

        return route

    routes = {
        "/": lambda h, n: links("/r-plain", "/r-json", "/429", "/503", "/404", "/text"),
        "/r-plain": lambda h, n: typed(301, "text/plain", Location="/a"),
        "/r-json": lambda h, n: typed(302, "application/json", Location="/b"),
        "/a": lambda h, n: links(title="a"),
        "/b": lambda h, n: links(title="b"),
        "/429": throttled(429, "text/plain"),
        "/503": throttled(503, "application/json"),
        "/404": lambda h, n: typed(404, "application/json"),
        "/text": lambda h, n: typed(200, "text/plain"),
    }
    with serve(routes) as server:
        records = crawl(server.url + "/", tmp_path, "--retry-delay", "0")
        counts = server.log.counts()
    for path, target in (("r-plain", "a"), ("r-json", "b")):
        assert records[path]["final_url"] == f"{server.url}/{target}"
        assert records[path]["title"] == target
    assert counts["/a"] == counts["/b"] == 1
    for path in ("/429", "/503"):  # retried, and not before Retry-After (the server's clock)
        assert counts[path] == 2 and records[path[1:]]["status"] == 200
        assert seen[path][1] - seen[path][0] >= 0.95
        assert "skipped" not in records[path[1:]]
    assert records["404"]["error"] == "HTTP 404" and "skipped" not in records["404"]
    assert records["text"]["skipped"].startswith("content type text/plain not accepted")


def test_timeouts_are_retried(tmp_path: Path) -> None:
    over = threading.Event()

    def hang(h: Handler, n: int) -> Reply:
        if n == 0:
            over.wait(60)  # the first answer never comes while the crawl runs
        return links(title="late")

    with serve({"/": lambda h, n: links("/hang"), "/hang": hang}) as server:
        try:
            records = crawl(server.url + "/", tmp_path, "--timeout", "0.5")
        finally:
            over.set()
        assert server.log.counts()["/hang"] == 2
    assert records["hang"]["status"] == 200 and records["hang"]["attempts"] == 2


# --------------------------------------------------------------------- caps
def test_body_caps_and_bombs(tmp_path: Path) -> None:
    bomb = gzip.compress(b" " * (60 << 20))
    routes = {
        "/": lambda h, n: links("/huge", "/bomb", "/ok"),
        "/huge": lambda h, n: (200, {"Content-Type": "text/html"}, stream_forever()),
        "/bomb": lambda h, n: (
            200,
            {"Content-Type": "text/html", "Content-Encoding": "gzip"},
            bomb,
        ),
    }
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl(server.url + "/", tmp_path, "--max-bytes", str(1 << 20))
        counts = server.log.counts()
    for name in ("huge", "bomb"):
        assert records[name]["error_kind"] == "too_large", records[name]
        assert counts["/" + name] == 1  # never retried
    assert records["ok"]["error"] is None


def test_the_default_body_cap_is_10_mb(tmp_path: Path) -> None:
    """Without --max-bytes, a body past 10 MB is too large, once; one just
    under is read (a big page: its links, as a stream)."""
    page = b"<title>almost ten</title><a href=/ok>ok</a>"
    under = page + b" " * ((10 << 20) - len(page) - 1)
    over = under + b"  "
    routes = {
        "/": lambda h, n: links("/under", "/over"),
        "/under": lambda h, n: (200, {"Content-Type": "text/html"}, under),
        "/over": lambda h, n: (200, {"Content-Type": "text/html"}, over),
    }
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl(server.url + "/", tmp_path)
        counts = server.log.counts()
    assert records["over"]["error_kind"] == "too_large" and counts["/over"] == 1
    assert records["under"]["error"] is None and records["under"]["title"] == "almost ten"
    assert records["under"]["bytes"] == (10 << 20) - 1 and counts["/ok"] == 1


def test_long_and_non_http_links_are_dropped(tmp_path: Path) -> None:
    long_path = "/" + "a" * 300
    routes = {
        "/": lambda h, n: links(
            long_path,
            "/short",
            "mailto:x@y.invalid",
            "javascript:alert(1)",
            "tel:123",
            "data:,x",
            "ftp://127.0.0.1/f",
            "file:///etc/passwd",
        )
    }
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl(server.url + "/", tmp_path, "--max-url-length", "200")
        assert set(server.log.counts()) == {"/", "/short"}
    assert records[""]["links"] == 1


# ------------------------------------------------------ content and encodings
def test_only_html_is_parsed(tmp_path: Path) -> None:
    routes = {
        "/": lambda h, n: links("/page.html", "/data.bin", "/no-type"),
        "/page.html": lambda h, n: (
            200,
            {"Content-Type": "application/octet-stream"},
            b'<a href="/hidden1">x</a>',
        ),
        "/data.bin": lambda h, n: (
            200,
            {"Content-Type": "application/xhtml+xml"},
            b'<html xmlns="http://www.w3.org/1999/xhtml"><body>'
            b'<a href="/from-xhtml">x</a></body></html>',
        ),
        "/no-type": lambda h, n: (200, {}, b'<a href="/hidden2">x</a>'),
    }
    with serve(routes, default=lambda h, n: links()) as server:
        # Every body read and every extension fetched: the analyzer's own rule.
        records = crawl(server.url + "/", tmp_path, "--accept-type", "*", "--reject-ext", "")
        fetched = set(server.log.counts())
    assert "/hidden1" not in fetched and "/hidden2" not in fetched
    assert "/from-xhtml" in fetched
    assert records["page.html"]["content_type"] == "application/octet-stream"
    assert records["page.html"]["bytes"] == 24 and records["page.html"]["links"] == 0


def test_encodings_titles_and_link_urls(tmp_path: Path) -> None:
    latin = "<title>Caf\u00e9 cr\u00e8me</title><a href='/men\u00fc'>m</a>"
    sjis = (
        "<html><head><meta http-equiv='Content-Type' content='text/html; charset=Shift_JIS'>"
        "<title>\u65e5\u672c\u8a9e\u30da\u30fc\u30b8</title></head>"
        "<body><a href='/\u6771\u4eac'>t</a></body></html>"
    )
    cyrillic = (
        "<title>\u041f\u0440\u0438\u0432\u0435\u0442</title><p>\u0422\u0435\u043a\u0441\u0442</p>"
    )
    broken = (
        "<HTML><BODY><A HREF=/b1>one<A HREF='/b2'>two<a href=\"\">self"
        "<a href=/b3#frag>three<p><table><tr><td><a href = /b4>four"
    )
    routes = {
        "/": lambda h, n: links(
            "/latin", "/sjis", "/broken", "/based", "/cyrillic", "/sixteen", "/bad-bytes"
        ),
        "/latin": lambda h, n: html(latin, charset="iso-8859-1", encoding="iso-8859-1"),
        "/sjis": lambda h, n: html(sjis, charset=None, encoding="shift_jis"),
        "/broken": lambda h, n: html(broken),
        "/based": lambda h, n: html("<base href='/sub/'><a href='leaf'>l</a>"),
        "/cyrillic": lambda h, n: html(cyrillic, charset="windows-1251", encoding="cp1251"),
        "/sixteen": lambda h, n: html("\ufeff" + cyrillic, charset=None, encoding="utf-16-le"),
        "/bad-bytes": lambda h, n: (
            200,
            {"Content-Type": "text/html; charset=utf-8"},
            b"<title>caf\xff\xfe ok</title><p>Bad \xc3( bytes in a paragraph of words</p>",
        ),
    }
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl(server.url + "/", tmp_path, "--extract")
        fetched = set(server.log.counts())
    for name in ("cyrillic", "sixteen"):
        assert records[name]["title"] == "\u041f\u0440\u0438\u0432\u0435\u0442", name
        assert records[name]["text"] == "\u0422\u0435\u043a\u0441\u0442", name
    assert records["bad-bytes"]["title"] == "caf\ufffd\ufffd ok"
    assert records["bad-bytes"]["text"] == "Bad \ufffd( bytes in a paragraph of words"
    assert records["latin"]["title"] == "Caf\u00e9 cr\u00e8me"
    assert records["sjis"]["title"] == "\u65e5\u672c\u8a9e\u30da\u30fc\u30b8"
    assert "/men%C3%BC" in fetched
    assert "/%E6%9D%B1%E4%BA%AC" in fetched
    assert {"/b1", "/b2", "/b3", "/b4"} <= fetched
    assert "/sub/leaf" in fetched


# -------------------------------------------------------------------- traps
def test_traps_are_contained(tmp_path: Path) -> None:
    def calendar(h: Handler, n: int) -> Reply:
        if h.path.startswith("/session"):  # a new session id on every visit
            return links(f"/session?id={time.monotonic_ns()}")
        day = int(h.path.rsplit("/", 1)[1])
        return links(f"/cal/{day + 1}", f"/cal/{day + 2}", f"/session?id={day}x{time.time()}")

    with serve({"/": lambda h, n: links("/cal/0")}, default=calendar) as server:
        records = crawl(server.url + "/", tmp_path, "--max-pages-per-host", "25")
        assert len(server.log.hits) <= 25
    assert 20 <= len(records) <= 25

    with serve({"/": lambda h, n: links("/cal/0")}, default=calendar) as server:
        records = crawl(server.url + "/", tmp_path / "depth", "--max-depth", "4")
        assert max(r["depth"] for r in records.values()) == 4
        assert len(server.log.hits) == len(records)


def test_a_frameset_sites_frames_are_crawled_as_its_pages(tmp_path: Path) -> None:
    """A site of frames (wget -r follows them): the frameset's frames and an
    iframe are pages of the crawl, and their links are followed; with
    --page-requisites they are embeds instead."""
    frameset = (
        "<html><head><title>Frames</title></head><frameset cols='30%,70%'>"
        "<frame src='/menu'><frame src='/content'><noframes>No frames here.</noframes>"
        "</frameset></html>"
    )
    routes = {
        "/": lambda h, n: html(frameset),
        "/menu": lambda h, n: links("/chapter", title="menu"),
        "/content": lambda h, n: html("<body><p>Welcome.</p><iframe src='/inner'></iframe></body>"),
        "/inner": lambda h, n: links(title="inner"),
        "/chapter": lambda h, n: links(title="chapter"),
    }
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl(server.url + "/", tmp_path, "--extract")
        counts = server.log.counts()
    assert set(records) == {"", "menu", "content", "inner", "chapter"}
    assert all(not r.get("kind") for r in records.values())  # pages, not embeds
    assert records[""]["title"] == "Frames" and records[""]["text"] == ""
    assert all(n == 1 for path, n in counts.items() if path != "/robots.txt"), counts
