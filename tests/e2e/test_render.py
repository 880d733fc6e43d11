"""--render end to end: real crawls whose pages run in Debian's chromium
through Playwright, seen from the servers' side: which pages were rendered,
what the browser's requests were (robots.txt, delay, concurrency, blocked
types), what the WARC holds, and what a browser killed, a worker killed, a
script that never ends and a page that opens popups cost."""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile import Reply, html, links, serve
from support import Lines, crawl_args, crawl_records, read_records, run_cli, start_cli
from test_warc import records_of, warc_files, warcio_check

from mpcrawler.render.browser import descendants
from mpcrawler.testing.site import TestSite, serve_site

ONE_WORKER = ("--workers", "1", "--allow-private-networks")


@pytest.fixture(autouse=True)
def one_browser_at_a_time(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """These tests run one at a time across the pytest-xdist workers: a
    Chromium rendering takes a core, and several at once on a 2-core machine
    starve the other tests' servers and crawlers, whose delays the politeness
    tests measure to the tenth of a second."""
    lock = tmp_path_factory.getbasetemp().parent / "one-browser-at-a-time.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


def app_shell(script: str, static: str = "") -> Reply:
    """A single-page application's shell: an empty root, and ``script``."""
    return html(
        "<!DOCTYPE html><html><head><title>App</title></head><body>"
        f'<div id="root"></div>{static}<script>{script}</script></body></html>'
    )


def json_reply(data: Any) -> Reply:
    return 200, {"Content-Type": "application/json"}, json.dumps(data).encode()


# Fetches each of ``urls`` and links every name their JSON lists (done when all are).
FETCH_AND_LINK = """
Promise.all(%s.map(function (u) {
  return fetch(u).then(function (r) { return r.json(); }).catch(function () { return []; });
})).then(function (lists) {
  [].concat.apply([], lists).forEach(function (href) {
    var a = document.createElement("a"); a.href = href; a.textContent = href;
    document.getElementById("root").appendChild(a);
  });
  document.title = "rendered";
});
"""


def fetching(*urls: str) -> str:
    return FETCH_AND_LINK % json.dumps(list(urls))


def by_path(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {"/" + r["url"].split("/", 3)[3]: r for r in records}


def test_auto_renders_the_application_and_no_static_page(tmp_path: Path) -> None:
    """Half static, half application: every application page is rendered
    (its links come from its script's data), no static page is, every
    request of the browser is made once and archived, images are blocked."""
    site = TestSite(pages=20, size=2_000, app=7)
    with serve_site(site) as server:
        warc = tmp_path / "warc"
        records = crawl_records(
            server.url, tmp_path / "job", *ONE_WORKER, "--render", "auto", "--warc", str(warc),
            "--extract",
        )  # fmt: skip
        hits = dict(server.hits)
    pages = by_path(records)
    apps = ["/app/"] + [f"/app/{i}" for i in range(1, 7)]
    for i, path in enumerate(apps):
        record = pages[path]
        assert record["rendered"] is True, record
        assert record["render_reason"] == "empty application root"
        assert record["title"] == f"App page {i}"
        assert record["text"].startswith(f"App page {i}: ")  # the rendered DOM's main text
        assert record["links"] == len([c for c in (2 * i + 1, 2 * i + 2) if c < 7]) + 1
        assert hits[path] == 1 and hits[f"/app/api/{i}.json"] == 1
    static = [r for path, r in pages.items() if not path.startswith("/app/")]
    assert len(static) == 20
    assert not [r["url"] for r in static if "rendered" in r]  # none of them (at most 10%)
    assert "/app/pic.png" not in hits  # --render-block's default: images
    stats = json.loads((tmp_path / "job" / "stats.json").read_text())
    made = hits["/app/app.js"] + sum(hits[f"/app/api/{i}.json"] for i in range(7))
    assert stats["browser_requests"]["fetched"] == made
    archived: dict[str, int] = {}
    for path in warc_files(warc):
        assert warcio_check(path).returncode == 0
        for record in records_of(path):
            if record["type"] == "response":
                uri = "/" + record["uri"].split("/", 3)[3]
                archived[uri] = archived.get(uri, 0) + 1
    for i in range(7):
        assert archived[f"/app/api/{i}.json"] == 1
    assert archived["/app/app.js"] == hits["/app/app.js"]


def test_pages_waiting_for_the_browser_leave_their_host_to_the_browsers_requests(
    tmp_path: Path,
) -> None:
    """Renders are slower than downloads, so pages wait for the browser.  A
    request the master sent must not wait in the worker meanwhile, counted
    against its host: the browser's own requests to that host would wait for
    them, and every render would end without its data (title "App")."""
    site = TestSite(pages=2, size=1_000, app=12)
    with serve_site(site) as server:
        seeds = tmp_path / "seeds.txt"  # all waiting at once
        seeds.write_text("".join(f"{server.url}app/{i}\n" for i in range(1, 12)))
        records = crawl_records(
            server.url + "app/", tmp_path / "job", "--seeds-file", str(seeds), *ONE_WORKER,
            "--threads", "2",
            "--host-concurrency", "2", "--render", "auto", "--render-tabs", "1",
            "--accept-regex", "/app/",
        )  # fmt: skip
    titles = {r["url"].split("/", 3)[3]: r["title"] for r in records}
    assert titles == {"app/": "App page 0", **{f"app/{i}": f"App page {i}" for i in range(1, 12)}}


def test_the_browsers_requests_obey_robots_txt_the_delay_and_the_concurrency(
    tmp_path: Path,
) -> None:
    """Every request to the host, the browser's among them, starts at least
    the delay after the one before, one at a time; the one robots.txt
    disallows is never made, and the page is rendered without it."""
    script = fetching("/a.json", "/b.json", "/private/c.json", "/d.json")
    routes = {
        "/robots.txt": lambda h, n: (200, {"Content-Type": "text/plain"}, b"User-agent: *\n"
                                     b"Disallow: /private/\n"),
        "/": lambda h, n: links("/app"),
        "/app": lambda h, n: app_shell(script),
        "/a.json": lambda h, n: json_reply(["/from-a"]),
        "/b.json": lambda h, n: json_reply(["/from-b"]),
        "/private/c.json": lambda h, n: json_reply(["/from-c"]),
        "/d.json": lambda h, n: json_reply(["/from-d"]),
    }  # fmt: skip
    delay = 0.3
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl_records(
            server.url + "/",
            tmp_path / "job",
            *ONE_WORKER,
            "--render",
            "auto",
            "--delay",
            str(delay),
            "--host-concurrency",
            "1",
        )
        hits = list(server.log.hits)
        max_open = server.log.max_open
    pages = by_path(records)
    assert pages["/app"]["rendered"] is True and pages["/app"]["title"] == "rendered"
    assert {"/from-a", "/from-b", "/from-d"} <= set(pages)
    assert "/from-c" not in pages
    paths = [h.path for h in hits]
    assert "/private/c.json" not in paths
    assert paths.count("/a.json") == paths.count("/b.json") == paths.count("/d.json") == 1
    assert max_open == 1
    starts = sorted(h.start for h in hits if h.path != "/robots.txt")
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= delay - 0.05, gaps


def test_page_requisites_fetch_what_is_blocked_otherwise(tmp_path: Path) -> None:
    """--render-block's types are refused by default; with --page-requisites
    the browser's images are fetched (and archived) like the rest."""
    site = TestSite(pages=2, size=1_000, app=2)
    with serve_site(site) as server:
        crawl_records(
            server.url, tmp_path / "job", *ONE_WORKER, "--render", "always", "--page-requisites"
        )
        hits = dict(server.hits)
    assert hits["/app/pic.png"] >= 1


def chromium_of(pid: int) -> list[int]:
    """The browsers' main processes below ``pid`` (a crawl's): the children
    of Playwright's driver."""
    found = []
    for child in descendants(pid):
        try:
            if b"run-driver" in Path(f"/proc/{parent_of(child)}/cmdline").read_bytes():
                found.append(child)
        except OSError:
            continue
    return found


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return int(stat.rsplit(b")", 1)[1].split()[1])


@pytest.mark.parametrize("victim", ["browser", "worker"])
def test_a_browser_or_worker_killed_mid_render_costs_the_page_one_retry(
    tmp_path: Path, victim: str
) -> None:
    """kill -9 of the browser (or of its worker) while the page waits for a
    request of its own: the page is rendered again, whole, and the crawl
    ends.  With one request at a time per host, a browser's request the
    master kept counting after its worker died would block the host for
    good: the crawl would never end."""
    asked, killed = threading.Event(), threading.Event()

    def slow(handler: Any, n: int) -> Reply:
        if n == 0:
            asked.set()
            killed.wait(30)
        return json_reply(["/after"])

    routes = {
        "/": lambda h, n: links("/spa"),
        "/spa": lambda h, n: app_shell(fetching("/slow.json")),
        "/slow.json": slow,
    }
    with serve(routes, default=lambda h, n: links()) as server:
        job = tmp_path / "job"
        proc = start_cli(
            *crawl_args(
                server.url + "/", job, *ONE_WORKER, "--render", "auto", "--no-robots",
                "--host-concurrency", "1", "--timeout", "5",
            )
        )  # fmt: skip
        lines = Lines(proc)
        try:
            assert asked.wait(60), "the browser never asked for its request"
            [browser] = chromium_of(proc.pid)
            target = browser if victim == "browser" else parent_of(parent_of(browser))
            os.kill(target, signal.SIGKILL)
        finally:
            killed.set()
        lines.finish(timeout=90)
        counts = server.log.counts()
    assert proc.returncode == 0, lines.err
    pages = by_path(read_records(job / "pages.jsonl"))
    assert pages["/spa"]["rendered"] is True and "/after" in pages
    if victim == "browser":  # a retry; a worker's death is not the page's attempt
        assert pages["/spa"]["attempts"] == 2
    assert counts["/spa"] == 2 and counts["/after"] == 1


def test_a_script_that_never_ends_keeps_the_pages_html_and_popups_are_closed(
    tmp_path: Path,
) -> None:
    """A page whose script never ends is given up after --render-timeout: its
    record keeps what its HTML had (its static link) and says why; the next
    page renders in a browser that is still there.  A page that opens a
    popup and starts a download is rendered; the popup is never fetched."""
    routes = {
        "/": lambda h, n: links("/loop", "/popups", "/noindex"),
        "/noindex": lambda h, n: app_shell(
            'var m = document.createElement("meta"); m.name = "robots";'
            'm.content = "noindex, nofollow"; document.head.appendChild(m);'
            'var a = document.createElement("a"); a.href = "/hidden";'
            'document.getElementById("root").appendChild(a);'
        ),
        "/loop": lambda h, n: app_shell("while (true) {}", '<a href="/static">s</a>'),
        "/popups": lambda h, n: app_shell(
            'window.open("/popup"); var a = document.createElement("a");'
            'a.href = "/file.bin"; a.download = "f.bin"; document.body.appendChild(a);'
            "a.click();" + fetching("/data.json")
        ),
        "/data.json": lambda h, n: json_reply(["/from-data"]),
        "/file.bin": lambda h, n: (200, {"Content-Type": "application/octet-stream"}, b"x" * 64),
    }
    with serve(routes, default=lambda h, n: links()) as server:
        records = crawl_records(
            server.url + "/", tmp_path / "job", *ONE_WORKER, "--render", "auto",
            "--render-timeout", "5", "--no-robots",
        )  # fmt: skip
        counts = server.log.counts()
    pages = by_path(records)
    loop = pages["/loop"]
    assert loop["rendered"] is False and loop["render_error"].startswith("the page did not")
    assert loop["error"] is None and "/static" in pages
    assert pages["/popups"]["rendered"] is True and "/from-data" in pages
    assert counts["/popup"] == 0
    hidden = pages["/noindex"]  # the rendered DOM's meta robots is obeyed
    assert hidden["rendered"] is True and hidden.get("title") is None and "/hidden" not in pages
    assert counts["/file.bin"] <= 1  # a download is the page's link, not the browser's


def test_rendering_without_a_browser_is_a_usage_error(tmp_path: Path) -> None:
    job = tmp_path / "job"
    missing = run_cli("crawl", "http://127.0.0.1:9/", "--job-dir", str(job), "--render", "auto",
                      "--browser-path", str(tmp_path / "chromium"))  # fmt: skip
    assert missing.returncode == 2
    assert missing.stderr.strip().endswith("not an executable file")
    bare_path = {"PATH": str(Path(sys.executable).parent)}
    none = run_cli(
        "crawl", "http://127.0.0.1:9/", "--job-dir", str(job), "--render", "always", env=bare_path
    )
    assert none.returncode == 2 and len(none.stderr.strip().splitlines()) == 1
    assert "no Chromium found" in none.stderr and "apt-get install chromium" in none.stderr
    assert not job.exists()
