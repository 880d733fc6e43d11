"""The whole crawler, end to end: the CLI in a subprocess against a real site.

Every assertion is made from the server's side (which paths it served, how
often) and from the records the crawler wrote.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hostile import links, serve
from support import crawl_records, read_records, run_cli

from mpcrawler.testing.site import SiteServer, TestSite


def page_hits(server: SiteServer) -> dict[str, int]:
    return {path: n for path, n in server.hits.items() if path != "/robots.txt"}


@pytest.mark.parametrize("workers", [1, 3])
def test_every_page_found_exactly_once(site_300: SiteServer, tmp_path: Path, workers: int) -> None:
    job = tmp_path / "job"
    proc = run_cli(
        "crawl",
        site_300.url,
        "--workers",
        str(workers),
        "--threads",
        "3",
        "--job-dir",
        str(job),
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    expected = set(site_300.site.paths())
    hits = page_hits(site_300)
    assert set(hits) == expected
    assert all(n == 1 for n in hits.values()), {p: n for p, n in hits.items() if n != 1}
    assert site_300.hits["/robots.txt"] == 1
    records = read_records(job / "pages.jsonl")
    assert len(records) == 300
    base = site_300.url.rstrip("/")
    assert {r["url"] for r in records} == {base + p for p in expected}
    assert all(r["status"] == 200 and r["error"] is None for r in records)
    assert all(
        r["title"] == f"Page {TestSite.page_index(site_300.site, r['url'][len(base) :])}"
        for r in records
    )
    # every page was discovered exactly once, so new links add up to all but the seed
    assert sum(r["new_links"] for r in records) == 299
    stats = json.loads((job / "stats.json").read_text())
    assert stats["pages"] == 300 and stats["errors"] == 0
    kinds = {m["type"] for m in stats["modules"]}
    assert {"HttpDownloader", "HtmlAnalyzer", "JsonLinesPipeline"} <= kinds
    downloads = sum(m["completed"] for m in stats["modules"] if m["type"] == "HttpDownloader")
    assert downloads == 301  # 300 pages and one robots.txt
    assert "pages" in proc.stdout and "pages/s" in proc.stdout


def test_record_fields(site_300: SiteServer, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    proc = run_cli(
        "crawl",
        site_300.url,
        "--workers",
        "1",
        "--max-pages",
        "5",
        "--out",
        str(out),
        "--job-dir",
        str(tmp_path / "job"),
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("output     " + str(out) + "\n")  # the summary ends its line
    assert "states     buffered=0 downloading=0 parsing=0\n" in proc.stdout
    record = read_records(out)[0]
    for key in (
        "url",
        "final_url",
        "status",
        "depth",
        "content_type",
        "bytes",
        "title",
        "links",
        "new_links",
        "elapsed_ms",
        "worker",
        "error",
    ):
        assert key in record
    assert record["depth"] == 0 and record["content_type"] == "text/html"
    assert record["bytes"] == 4_000
    assert record["worker"].startswith("D") and "|pid-" in record["worker"]


def test_lxml_analyzer_crawls_the_same_site(site_300: SiteServer, tmp_path: Path) -> None:
    """``--analyzer lxml`` finds the same pages, titles and links as bs4."""

    def pages(analyzer: str) -> set[tuple[str, str, int]]:
        records = crawl_records(site_300.url, tmp_path / analyzer, "--analyzer", analyzer)
        return {(r["url"], r["title"], r["links"]) for r in records}

    by_soup, by_lxml = pages("bs4"), pages("lxml")
    assert len(by_soup) == 300 and by_lxml == by_soup


@pytest.mark.parametrize("host_concurrency", ["8", "64"])
def test_master_waits_instead_of_spinning(
    site_300: SiteServer, tmp_path: Path, host_concurrency: str
) -> None:
    """More ready work than free slots is the normal state of a crawl: the
    master must then wait for a worker, not loop.  (A spinning master took
    about 30 turns a page here; a waiting one takes under 1.)"""
    job = tmp_path / "job"
    records = crawl_records(site_300.url, job, "--host-concurrency", host_concurrency)
    assert len(records) == 300
    master = json.loads((job / "stats.json").read_text())["processes"]["master"]
    assert master["loop_turns"] <= 5 * len(records), master
    # The master's CPU a page is a speed figure: benchmarks/bench_compare.py
    # measures it (a bound here failed under load on a slow machine).


def test_max_pages_is_exact(site_300: SiteServer, tmp_path: Path) -> None:
    records = crawl_records(site_300.url, tmp_path / "job", "--max-pages", "37")
    assert len(records) == 37
    assert sum(page_hits(site_300).values()) == 37


def test_max_depth(site_300: SiteServer, tmp_path: Path) -> None:
    records = crawl_records(site_300.url, tmp_path / "job", "--max-depth", "1")
    site = site_300.site
    depth1 = {TestSite.path(j) for j in site.links(0)} | {"/"}
    assert set(page_hits(site_300)) == depth1
    assert max(r["depth"] for r in records) == 1
    assert len(records) == len(depth1)


def test_offsite_links_never_fetched(make_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    home = make_site(TestSite(pages=60, size=2_000))
    # The site's off-site links point at 127.0.0.2 on the same port: listen there.
    offsite = make_site(TestSite(pages=60, size=2_000), host="127.0.0.2", port=home.port)
    proc = run_cli("crawl", home.url, "--workers", "2", "--job-dir", str(tmp_path / "j"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert sum(offsite.hits.values()) == 0
    assert len(page_hits(home)) == 60


def test_allow_domain_widens_scope(make_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    home = make_site(TestSite(pages=20, size=2_000))
    offsite = make_site(TestSite(pages=20, size=2_000), host="127.0.0.2", port=home.port)
    proc = run_cli(
        "crawl",
        home.url,
        "--workers",
        "1",
        "--job-dir",
        str(tmp_path / "j"),
        "--allow-domain",
        "127.0.0.2",
        "--allow-private-networks",  # 127.0.0.2 is no seed's address
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    # each /offsite/N path is a 404 there, fetched once
    assert offsite.hits and all(n == 1 for n in offsite.hits.values())
    assert {p for p in offsite.hits if p.startswith("/offsite/")}


def test_seeds_file(site_300: SiteServer, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"# a comment\n\n{site_300.url}page/5\n  {site_300.url}page/6  \n")
    job = tmp_path / "job"
    proc = run_cli(
        "crawl", "--seeds-file", str(seeds), "--max-depth", "0", "--job-dir", str(job), "--quiet"
    )
    assert proc.returncode == 0, proc.stderr
    assert set(page_hits(site_300)) == {"/page/5", "/page/6"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["crawl", "not a url"], "malformed seed URL"),
        (["crawl", "ftp://example.invalid/"], "malformed seed URL"),
        (["crawl", "http://127.0.0.1:9/", "--bogus"], "unrecognized arguments"),
        (["crawl", "--seeds-file", "/nonexistent/seeds.txt"], "cannot read seeds file"),
        (["crawl", "http://127.0.0.1:9/", "--out", "/proc/nope/out.jsonl"], "cannot write output"),
        (["crawl", "http://127.0.0.1:9/", "--workers", "0"], "must be at least 1"),
        (["crawl"], "no seed URLs"),
        (["crawl", "http://127.0.0.1:9/", "--analyzer", "nosuchmodule:Thing"], "cannot import"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert message in lines[0]
    assert not (tmp_path / "pages.jsonl").exists() or args[-1] == "--bogus"


def test_malformed_seeds_file_lines_reported(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1:9/\nnot a url\n# fine\nmailto:x@y\n")
    proc = run_cli("crawl", "--seeds-file", str(seeds))
    assert proc.returncode == 2
    assert "line(s) 2, 4" in proc.stderr


def test_an_unreachable_seed_is_a_record_and_the_crawl_exits_4(tmp_path: Path) -> None:
    job = tmp_path / "job"
    # port 9 (discard) on loopback: nothing listens, so the connection is refused
    proc = run_cli(
        "crawl",
        "http://127.0.0.1:9/",
        "--workers",
        "1",
        "--retries",
        "1",
        "--retry-delay",
        "0.05",
        "--no-robots",
        "--job-dir",
        str(job),
        "--quiet",
    )
    assert proc.returncode == 4, proc.stderr  # nothing got an answer: not a success
    assert proc.stderr.startswith("mpcrawler: error: no page could be fetched")
    [record] = read_records(job / "pages.jsonl")
    assert record["status"] is None and record["error_kind"] == "connection"
    assert record["attempts"] == 2


def test_record_links_gives_the_link_graph(tmp_path: Path) -> None:
    page = links("/b", "/a#top", "/b", "http://elsewhere.test/x", "mailto:x@y.test", "/a")
    with serve({"/": lambda h, n: page}, default=lambda h, n: links()) as server:
        base = server.url
        graph = crawl_records(base + "/", tmp_path / "with", "--record-links", "--no-robots")
        plain = crawl_records(base + "/", tmp_path / "without", "--no-robots")
    [root] = [r for r in graph if r["url"] == base + "/"]
    assert root["outlinks"] == [
        {"url": base + "/b", "in_scope": True, "priority": 0},
        {"url": base + "/a", "in_scope": True, "priority": 0},
        {"url": "http://elsewhere.test/x", "in_scope": False, "priority": 0},
    ]
    assert root["links"] == 3 and root["new_links"] == 2
    assert all("outlinks" not in r for r in plain)


def test_master_waits_while_a_blocked_host_has_nothing_left(tmp_path: Path) -> None:
    """The last URL of a --delay host is still downloading long after the
    host's delay ran out, and nothing else is queued: the master must wait
    for the worker, not loop on the expired delay."""

    def slow(handler: Any, n: int) -> Any:
        time.sleep(1.5)
        return links()

    with serve({"/": lambda h, n: links("/slow")}, default=slow) as server:
        job = tmp_path / "job"
        records = crawl_records(server.url + "/", job, "--delay", "0.2", "--no-robots")
    assert len(records) == 2
    master = json.loads((job / "stats.json").read_text())["processes"]["master"]
    assert master["loop_turns"] <= 40, master  # about 3 a half-second wait; a spin is thousands


U = "http://127.0.0.1:9/"


@pytest.mark.parametrize(
    "args, message",
    [
        (["crawl", U, "--workers", "100000"], "--workers must be at most 256"),
        (["crawl", U, "--threads", "1000000"], "--threads must be at most 256"),
        (["crawl", U, "--workers", "64", "--threads", "100"], "must be at most 4096"),
        (["crawl", U, "--delay", "inf"], "--delay must be at most 3600"),
        (["crawl", U, "--timeout", "inf"], "--timeout must be at most 3600"),
        (["crawl", U, "--hang-timeout", "0"], "--hang-timeout must be more than 0"),
        (["crawl", U, "--ca-bundle", "BAD_PEM"], "no PEM certificates"),
        (["crawl", U, "--redis", "redis://127.0.0.1:1/abc", "--crawl", "x"], "a number"),
        (["crawl", U, "--out", "/proc/nope/x", "--job-dir", "job"], "cannot write output"),
        (["crawl", U, "--log-file", "/proc/nope/x", "--job-dir", "job"], "cannot write log"),
        (["status", "--redis", "notaurl", "--crawl", "x"], "not a redis:// URL"),
        (["reset", "--redis", "notaurl", "--crawl", "x"], "not a redis:// URL"),
    ],
)
def test_options_have_bounds_checked_before_anything_is_written(
    args: list[str], message: str, tmp_path: Path
) -> None:
    (tmp_path / "BAD_PEM").write_text("not a certificate\n")
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["BAD_PEM"]  # nothing written
