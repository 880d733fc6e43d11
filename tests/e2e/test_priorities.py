"""The host-aware frontier end to end, seen from the servers' side: a slow
host does not starve a fast one, URLs are fetched in priority order, and
priorities survive spills, a SIGKILL plus resume and a worker crash."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import support
from hostile import Server, html, links, serve
from support import Lines, read_records, run_cli, start_cli

TREE = 300  # pages of the fast host's tree
SLOW_LINKS = 3000  # links to the slow host, ahead of the tree
SLOW_CLOCK = 10  # the slow host's pages (one a second) the tree must end within


def tree_page(handler: Any, n: int) -> Any:
    """/t/i links to /t/2i+1 and /t/2i+2, below TREE; 5 ms of server time."""
    i = int(handler.path.rsplit("/", 1)[1])
    time.sleep(0.005)
    return links(*(f"/t/{c}" for c in (2 * i + 1, 2 * i + 2) if c < TREE))


def tree_hits(server: Server) -> list[float]:
    return sorted(h.start for h in server.log.hits if h.path.startswith("/t/"))


def wait_until(condition: Any, proc: subprocess.Popen[str], lines: Lines, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, lines.err
        assert time.monotonic() < deadline, f"not within {timeout} s: {''.join(lines.err)[-500:]}"
        time.sleep(0.01)


def crawl_args(url: str, job: Path, *extra: str) -> list[str]:
    return support.crawl_args(url, job, "--allow-private-networks", *extra)


def test_a_crawl_delay_host_does_not_starve_another(tmp_path: Path) -> None:
    """3,000 URLs of a Crawl-delay: 1 host, found first, then a 300-page tree
    on the seed's host: the whole tree is fetched while the slow host serves
    its first few pages, and the slow host is still hit at most once a second.

    The slow host's own pages are the clock: starved, the tree would wait
    behind its 3,000 URLs, a second each; served beside it, the tree (a
    second or two of work, three seen under the whole suite's load) ends
    before the slow host's SLOW_CLOCK-th page."""
    with serve(
        {"/robots.txt": lambda h, n: (200, {}, b"User-agent: *\nCrawl-delay: 1\n")},
        default=lambda h, n: links(),
        host="127.0.0.2",
    ) as slow:
        slow_links = [f"{slow.url}/a{i}" for i in range(SLOW_LINKS)]
        mixed_routes = {
            "/robots.txt": lambda h, n: (200, {}, b""),
            "/": lambda h, n: links(*slow_links, "/t/0"),
        }
        with serve(mixed_routes, default=tree_page) as fast:
            args = crawl_args(fast.url + "/", tmp_path / "mixed", "--allow-domain", "127.0.0.2")
            proc = start_cli(*args)
            lines = Lines(proc)
            try:
                slow_pages = lambda: [h for h in slow.log.hits if h.path != "/robots.txt"]  # noqa: E731
                wait_until(lambda: len(tree_hits(fast)) >= TREE, proc, lines, 60)
                tree_done = tree_hits(fast)[-1]
                wait_until(lambda: len(slow_pages()) >= 3, proc, lines, 30)
                slow_starts = [h.start for h in slow_pages()]
            finally:
                proc.send_signal(signal.SIGINT)
                lines.finish(timeout=60)
    assert len(tree_hits(fast)) == TREE
    before_tree_done = [t for t in slow_starts if t < tree_done]
    assert len(before_tree_done) < SLOW_CLOCK, (len(before_tree_done), slow_starts[:SLOW_CLOCK])
    gaps = [b - a for a, b in itertools.pairwise(slow_starts)]
    assert min(gaps) >= 0.95, gaps  # Crawl-delay: 1 still holds
    print(f"tree done after the slow host's page {len(before_tree_done)}; slow gaps {gaps}")


def page_order(server: Server) -> list[str]:
    return [h.path for h in server.log.hits if h.path != "/robots.txt"]


def one_slot(*extra: str) -> list[str]:
    return ["--workers", "1", "--threads", "1", "--cache-size", "5", "--no-robots", *extra]


def test_seed_file_priorities_set_the_fetch_order_across_hosts(tmp_path: Path) -> None:
    """One download slot and a 5-URL cache: the seeds (on three hosts, some
    with a TAB and a priority) are fetched highest priority first, in file
    order among equals."""
    servers = [
        serve({}, default=lambda h, n: html("<title>x</title>"), host=f"127.0.0.{i}")
        for i in (1, 2, 3)
    ]
    with servers[0] as a, servers[1] as b, servers[2] as c:
        hosts = [a, b, c]
        seeds: list[tuple[str, int | None]] = []
        for i in range(30):
            priority = [None, 3, -1, 7, 0, 3][i % 6]
            seeds.append((f"{hosts[i % 3].url}/s{i}", priority))
        lines = [url if p is None else f"{url}\t{p}" for url, p in seeds]
        seeds_file = tmp_path / "seeds.txt"
        seeds_file.write_text("# seeds\n" + "\n".join(lines) + "\n", encoding="utf-8")
        job = tmp_path / "job"
        proc = run_cli(
            "crawl",
            "--seeds-file",
            str(seeds_file),
            "--job-dir",
            str(job),
            "--quiet",
            "--allow-private-networks",
            *one_slot(),
        )
        assert proc.returncode == 0, proc.stderr
        fetched = sorted(
            (h.start, f"{server.url}{h.path}") for server in hosts for h in server.log.hits
        )
    expected = [
        url for _, _, url in sorted((-(p or 0), i, url) for i, (url, p) in enumerate(seeds))
    ]
    got = [url for _, url in fetched]
    assert got == expected
    records = {r["url"]: r["priority"] for r in read_records(job / "pages.jsonl")}
    assert records == {url: p or 0 for url, p in seeds}


def priority_site(count: int) -> dict[str, Any]:
    """A seed page whose links carry ``p=`` priorities (PriorityAnalyzer)."""
    children = [f"/c{i}?p={(i * 7) % 5 - 2}" for i in range(count)]
    return {"/": lambda h, n: links(*children)}, children


def expected_children(children: list[str]) -> list[str]:
    keyed = sorted((-int(c.rsplit("=", 1)[1]), i, c) for i, c in enumerate(children))
    return [c for _, _, c in keyed]


def test_analyzer_priorities_set_the_fetch_order_through_spills(tmp_path: Path) -> None:
    routes, children = priority_site(40)
    with serve(routes, default=lambda h, n: html("<title>leaf</title>")) as server:
        job = tmp_path / "job"
        proc = run_cli(
            *crawl_args(server.url + "/", job, *one_slot("--analyzer", "plugins:PriorityAnalyzer"))
        )
        assert proc.returncode == 0, proc.stderr
        order = page_order(server)
    assert order == ["/", *expected_children(children)]
    records = {r["url"].rsplit("/", 1)[1]: r["priority"] for r in read_records(job / "pages.jsonl")}
    assert records[""] == 0
    assert all(records[c[1:]] == int(c.rsplit("=", 1)[1]) for c in children)


def test_depth_priority_subtracts_from_the_links_priority(tmp_path: Path) -> None:
    """--depth-priority 3: a link found at depth d gets its own priority - 3d."""
    routes = {"/": lambda h, n: links("/d1?p=2"), "/d1?p=2": lambda h, n: links("/d2?p=1")}
    with serve(routes, default=lambda h, n: html("<title>leaf</title>")) as server:
        job = tmp_path / "job"
        proc = run_cli(
            *crawl_args(
                server.url + "/",
                job,
                "--depth-priority",
                "3",
                "--analyzer",
                "plugins:PriorityAnalyzer",
            )
        )
        assert proc.returncode == 0, proc.stderr
    records = {r["url"].rsplit("/", 1)[1]: r["priority"] for r in read_records(job / "pages.jsonl")}
    assert records == {"": 0, "d1?p=2": 2 - 3, "d2?p=1": 1 - 6}


def test_priorities_survive_sigkill_and_resume(tmp_path: Path) -> None:
    """Killed (everything, SIGKILL) in the middle of a crawl whose URLs have
    priorities and spill: the resumed crawl goes on in the same order, and
    every record has its URL's priority."""
    routes, children = priority_site(60)

    def leaf(handler: Any, n: int) -> Any:
        time.sleep(0.02)
        return html("<title>leaf</title>")

    with serve(routes, default=leaf) as server:
        job = tmp_path / "job"
        args = crawl_args(
            server.url + "/",
            job,
            *one_slot("--analyzer", "plugins:PriorityAnalyzer"),
        )
        proc = start_cli(*args)
        lines = Lines(proc)
        wait_until(lambda: len(page_order(server)) >= 25, proc, lines, 60)
        os.killpg(proc.pid, signal.SIGKILL)
        lines.finish(timeout=30)
        again = run_cli(*args)
        assert again.returncode == 0, again.stderr
        order = page_order(server)
    first_fetches = list(dict.fromkeys(order))
    assert first_fetches == ["/", *expected_children(children)]
    assert len(order) - len(first_fetches) <= 2  # at most what was in flight
    by_url: dict[str, set[int]] = {}
    for r in read_records(job / "pages.jsonl"):
        by_url.setdefault(r["url"].rsplit("/", 1)[1], set()).add(r["priority"])
    assert all(by_url[c[1:]] == {int(c.rsplit("=", 1)[1])} for c in children)


def test_a_request_lost_with_its_worker_keeps_its_priority(tmp_path: Path) -> None:
    """The worker dies parsing the best URL; it is fetched again (ahead of
    the frontier's URLs of its host) and recorded with its priority."""
    routes = {"/": lambda h, n: links("/a?p=1", "/crash?p=9", "/b?p=5")}
    with serve(routes, default=lambda h, n: html("<title>leaf</title>")) as server:
        job = tmp_path / "job"
        marker = tmp_path / "crashed"
        args = crawl_args(
            server.url + "/", job, *one_slot("--analyzer", "plugins:CrashOnceAnalyzer")
        )
        proc = start_cli(*args, env={"MPCRAWLER_TEST_CRASHED": str(marker)})
        Lines(proc).finish(timeout=90)
        assert proc.returncode == 0
        assert marker.exists()
        order = page_order(server)
    # The slot frees when a download ends, so /b and even /a may be fetched
    # before the crash is noticed; the crashed one is fetched again.
    assert order[:2] == ["/", "/crash?p=9"] and order.count("/crash?p=9") == 2
    assert set(order) == {"/", "/crash?p=9", "/b?p=5", "/a?p=1"}
    records = {r["url"].rsplit("/", 1)[1]: r for r in read_records(job / "pages.jsonl")}
    assert records["crash?p=9"]["status"] == 200 and records["crash?p=9"]["priority"] == 9
    assert [records[k]["priority"] for k in ("a?p=1", "b?p=5")] == [1, 5]
    assert len(read_records(job / "pages.jsonl")) == 4  # one record each
