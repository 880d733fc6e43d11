"""robots.txt and per-host limits, checked from the servers' own request logs."""

from __future__ import annotations

import itertools
from pathlib import Path

from conftest import crawl_records
from hostile import html, in_groups, links, serve, slow

ROBOTS = """
User-agent: *
Disallow: /

User-agent: MPCrawler
Disallow: /a
Allow: /a/b
Disallow: /tie
Allow: /tie
Disallow: /*.pdf$
"""


def crawl(url: str, tmp_path: Path, *extra: str) -> list[dict]:  # type: ignore[type-arg]
    return crawl_records(url, tmp_path / "job", "--timeout", "5", *extra)


def test_robots_rfc9309(tmp_path: Path) -> None:
    routes = {
        "/robots.txt": lambda h, n: (200, {"Content-Type": "text/plain"}, ROBOTS.encode()),
        "/": lambda h, n: links(
            "/a", "/a/b", "/a/b/c", "/ab", "/tie", "/x", "/doc.pdf", "/doc.pdf?v=1"
        ),
    }
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl(server.url + "/", tmp_path)
        log = server.log
    fetched = set(log.counts())
    assert log.paths()[0] == "/robots.txt" and log.counts()["/robots.txt"] == 1
    # Our group (matched case-insensitively) replaces "*"; the longest rule
    # wins; allow wins a tie; $ anchors.
    assert fetched == {"/robots.txt", "/", "/a/b", "/a/b/c", "/tie", "/x", "/doc.pdf?v=1"}
    refused = {r["url"].rsplit(":", 1)[1].split("/", 1)[1] for r in records if r["error"]}
    assert refused == {"a", "ab", "doc.pdf"}
    assert all(r["error"] == "disallowed by robots.txt" for r in records if r["error"])


def test_robots_4xx_allows_everything(tmp_path: Path) -> None:
    routes = {"/robots.txt": lambda h, n: html("gone", status=410), "/": lambda h, n: links("/p")}
    with serve(routes, default=lambda h, n: links()) as server:
        crawl(server.url + "/", tmp_path)
        assert set(server.log.counts()) == {"/robots.txt", "/", "/p"}


def test_robots_5xx_disallows_then_retries(tmp_path: Path) -> None:
    def robots(handler: object, n: int) -> tuple[int, dict[str, str], bytes]:
        if n < 2:
            return 503, {"Content-Type": "text/plain"}, b"busy"
        return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /no\n"

    routes = {"/robots.txt": robots, "/": lambda h, n: links("/yes", "/no")}
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl(server.url + "/", tmp_path, "--robots-retry-delay", "0.1")
        paths = server.log.paths()
    assert paths[:3] == ["/robots.txt"] * 3  # nothing else before robots.txt answered
    assert set(paths) == {"/robots.txt", "/", "/yes"}
    assert len(records) == 3


def test_robots_that_keeps_failing_gives_the_host_up(tmp_path: Path) -> None:
    routes = {"/robots.txt": lambda h, n: html("down", status=500)}
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl(server.url + "/", tmp_path, "--robots-retry-delay", "0.05")
        assert server.log.paths() == ["/robots.txt"] * 3
    [record] = records
    assert record["error"] == "robots.txt unavailable" and record["status"] is None


def test_no_robots_flag(tmp_path: Path) -> None:
    routes = {"/robots.txt": lambda h, n: (200, {}, b"User-agent: *\nDisallow: /\n")}
    with serve(routes, default=lambda h, n: links("/p")) as server:
        crawl(server.url + "/", tmp_path, "--no-robots")
        assert set(server.log.counts()) == {"/", "/p"}


def test_delay_spaces_request_starts(tmp_path: Path) -> None:
    hrefs = [f"/p{i}" for i in range(6)]
    with serve({"/": lambda h, n: links(*hrefs)}, default=lambda h, n: links()) as server:
        crawl(server.url + "/", tmp_path, "--delay", "0.25", "--no-robots")
        starts = sorted(h.start for h in server.log.hits)
    assert len(starts) == 7
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.24, gaps


def test_host_concurrency_limit(tmp_path: Path) -> None:
    hrefs = [f"/p{i}" for i in range(12)]
    routes = {"/": lambda h, n: links(*hrefs)}
    with serve(routes, default=in_groups(links(), size=2, total=12)) as server:
        crawl(
            server.url + "/",
            tmp_path,
            "--host-concurrency",
            "2",
            "--no-robots",
            "--workers",
            "2",
            "--threads",
            "4",
        )
        assert server.log.max_open == 2
        assert len(server.log.hits) == 13


def test_crawl_delay_is_one_at_a_time_and_other_hosts_keep_going(tmp_path: Path) -> None:
    slow_robots = b"User-agent: *\nCrawl-delay: 0.5\n"
    hrefs_b = [f"/b{i}" for i in range(30)]
    with serve(
        {"/robots.txt": lambda h, n: (200, {}, b"")},
        default=lambda h, n: links(*hrefs_b),
        host="127.0.0.3",
    ) as fast:
        routes_a = {
            "/robots.txt": lambda h, n: (200, {}, slow_robots),
            "/": lambda h, n: links(*(f"/a{i}" for i in range(4)), fast.url + "/"),
        }
        with serve(routes_a, default=slow(0.05, links())) as polite:
            crawl(
                polite.url + "/", tmp_path, "--allow-domain", "127.0.0.3", "--host-concurrency", "4"
            )
            a_hits = [h for h in polite.log.hits if h.path != "/robots.txt"]
            b_hits = [h for h in fast.log.hits if h.path != "/robots.txt"]
            a_max_open = polite.log.max_open
    assert len(a_hits) == 5 and len(b_hits) == 31
    starts = sorted(h.start for h in a_hits)
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 0.49
    assert a_max_open == 1
    # While host A waits out its Crawl-delay, host B is crawled to the end.
    assert max(h.end for h in b_hits) < starts[-1]
