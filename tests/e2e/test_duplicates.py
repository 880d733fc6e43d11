"""Pages recognised by their text (--no-dedup turns it off): an exact copy
under another URL is recorded with duplicate_of and its links are not
followed, so a soft-404 part and an endless calendar end; with
--near-duplicates, a near copy is recorded with near_duplicate_of.  On the
built-in site with its traps
(TestSite(traps=True)), outcomes seen from the server's side."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import redis_server
from hostile import Reply, html, serve
from many_nodes import Node, shared, wait_until
from support import crawl_args, crawl_records, read_records, run_cli, start_cli

from mpcrawler.testing.site import TestSite, serve_site

PAGES = 40


def count_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def trap_fetches(hits: dict[str, int]) -> dict[str, int]:
    """The server's requests, by part of the site."""
    parts = {"soft": 0, "cal": 0, "empty": 0, "events": 0, "copy": 0, "near": 0, "real": 0}
    for path, count in hits.items():
        part = path.split("/")[1] if path.count("/") > 1 else "real"
        parts[part if part in parts else "real"] += count
    return parts


def crawl(tmp_path: Path, *args: str) -> tuple[list[dict[str, Any]], dict[str, int], Any]:
    site = TestSite(pages=PAGES, size=2_000, traps=True)
    with serve_site(site) as server:
        job = tmp_path / "job"
        records = crawl_records(server.url.rstrip("/") + "/", job, "--no-robots", *args)
        hits = dict(server.hits)
    stats = json.loads((job / "stats.json").read_text())
    return records, hits, stats


def test_copies_soft_404s_and_calendars_end_at_their_first_copy(tmp_path: Path) -> None:
    records, hits, stats = crawl(tmp_path, "--max-pages", "300")
    by_path = {r["url"].split(":", 2)[2].split("/", 1)[1]: r for r in records}
    real = {"", *(f"page/{i}" for i in range(1, PAGES))}
    assert real <= set(by_path)  # every real page, whatever came first
    fetched = trap_fetches(hits)
    assert fetched["soft"] == 4  # the not-found page, then its 3 links: copies of it
    assert fetched["cal"] == 3  # a month, then the one before and the one after: copies
    # The same traps made of pages of a few words end the same way.
    assert fetched["empty"] == 4 and fetched["events"] == 3
    false = [  # a real page's duplicate is only its own copy (if that came first)
        r["url"]
        for r in records
        if "/page/" in r["url"]
        and r.get("duplicate_of")
        and not r["duplicate_of"].endswith("/copy/" + r["url"].rsplit("/", 1)[1])
    ]
    assert not false, false
    for i in (1, 2):  # one of the two is the other's duplicate
        page, copy = by_path[f"page/{i}"], by_path[f"copy/{i}"]
        assert [page.get("duplicate_of"), copy.get("duplicate_of")].count(None) == 1
        dup = page if page.get("duplicate_of") else copy
        assert dup["duplicate_of"] == (copy if dup is page else page)["url"]
    # /page/1 and /copy/1 come in either order; a copy met first has its
    # relative links followed (/copy/j: copies of more pages).
    exact = sum(1 for r in records if r.get("duplicate_of"))
    assert stats["duplicates"]["exact"] == exact >= 2 + 3 + 2
    assert stats["links_dropped"]["duplicate"] > 0
    # Near copies are looked for only when asked (--near-duplicates).
    assert by_path["near/3"] and not any("near_duplicate_of" in r for r in records)
    assert stats["duplicates"]["near"] == 0


def test_without_dedup_the_traps_eat_the_budget(tmp_path: Path) -> None:
    records, hits, stats = crawl(tmp_path, "--max-pages", "150", "--no-dedup")
    fetched = trap_fetches(hits)
    assert len(records) == 150  # spent: on copies, on the two soft-404 parts (until
    traps = sum(fetched[part] for part in ("soft", "empty", "cal", "events"))  # path_trap
    assert traps > 30 and fetched["cal"] + fetched["events"] > 3, fetched  # ends them), months
    assert not any("duplicate_of" in r or "near_duplicate_of" in r for r in records)
    assert stats["duplicates"] == {"exact": 0, "near": 0, "soft_404": 0}


@pytest.mark.parametrize("skip", [False, True])
def test_a_near_copys_links_are_followed_unless_asked(tmp_path: Path, skip: bool) -> None:
    """--near-duplicates records near copies; --skip-near-duplicates (which
    implies it) does not follow their links either."""
    near_option = "--skip-near-duplicates" if skip else "--near-duplicates"
    records, _, stats = crawl(tmp_path, "--max-pages", "300", near_option)
    by_path = {r["url"].split(":", 2)[2].split("/", 1)[1]: r for r in records}
    page, copy = by_path["page/3"], by_path["near/3"]
    named = page.get("near_duplicate_of") or copy.get("near_duplicate_of")
    assert named in (page["url"], copy["url"])
    assert stats["duplicates"]["near"] >= 1
    near = [r for r in records if r.get("near_duplicate_of")]
    assert len(near) == stats["duplicates"]["near"]
    # Relative links resolve under /near/: followed, they make near copies of
    # the pages they name (of most of the site); not followed, a few at most.
    assert (len(near) < 10) == skip, len(near)
    assert (len(near) >= 20) != skip, len(near)


def test_a_killed_crawl_still_knows_what_it_recorded_by_its_text(tmp_path: Path) -> None:
    """SIGKILL mid-crawl, then the same command: the fingerprints recorded
    before the kill are still known (a copy met after it is a duplicate), and
    the traps end as in one run."""
    site = TestSite(pages=PAGES, size=2_000, traps=True)
    with serve_site(site) as server:
        job, url = tmp_path / "job", server.url.rstrip("/") + "/"
        args = [*crawl_args(url, job, "--no-robots", "--max-pages", "300")]
        proc = start_cli(*args)
        wait_until(lambda: count_lines(job / "pages.jsonl") >= 25, what="25 records")
        server.gate.clear()  # what is asked from now on waits: the crawl is mid-way
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        assert json.loads((job / "job.json").read_text())["job"]["state"] == "running"
        server.gate.set()
        again = run_cli(*args, timeout=90)
        assert again.returncode == 0, again.stderr
    records = read_records(job / "pages.jsonl")
    paths = {r["url"][len(url) - 1 :] for r in records}
    assert len({p for p in paths if p.startswith("/soft/")}) == 4
    assert len({p for p in paths if p.startswith("/cal/")}) == 3
    for i in (1, 2):
        dups = {
            r["url"][len(url) - 1 :]
            for r in records
            if r.get("duplicate_of") and r["url"].endswith(f"/{i}")
        }
        assert len(dups & {f"/page/{i}", f"/copy/{i}"}) == 1, dups


def test_a_node_knows_the_pages_another_recorded_by_their_text(tmp_path: Path, crawl: str) -> None:
    """One site served twice, on two hosts, crawled by two nodes of one
    shared crawl, one after the other: the second node meets the copy's
    root as a duplicate of what the first recorded, and does not follow it."""
    site = TestSite(pages=PAGES, size=2_000)
    with serve_site(site) as first, serve_site(site, host="127.0.0.2") as second:
        seeds = [first.url.rstrip("/") + "/", second.url.rstrip("/") + "/"]
        nodes = []
        for name, seed in zip(("n1", "n2"), seeds, strict=True):
            args = [seed, "--allow-private-networks", "--no-robots"]
            node = Node(name, tmp_path / name, [*args, *shared(redis_server.url(), crawl)])
            assert node.finish() == 0, node.err
            nodes.append(node)
    one, two = (node.records() for node in nodes)
    assert len(one) == PAGES and not any(r.get("duplicate_of") for r in one)
    assert [(r["url"], r["duplicate_of"], r["new_links"]) for r in two] == [(seeds[1], seeds[0], 0)]


def test_a_link_a_duplicate_had_is_followed_from_the_next_page_that_has_it(
    tmp_path: Path,
) -> None:
    """A worker sends each link once; the links of a duplicate are not
    followed, so the master tells the workers to send them again when
    another page has them: /only is first found on /copy (a duplicate of /)
    and then on /next, and it is fetched."""
    words = " ".join(f"word{chr(97 + n % 26)}{chr(97 + n // 26)}" for n in range(40))

    def page(*hrefs: str, text: str = words) -> Reply:
        anchors = "".join(f'<a href="{h}"></a>' for h in hrefs)  # no text: the same page
        return html(f"<html><body><p>{text}</p>{anchors}</body></html>")

    routes = {
        "/": lambda h, n: page("/copy", "/next"),
        "/copy": lambda h, n: page("/only"),
        "/next": lambda h, n: page("/only", text="another page with words of its own " * 3),
        "/only": lambda h, n: page(text="the page only the copy and the next page link to " * 2),
    }
    with serve(routes) as server:
        job = tmp_path / "job"
        args = ["--no-robots", "--workers", "1", "--threads", "1"]
        records = crawl_records(server.url + "/", job, *args)
        hits = server.log.counts()
    by_path = {r["url"][len(server.url) :]: r for r in records}
    assert by_path["/copy"]["duplicate_of"] == server.url + "/"
    assert "/only" in by_path, sorted(by_path)
    assert hits.get("/only") == 1


@pytest.mark.parametrize("probe", [True, False])
def test_a_hosts_soft_404_answer_is_known_by_its_probe(tmp_path: Path, probe: bool) -> None:
    """--soft-404-probe, on a host that answers 200 for any path: after its
    first page, one request for a path that cannot exist gives its soft-404
    page; a page with that text is recorded soft_404 and its links are not
    followed, so the short soft-404 part ends at its first page.  The probe
    is no record.  Without it (the default), that part ends at its first
    copies."""
    site = TestSite(pages=PAGES, size=2_000, traps=True, soft_404s=True)
    extra = ["--soft-404-probe"] if probe else []
    with serve_site(site) as server:
        job = tmp_path / "job"
        records = crawl_records(server.url, job, "--no-robots", "--max-pages", "300", *extra)
        hits = dict(server.hits)
    probes = [p for p in hits if p.startswith("/mpcrawler-soft-404-probe-")]
    assert len(probes) == (1 if probe else 0), probes
    assert not any("soft-404-probe" in r["url"] for r in records)
    soft = [r["url"] for r in records if r.get("soft_404")]
    fetched = trap_fetches(hits)
    if probe:
        assert soft and all("/empty/" in url for url in soft), soft
        assert fetched["empty"] == 1  # its links not followed
    else:
        assert not soft and fetched["empty"] == 4
    stats = json.loads((job / "stats.json").read_text())
    assert stats["duplicates"]["soft_404"] == len(soft)
    real = {f"page/{i}" for i in range(1, PAGES)}
    assert real <= {r["url"].split("/", 3)[3] for r in records}
