"""robots.txt and per-host limits, checked from the servers' own request logs."""

from __future__ import annotations

import itertools
import json
import os
import signal
import time
from pathlib import Path

from hostile import Handler, Hit, Reply, html, in_groups, links, serve
from support import Lines, crawl_args, crawl_records, start_cli

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
        records = crawl(server.url + "/", tmp_path, "--reject-ext", "")  # /doc.pdf too
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
        records = crawl_records(  # exit 4: no page got an answer
            server.url + "/", tmp_path / "job", "--robots-retry-delay", "0.05", code=4
        )
        assert server.log.paths() == ["/robots.txt"] * 3
    [record] = records
    assert record["error"] == "robots.txt unavailable: HTTP 500" and record["status"] is None


def test_no_robots_flag(tmp_path: Path) -> None:
    routes = {"/robots.txt": lambda h, n: (200, {}, b"User-agent: *\nDisallow: /\n")}
    with serve(routes, default=lambda h, n: links("/p")) as server:
        crawl(server.url + "/", tmp_path, "--no-robots")
        assert set(server.log.counts()) == {"/", "/p"}


def test_delay_spaces_request_starts(tmp_path: Path) -> None:
    """One request at a time, --delay counts from the end of the previous
    one as the master saw it (after the server sent it), as wget --wait: so
    the server sees every request start at least the delay after the one
    before, with no allowance for the loopback's jitter.  (With more at a
    time the delay counts from the worker's start of the download, which
    the server sees a transit later: the scheduler's unit tests hold that.)"""
    hrefs = [f"/p{i}" for i in range(6)]
    with serve({"/": lambda h, n: links(*hrefs)}, default=lambda h, n: links()) as server:
        crawl(
            server.url + "/", tmp_path, "--delay", "0.25", "--no-robots", "--host-concurrency", "1"
        )
        starts = sorted(h.start for h in server.log.hits)
    assert len(starts) == 7
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.25, gaps


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


def test_crawl_delay_is_one_at_a_time_and_spaced(tmp_path: Path) -> None:
    robots = b"User-agent: *\nCrawl-delay: 0.5\n"
    routes = {
        "/robots.txt": lambda h, n: (200, {}, robots),
        "/": lambda h, n: links(*(f"/a{i}" for i in range(4))),
    }
    with serve(routes, default=lambda h, n: links()) as polite:
        crawl(polite.url + "/", tmp_path, "--host-concurrency", "4")
        hits = [h for h in polite.log.hits if h.path != "/robots.txt"]
        max_open = polite.log.max_open
    assert len(hits) == 5 and max_open == 1
    starts = sorted(h.start for h in hits)
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 0.49


def test_a_waiting_host_does_not_idle_the_others(tmp_path: Path) -> None:
    """Host A's Crawl-delay (30 s, the cap) holds its next page back; host B
    is crawled to the end meanwhile, and only then is the crawl stopped."""
    hrefs_b = [f"/b{i}" for i in range(30)]
    with serve(
        {"/robots.txt": lambda h, n: (200, {}, b"")},
        default=lambda h, n: links(*hrefs_b),
        host="127.0.0.3",
    ) as fast:
        routes_a = {
            "/robots.txt": lambda h, n: (200, {}, b"User-agent: *\nCrawl-delay: 60\n"),
            "/": lambda h, n: links(*(f"/a{i}" for i in range(4)), fast.url + "/"),
        }
        with serve(routes_a, default=lambda h, n: links()) as polite:
            proc = start_cli(
                "crawl",
                polite.url + "/",
                "--job-dir",
                str(tmp_path / "job"),
                "--allow-domain",
                "127.0.0.3",
                "--allow-private-networks",
                "--workers",
                "2",
                "--threads",
                "2",
                "--quiet",
            )
            lines = Lines(proc)
            try:
                deadline = time.monotonic() + 60
                while len([h for h in fast.log.hits if h.path != "/robots.txt"]) < 31:
                    assert proc.poll() is None and time.monotonic() < deadline, lines.err
                    time.sleep(0.01)
                a_pages = [h.path for h in polite.log.hits if h.path != "/robots.txt"]
            finally:
                proc.send_signal(signal.SIGINT)
                lines.finish(timeout=60)
    assert a_pages == ["/"]  # A waits out its delay while B's 31 pages are fetched
    assert proc.returncode == 130


def test_a_struggling_host_is_slowed_then_regains_its_pace(tmp_path: Path) -> None:
    """One 429 halves the host's rate (a request every 0.5 s); runs of good
    answers bring it back; the other host is never slowed."""
    a_pages = [f"/a{i}" for i in range(12)]
    with serve(
        {"/robots.txt": lambda h, n: (200, {}, b"")},
        default=lambda h, n: links(),
        host="127.0.0.3",
    ) as other:
        routes = {
            "/robots.txt": lambda h, n: (200, {}, b""),
            "/": lambda h, n: links(
                *a_pages, other.url + "/", *(f"{other.url}/b{i}" for i in range(8))
            ),
            "/a0": lambda h, n: html("slow down", status=429) if n == 0 else links(),
        }
        with serve(routes, default=lambda h, n: links()) as struggling:
            log = tmp_path / "crawl.log"
            crawl(
                struggling.url + "/",
                tmp_path,
                "--host-concurrency",
                "1",
                "--retry-delay",
                "0.05",
                "--allow-domain",
                "127.0.0.3",
                "--allow-private-networks",
                "--log-file",
                str(log),
            )
            hits = [h for h in struggling.log.hits if h.path != "/robots.txt"]
        assert len([h for h in other.log.hits if h.path != "/robots.txt"]) == 9
    [throttled] = [h for h in hits if h.path == "/a0"][:1]
    after = sorted(h.start for h in hits if h.start >= throttled.end)
    gaps = [b - a for a, b in itertools.pairwise(after)]
    assert min(gaps[:3]) >= 0.49, gaps  # paced from the 429 on, while it recovers
    text = log.read_text()
    name, other_name = struggling.server_address[0], other.server_address[0]  # the groups
    assert f"pace of {name}: a request every 0.50 s (HTTP 429)" in text
    assert f"pace of {name}: back to its own" in text
    assert f"pace of {other_name}" not in text
    stats = json.loads((tmp_path / "job" / "stats.json").read_text())
    assert stats["pace_changes"] == 3  # 0 -> 0.5 -> 0.25 -> its own


def test_one_moment_of_overload_slows_a_host_once(tmp_path: Path) -> None:
    """The host answers 429 (no Retry-After) to everything for 2 s while 8
    requests are in flight: their 8 answers are one event, one cut; only
    answers to requests sent after a cut cut again.  (Each answer used to
    halve the rate: 0.5 s to 60 s in one burst, then minutes of recovery.)"""
    overloaded: list[float] = []

    def route(handler: Handler, n: int) -> Reply:
        if handler.path == "/":
            return links(*(f"/p{i}" for i in range(60)))
        if not overloaded:
            overloaded.append(time.monotonic())
        if time.monotonic() - overloaded[0] < 2.0:
            return html("slow down", status=429)
        return links()

    with serve({"/robots.txt": lambda h, n: (404, {}, b"")}, default=route) as site:
        log = tmp_path / "crawl.log"
        crawl(site.url + "/", tmp_path, "--retries", "20", "--log-file", str(log))
        during = [
            h for h in site.log.hits if h.path.startswith("/p") and h.start < overloaded[0] + 2.0
        ]
    cuts = [line for line in log.read_text().splitlines() if "(HTTP 429)" in line]
    paces = [float(line.split("every ")[1].split(" s")[0]) for line in cuts]
    assert paces == [0.5 * 2**i for i in range(len(paces))], paces
    assert paces[-1] <= 2.0, paces  # not 60 s: one cut per moment, not per answer
    assert len(during) <= 30, len(during)
    records = [json.loads(line) for line in (tmp_path / "job" / "pages.jsonl").open()]
    assert len(records) == 61 and {r["status"] for r in records} == {200}


def wait_for(check, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return bool(check())


def test_a_continuous_crawl_reads_robots_txt_again_once_it_expires(tmp_path: Path) -> None:
    """--robots-ttl: a path robots.txt disallows mid-crawl gets no request
    once the copy has expired and been fetched again (one request at a time,
    so none can be on its way meanwhile)."""
    rules = ["User-agent: *\nDisallow: /never\n"]
    robots_hits: list[Hit] = []

    def robots(handler: Handler, n: int) -> Reply:
        robots_hits.append(handler.server.log.hits[-1])
        return 200, {"Content-Type": "text/plain"}, rules[0].encode()

    routes = {"/robots.txt": robots, "/": lambda h, n: links("/a", "/b")}
    with serve(routes, default=lambda h, n: links()) as server:
        job = tmp_path / "job"
        proc = start_cli(
            *crawl_args(server.url + "/", job, "--continuous", "--robots-ttl", "2s"),
            *("--revisit-after", "0.3s", "--revisit-min", "0.3s", "--revisit-max", "0.3s"),
            *("--host-concurrency", "1", "--workers", "1"),
        )
        output = Lines(proc)
        try:
            hits = server.log.hits
            assert wait_for(lambda: sum(h.path == "/b" for h in hits) >= 2, 30)
            rules[0] = "User-agent: *\nDisallow: /b\n"  # mid-crawl
            changed = len(robots_hits)
            assert wait_for(lambda: len(robots_hits) > changed, 30), "robots.txt not read again"
            refetched = robots_hits[changed]
            assert refetched.done.wait(10)
            # The crawl goes on (/a, /): stop once it has been revisited after the change.
            assert wait_for(
                lambda: sum(h.start > refetched.end and h.path == "/a" for h in hits) >= 3, 30
            )
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            output.finish(30)
    assert [h.path for h in hits if h.start > refetched.start and h.path == "/b"] == []
    gaps = [b.start - a.start for a, b in itertools.pairwise(robots_hits)]
    assert min(gaps) >= 2.0  # never before the TTL: fetched again after its answer + TTL
