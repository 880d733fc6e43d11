"""Choosing what to crawl, seen from the server's side: URL and type
filters, query clean-up, what pages ask of robots, the rejected log,
request options, config files and check-url (issue 25)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from hostile import Handler, Reply, html, links, redirect, serve
from support import crawl_args, crawl_records, read_records, run_cli

SITEMAP = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    "<url><loc>{base}/docs/s1</loc></url><url><loc>{base}/search/s2</loc></url>"
    "</urlset>"
)


def robots_with_sitemap(handler: Handler, n: int) -> Reply:
    base = handler.server.url
    return 200, {"Content-Type": "text/plain"}, f"User-agent: *\nSitemap: {base}/sm.xml\n".encode()


def sitemap(handler: Handler, n: int) -> Reply:
    body = SITEMAP.format(base=handler.server.url).encode()
    return 200, {"Content-Type": "application/xml"}, body


def stats(job: Path) -> dict[str, Any]:
    return json.loads((job / "stats.json").read_text(encoding="utf-8"))


def test_reject_regex_holds_for_links_redirects_and_sitemaps(tmp_path: Path) -> None:
    routes = {
        "/robots.txt": robots_with_sitemap,
        "/sm.xml": sitemap,
        "/": lambda h, n: links("/docs/a", "/search?q=1", "/other/x", "/r"),
        "/r": lambda h, n: redirect("/search/r2"),
    }
    log = tmp_path / "rejected.jsonl"
    with serve(routes, default=lambda h, n: links()) as server:
        job = tmp_path / "job"
        records = crawl_records(
            server.url + "/", job, "--reject-regex", "/search", "--rejected-log", str(log)
        )
        counts = server.log.counts()
    assert counts["/search?q=1"] == counts["/search/r2"] == counts["/search/s2"] == 0
    assert counts["/docs/a"] == counts["/r"] == counts["/docs/s1"] == counts["/other/x"] == 1
    [hop] = [r for r in records if r["url"].endswith("/r")]
    assert hop["error"] == "redirect not followed: refused by reject_regex"
    assert stats(job)["links_dropped"]["reject_regex"] == 3
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert {
        (line["url"][len(server.url) :], line["rule"], line["from"][len(server.url) :])
        for line in lines
    } == {
        ("/search?q=1", "reject_regex", "/"),
        ("/search/r2", "reject_regex", "/r"),
        ("/search/s2", "reject_regex", "/sm.xml"),
    }


def test_accept_regex_keeps_only_what_it_finds(tmp_path: Path) -> None:
    routes = {"/": lambda h, n: links("/docs/a", "/blog/b", "/docs/c")}
    with serve(routes, default=lambda h, n: links("/docs/deeper", "/blog/more")) as server:
        job = tmp_path / "job"
        crawl_records(server.url + "/", job, "--accept-regex", r":\d+/(docs/.*)?$")
        counts = server.log.counts()
    assert counts["/docs/a"] == counts["/docs/c"] == counts["/docs/deeper"] == 1
    assert counts["/blog/b"] == counts["/blog/more"] == 0
    assert stats(job)["links_dropped"]["accept_regex"] == 2


def test_a_rejected_seed_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli(
        *crawl_args("http://127.0.0.1:9/search", tmp_path / "job", "--reject-regex", "search")
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("is refused by --reject-regex")
    assert not (tmp_path / "job").exists()


EXTENSION_LINKS = ("/f.pdf", "/img.JPG", "/data.zip?x=1", "/ok.html", "/plain")


def test_extensions_are_skipped_by_default_and_not_with_warc(tmp_path: Path) -> None:
    routes = {"/": lambda h, n: links(*EXTENSION_LINKS)}
    with serve(routes, default=lambda h, n: html("<title>x</title>")) as server:
        job = tmp_path / "job"
        crawl_records(server.url + "/", job)
        default = server.log.counts()
        crawl_records(server.url + "/", tmp_path / "own", "--reject-ext", "html,PDF")
        own = server.log.counts() - default
        crawl_records(server.url + "/", tmp_path / "warc", "--warc", str(tmp_path / "w"))
        archived = server.log.counts() - default - own
    assert [default[p] for p in EXTENSION_LINKS] == [0, 0, 0, 1, 1]
    assert stats(job)["links_dropped"]["reject_ext"] == 3
    assert [own[p] for p in EXTENSION_LINKS] == [0, 1, 1, 0, 1]
    assert [archived[p] for p in EXTENSION_LINKS] == [1, 1, 1, 1, 1]


def big_video(handler: Handler, n: int) -> Reply:
    # A small send buffer, so what the socket takes is what the client read.
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 * 1024)
    size = 50 * 1024 * 1024
    chunk = b"\0" * 65536
    body = (chunk for _ in range(size // len(chunk)))
    return 200, {"Content-Type": "video/mp4", "Content-Length": str(size)}, body


def test_a_type_not_accepted_is_closed_after_its_headers(tmp_path: Path) -> None:
    routes = {"/": lambda h, n: links("/video"), "/video": big_video}
    with serve(routes) as server:
        [_, video] = sorted(
            crawl_records(server.url + "/", tmp_path / "job"), key=lambda r: r["url"]
        )
        [hit] = [h for h in server.log.hits if h.path == "/video"]
        assert hit.done.wait(30), "the server is still sending the video"
    assert video["status"] == 200 and video["content_type"] == "video/mp4"
    assert video["bytes"] == 0 and video["error"] is None
    assert video["skipped"] == "content type video/mp4 not accepted (--accept-type)"
    assert hit.sent < 1024 * 1024, hit.sent


SID = "0123456789ABCDEF0123456789ABCDEF"
VARIANTS = (
    "/p?utm_source=a",
    "/p?utm_source=b&utm_medium=c",
    f"/p;jsessionid={SID}",
    f"/p?PHPSESSID={SID}",
    f"/p?sid={SID.lower()}",
    "/p",
)


def test_tracking_and_session_id_variants_are_one_fetch(tmp_path: Path) -> None:
    routes = {"/": lambda h, n: links(*VARIANTS, "/q?b=2&a=1", "/q?a=1&b=2&gclid=x")}
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl_records(
            server.url + "/", tmp_path / "job", "--strip-query", "utm_*,gclid", "--sort-query"
        )
        paths = server.log.paths()
    assert [p for p in paths if p.startswith("/p")] == ["/p"]
    assert [p for p in paths if p.startswith("/q")] == ["/q?a=1&b=2"]
    assert len(records) == 3


def test_keep_session_ids_keeps_them(tmp_path: Path) -> None:
    routes = {"/": lambda h, n: links(*VARIANTS)}
    with serve(routes, default=lambda h, n: links()) as server:
        crawl_records(server.url + "/", tmp_path / "job", "--keep-session-ids")
        paths = server.log.paths()
    assert sorted(p for p in paths if p.startswith("/p")) == sorted(
        ["/p", "/p?utm_source=a", "/p?utm_source=b&utm_medium=c", *VARIANTS[2:5]]
    )


def robots_page(path: str, meta: str, rel: str, header: str | None) -> Any:
    """A page whose one link is ``path``-child, saying ``meta`` (name=content),
    with ``rel`` on its link and ``header`` as its X-Robots-Tag."""
    name, _, content = meta.partition("=")
    tag = f'<meta name="{name}" content="{content}">' if meta else ""
    body = (
        f'<html><head><title>t</title>{tag}<link rel="canonical" href="/canon"></head>'
        f'<body><a href="{path}-child" {rel}>x</a></body></html>'
    )

    def route(handler: Handler, n: int) -> Reply:
        status, headers, data = html(body)
        if header is not None:
            headers["X-Robots-Tag"] = header
        return status, headers, data

    return route


PAGES = {  # path: (meta, rel, X-Robots-Tag, its link followed)
    "/meta-nofollow": ("robots=nofollow", "", None, False),
    "/meta-none": ("robots=NONE", "", None, False),
    "/ours-nofollow": ("mpcrawler=nofollow", "", None, False),
    "/theirs-nofollow": ("otherbot=nofollow", "", None, True),
    "/header-nofollow": ("", "", "nofollow", False),
    "/header-other": ("", "", "otherbot: nofollow", True),
    "/header-ours": ("", "", "otherbot: noindex, mpcrawler: nofollow", False),
    "/rel-nofollow": ("", 'rel="external nofollow"', None, False),
    "/noindex": ("robots=noindex", "", None, True),
}


def _robots_site() -> dict[str, Any]:
    routes: dict[str, Any] = {"/": lambda h, n: links(*PAGES)}
    for path, (meta, rel, header, _) in PAGES.items():
        routes[path] = robots_page(path, meta, rel, header)
    return routes


def test_what_pages_ask_of_robots_is_obeyed(tmp_path: Path) -> None:
    with serve(_robots_site(), default=lambda h, n: html("<title>leaf</title>")) as server:
        records = crawl_records(server.url + "/", tmp_path / "job")
        counts = server.log.counts()
        followed = {path: counts[path + "-child"] for path in PAGES}
        ignored = crawl_records(server.url + "/", tmp_path / "all", "--ignore-nofollow")
        again = server.log.counts() - counts
    assert followed == {path: int(follows) for path, (_, _, _, follows) in PAGES.items()}
    assert all(again[path + "-child"] == 1 for path in PAGES)
    by_path = {r["url"][len(server.url) :]: r for r in records}
    assert by_path["/noindex"]["robots_meta"] == ["noindex"]
    assert by_path["/noindex"]["title"] is None and by_path["/meta-nofollow"]["title"] == "t"
    assert by_path["/meta-none"]["robots_meta"] == ["nofollow", "noindex"]
    assert by_path["/header-ours"]["robots_meta"] == ["nofollow"]
    assert by_path["/rel-nofollow"]["canonical"] == server.url + "/canon"
    assert "robots_meta" not in by_path["/rel-nofollow"]
    assert counts["/canon"] == 0  # recorded, not followed
    assert len(ignored) == len(records) + 6


def test_headers_cookies_and_their_secrets(tmp_path: Path) -> None:
    cookies = tmp_path / "cookies.txt"
    cookies.write_text(
        "# Netscape HTTP Cookie File\n"
        "127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tc00kie-secret\n"
        "127.0.0.1\tFALSE\t/private\tFALSE\t0\tnarrow\tonly-there\n"
        "127.0.0.1\tFALSE\t/\tFALSE\t1\told\texpired\n",
        encoding="utf-8",
    )
    routes = {"/": lambda h, n: links("/a")}
    with serve(routes, default=lambda h, n: links()) as server:
        job = tmp_path / "job"
        crawl_records(
            server.url + "/",
            job,
            "--header",
            "X-Test: one",
            "--header",
            "Authorization: Bearer t0ken-secret",
            "--cookies",
            str(cookies),
            "--log-file",
            str(tmp_path / "log"),
        )
        hits = [h for h in server.log.hits if h.path == "/a"]
    [hit] = hits
    assert hit.headers["x-test"] == "one"
    assert hit.headers["authorization"] == "Bearer t0ken-secret"
    assert hit.headers["cookie"] == "session=c00kie-secret"
    for path in (job / "job.json", job / "stats.json", job / "pages.jsonl", tmp_path / "log"):
        text = path.read_text(encoding="utf-8")
        assert "t0ken-secret" not in text and "c00kie-secret" not in text, path


def _proxied(handler: Handler, n: int) -> Reply:
    """A forward HTTP proxy's route: the absolute URL asked, fetched."""
    import http.client
    from urllib.parse import urlsplit

    target = urlsplit(handler.path)
    connection = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
    try:
        connection.request("GET", target.path or "/", headers={"Host": target.netloc})
        answer = connection.getresponse()
        body = answer.read()
        return answer.status, {"Content-Type": answer.getheader("Content-Type", "")}, body
    finally:
        connection.close()


def test_requests_go_through_the_proxy(tmp_path: Path) -> None:
    with serve({"/": lambda h, n: links("/a")}, default=lambda h, n: links()) as site:
        with serve({}, default=_proxied) as proxy:
            crawl_records(site.url + "/", tmp_path / "job", "--proxy", proxy.url, "--no-robots")
            asked = proxy.log.paths()
        served = site.log.paths()
    assert sorted(asked) == [site.url + "/", site.url + "/a"]
    assert sorted(served) == ["/", "/a"]


def test_a_config_file_is_overridden_by_the_command_line(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    routes = {"/": lambda h, n: links("/a", "/b", "/c", "/skip")}
    with serve(routes, default=lambda h, n: links()) as server:
        config.write_text(
            f'seeds = ["{server.url}/"]\n'
            "max-pages = 1\n"
            'reject-regex = ["/skip", "/c"]\n'
            "workers = 1\n"
            "no-robots = true\n",
            encoding="utf-8",
        )
        job = tmp_path / "job"
        proc = run_cli(
            "crawl",
            "--config",
            str(config),
            "--job-dir",
            str(job),
            "--quiet",
            "--max-pages",
            "10",
            "--reject-regex",
            "/skip",
        )
        assert proc.returncode == 0, proc.stderr
        counts = server.log.counts()
    assert counts["/robots.txt"] == 0  # from the file
    assert counts["/c"] == 1 and counts["/skip"] == 0  # the command line's list, whole
    assert len(read_records(job / "pages.jsonl")) == 4  # --max-pages 10 over the file's 1
    printed = run_cli("crawl", "--config", str(config), "--print-config", "--max-pages", "7")
    assert printed.returncode == 0, printed.stderr
    assert "max-pages = 7\n" in printed.stdout and "robots = false\n" in printed.stdout
    again = tmp_path / "again.toml"
    again.write_text(printed.stdout, encoding="utf-8")
    assert run_cli("crawl", "--config", str(again), "--print-config").stdout == printed.stdout


def test_config_file_errors_are_usage_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    for text, message in [
        ("max-pages = [", "not valid TOML"),
        ("nope = 1", "unknown option 'nope'"),
        ('max-pages = "many"', "max-pages"),
        ("quiet = 1", "quiet must be true or false"),
    ]:
        bad.write_text(text, encoding="utf-8")
        proc = run_cli("crawl", "http://127.0.0.1:9/", "--config", str(bad))
        assert proc.returncode == 2 and message in proc.stderr, (text, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1


def test_check_url_names_the_rule_and_reads_the_jobs_robots(tmp_path: Path) -> None:
    def check(*args: str) -> tuple[int, list[str]]:
        proc = run_cli("check-url", *args)
        return proc.returncode, proc.stdout.splitlines()

    assert check("http://a.test/x?utm_source=1&b=2", "--strip-query", "utm_*") == (
        0,
        ["canonical  http://a.test/x?b=2", "verdict    crawled"],
    )
    code, lines = check("http://a.test/search", "--reject-regex", "/sea")
    assert (
        code == 1
        and lines[1] == "verdict    refused by reject_regex: --reject-regex '/sea' matches"
    )
    code, lines = check("http://b.test/", "http://a.test/")
    assert code == 1 and lines[1].startswith("verdict    refused by scope")
    code, lines = check("http://a.test/f.PDF")
    assert code == 1 and "refused by reject_ext" in lines[1]
    code, lines = check("mailto:x@y")
    assert code == 1 and lines == [
        "canonical  (none)",
        "verdict    refused by malformed: not an http(s) URL",
    ]
    routes = {
        "/robots.txt": lambda h, n: (
            200,
            {"Content-Type": "text/plain"},
            b"User-agent: *\nDisallow: /private\n",
        ),
        "/": lambda h, n: links(),
    }
    with serve(routes) as server:
        job = tmp_path / "job"
        crawl_records(server.url + "/", job)
    code, lines = check(server.url + "/private/x", "--job-dir", str(job))
    assert code == 1 and lines[1] == (
        "verdict    refused by robots: disallowed by robots.txt (as the crawl last read it)"
    )
    code, lines = check(server.url + "/open", "--job-dir", str(job))
    assert code == 0 and "allowed by robots.txt" in lines[1]


def test_the_query_clean_up_is_part_of_the_job(tmp_path: Path) -> None:
    with serve({"/": lambda h, n: links("/a?utm_x=1")}, default=lambda h, n: links()) as server:
        job = tmp_path / "job"
        first = run_cli(*crawl_args(server.url + "/", job, "--max-pages", "1"))
        assert first.returncode == 0, first.stderr
        changed = run_cli(*crawl_args(server.url + "/", job, "--strip-query", "utm_*"))
        assert changed.returncode == 2
        assert "strip-query=[], not ['utm_*']" in changed.stderr
        same = run_cli(*crawl_args(server.url + "/", job, "--max-pages", "2"))
        assert same.returncode == 0, same.stderr
        assert server.log.counts()["/a?utm_x=1"] == 1


EVIL = "/x/" + "a" * 32 + "!"  # (a+)+$ fails on it after 2**32 steps of Python's re
MATCHED = "/y/" + "a" * 32  # (a+)+$ matches it at once


def test_a_backtracking_pattern_never_hangs_a_crawl(tmp_path: Path) -> None:
    """A hostile URL aimed at a user pattern: matched in linear time by the
    worker (--reject-regex), the master (control exclude, with the URL
    queued) and check-url; every page is crawled, none lost to a hang."""
    pages = [f"/p{i}" for i in range(20)]
    routes = {"/": lambda h, n: links(EVIL, MATCHED, *pages)}
    wanted = {"/", EVIL, *pages}
    with serve(routes, default=lambda h, n: links(EVIL, "/")) as server:
        job = tmp_path / "job"
        proc = run_cli(
            *crawl_args(server.url + "/", job, "--no-robots", "--reject-regex", "(a+)+$"),
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        records = read_records(job / "pages.jsonl")
        assert {r["url"][len(server.url) :] for r in records} == wanted
        assert not any(r["error"] for r in records)
        assert server.log.counts()[MATCHED] == 0  # refused, not fetched
        for url, verdict in ((EVIL, 0), (MATCHED, 1)):
            checked = run_cli(
                *("check-url", server.url + url, "--reject-regex", "(a+)+$"),
                timeout=30,
            )
            assert checked.returncode == verdict, checked.stdout + checked.stderr
        assert "--reject-regex '(a+)+$' matches" in checked.stdout
        # The master drops what it has queued: with the URLs queued, exclude them.
        job2 = tmp_path / "job2"
        proc = run_cli(*crawl_args(server.url + "/", job2, "--no-robots", "--max-pages", "1"))
        assert proc.returncode == 0, proc.stderr
        assert run_cli("control", str(job2), "exclude", "(a+)+$").returncode == 0
        proc = run_cli(*crawl_args(server.url + "/", job2, "--no-robots"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert {r["url"][len(server.url) :] for r in read_records(job2 / "pages.jsonl")} == wanted


def test_a_pattern_the_linear_matcher_cannot_take_is_refused_at_once(tmp_path: Path) -> None:
    for args in (
        ("--reject-regex", r"(\w+)/\1"),
        ("--accept-regex", "(?=x)"),
    ):
        proc = run_cli("crawl", "http://127.0.0.1:9/", "--job-dir", str(tmp_path / "j"), *args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "matched in linear time (RE2)" in proc.stderr
        assert not (tmp_path / "j").exists()  # nothing written
    proc = run_cli("control", str(tmp_path), "exclude", "(?<!a)b")
    assert proc.returncode == 2 and "matched in linear time (RE2)" in proc.stderr


def test_paths_that_loop_or_keep_growing_end_instead_of_eating_the_budget(
    tmp_path: Path,
) -> None:
    """Two classic traps: a relative link that resolves under itself
    (/loop/a/ -> a/ -> /loop/a/a/ ...) and a part that answers any path with
    a page linking one level deeper.  The path_trap rule ends both; the
    budget goes to the real pages."""
    real = [f"/p{i}" for i in range(10)]

    def trap(handler: Handler, n: int) -> Reply:
        path = handler.path
        if path.startswith("/loop/"):
            return links("a/")
        if path.startswith("/grow"):
            return links(path.rstrip("/") + f"/{len(path)}")
        return links()

    routes = {"/": lambda h, n: links("/loop/a/", "/grow", *real)}
    with serve(routes, default=trap) as server:
        job = tmp_path / "job"
        records = crawl_records(server.url + "/", job, "--no-robots", "--max-pages", "200")
        paths = [r["url"][len(server.url) :] for r in records]
        checked = run_cli(
            "check-url", server.url + "/loop/a/a/a/", "--job-dir", str(job), "--no-robots"
        )
    assert set(real) <= set(paths)
    assert max(p.count("/a") for p in paths) == 2  # /loop/a/a/: twice, then refused
    assert max(p.count("/") for p in paths) == 20  # /grow/...: 20 segments, then refused
    assert len(records) == 1 + 10 + 2 + 20
    assert stats(job)["links_dropped"]["path_trap"] == 2
    assert checked.returncode == 1
    assert "refused by path_trap: the path repeats a/ more than 2 times" in checked.stdout


def test_a_cookie_the_site_sets_is_sent_back(tmp_path: Path) -> None:
    """As a browser (and Scrapy, and wget in one run): a Set-Cookie answer's
    cookie goes with the slot's next requests to that site, and only there."""
    routes = {
        "/": lambda h, n: html(
            "<a href='/a'>a</a><a href='/b'>b</a>", **{"Set-Cookie": "visit=seen-1; Path=/"}
        ),
        "/a": lambda h, n: links(),
        "/b": lambda h, n: html("", **{"Set-Cookie": "narrow=x; Path=/elsewhere"}),
    }
    with serve(routes, default=lambda h, n: links()) as server:
        crawl_records(
            server.url + "/", tmp_path / "job", "--workers", "1", "--threads", "1", "--no-robots"
        )
        hits = {h.path: h.headers.get("cookie") for h in server.log.hits}
    assert hits["/"] is None
    assert hits["/a"] == "visit=seen-1" and hits["/b"] == "visit=seen-1"
