"""Archives that replay: --page-requisites, --cdxj and --wacz.

The built-in site with ``embeds=True`` needs a stylesheet that imports
another, a script, images, a font and a logo on a second host (a CDN).
A crawl archives all of it; its index is what cdxj-indexer writes; its WACZ
validates; and pywb, reading the crawl's own index, replays each page in
headless chromium with every resource answered from the archive and a
screenshot within 1% of the live page's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import chromium_flags, crawl_args, crawl_records, read_records, run_cli, start_cli

from mpcrawler.archive.cdxj import file_lines
from mpcrawler.frontier.base import EMBED_FLOOR
from mpcrawler.testing.site import TestSite

pytestmark = pytest.mark.slow

PYWB = os.environ.get("MPCRAWLER_PYWB_BIN")
WACZ = os.environ.get("MPCRAWLER_WACZ_BIN")
needs_pywb = pytest.mark.skipif(
    not shutil.which("wayback", path=PYWB),
    reason="pywb is not installed (set MPCRAWLER_PYWB_BIN to the bin folder of a venv with "
    "pywb; .ci/run makes one)",
)


def two_hosts(make_site: Any, site: TestSite) -> tuple[Any, Any]:
    """The site on 127.0.0.1 and its CDN, 127.0.0.2, on the same port."""
    main = make_site(site)
    cdn = make_site(site, host="127.0.0.2", port=main.port)
    return main, cdn


def assert_valid_wacz(wacz: Path) -> None:
    """The reference validator (py-wacz, where installed: .ci/run installs it)
    says ``wacz`` is valid."""
    if shutil.which("wacz", path=WACZ):
        checked = subprocess.run(
            [str(Path(WACZ or "") / "wacz"), "validate", "-f", str(wacz)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert checked.returncode == 0 and "is valid" in checked.stdout, checked.stdout


def archiving(warc: Path, wacz: Path) -> list[str]:
    """The options of a crawl of the two hosts that archives with its requisites."""
    return [
        "--page-requisites",
        "--allow-private-networks",
        "--warc",
        str(warc),
        "--wacz",
        str(wacz),
    ]


def reference_index(warc: Path) -> list[str]:
    """What the reference indexer writes for the WARC files (cdxj-indexer --sort)."""
    lines = [line for path in sorted(warc.glob("*.warc.gz")) for line in file_lines(path)]
    return sorted(set(lines))


def test_page_requisites_are_fetched_once_from_any_host_outside_the_page_budget(
    make_site: Any, tmp_path: Path
) -> None:
    site = TestSite(pages=40, size=2_000, embeds=True)
    main, cdn = two_hosts(make_site, site)
    records = crawl_records(
        main.url,
        tmp_path / "job",
        "--page-requisites",
        "--allow-private-networks",
        "--max-pages",
        "12",
    )
    pages = [r for r in records if r.get("kind") != "embed"]
    embeds = [r for r in records if r.get("kind") == "embed"]
    assert len(pages) == 12  # embeds do not count against --max-pages
    # Each requisite once, from the server's side, the CDN's logo included.
    for path, hits in main.hits.items():
        if path.startswith("/static/") or path.startswith("/cdn/"):
            assert hits == 1, (path, hits)
    assert cdn.hits["/cdn/logo.png"] == 1
    assert not any(p.startswith("/offsite/") for p in cdn.hits)  # a page link: out of scope
    for path in ("/static/site.css", "/static/extra.css", "/static/site.woff2", "/static/site.js"):
        assert main.hits[path] == 1, path
    assert main.hits["/cdn/rule.png"] == 1  # the imported stylesheet's, two hops away
    assert {r["url"] for r in embeds} >= {f"{main.url}static/site.css", f"{cdn.url}cdn/logo.png"}
    for embed in embeds:
        assert embed["status"] == 200 and embed["from"] in {p["final_url"] for p in pages}
        assert "title" not in embed and "links" not in embed  # a short record
        assert embed["priority"] >= EMBED_FLOOR  # its band: rebuilt from it, it queues there
    home = next(p for p in pages if p["url"] == main.url)
    assert home["embeds"] == 5 and home["embeds_archived"] == 5
    stats = json.loads((tmp_path / "job" / "stats.json").read_text())
    assert stats["pages"] == 12
    assert stats["embeds"]["fetched"] == len(embeds) and stats["embeds"]["failed"] == 0
    assert stats["embed_kinds"]["img"] >= 12 and stats["embed_kinds"]["font"] == 1


def test_embeds_obey_robots_the_deny_list_and_their_own_bound(
    make_site: Any, tmp_path: Path
) -> None:
    site = TestSite(pages=20, size=2_000, embeds=True)
    main, cdn = two_hosts(make_site, site)
    cdn.robots = "User-agent: *\nDisallow: /cdn/\n"
    records = crawl_records(
        main.url,
        tmp_path / "job",
        "--page-requisites",
        "--allow-private-networks",
        "--max-pages",
        "5",
        "--max-embed-hops",
        "1",
        "--reject-regex",
        r"site\.js$",
    )
    assert cdn.hits["/cdn/logo.png"] == 0  # its robots.txt says no
    logo = next(r for r in records if r["url"].endswith("/cdn/logo.png"))
    assert logo["kind"] == "embed" and logo["error_kind"] == "robots"
    assert main.hits["/static/site.js"] == 0  # --reject-regex holds for embeds
    assert main.hits["/static/extra.css"] == 0  # two hops: past --max-embed-hops 1
    assert main.hits["/static/site.css"] == 1
    stats = json.loads((tmp_path / "job" / "stats.json").read_text())
    assert stats["embeds"]["refused"] == 1 and stats["embeds"]["skipped"] >= 2
    assert stats["links_dropped"]["reject_regex"] == 1


@pytest.mark.parametrize("parts", [1, 3])
def test_a_shared_crawl_fetches_each_embed_once_outside_the_page_budget(
    make_site: Any, tmp_path: Path, crawl: str, parts: int
) -> None:
    """Two nodes through Redis: the budget counts pages crawl-wide, embeds
    (leased past it) are fetched once between them."""
    import redis_server
    from many_nodes import Node, shared

    site = TestSite(pages=40, size=2_000, embeds=True)
    main, cdn = two_hosts(make_site, site)
    args = [main.url, "--allow-private-networks", "--page-requisites", "--max-pages", "15"]
    args += [*shared(redis_server.url(), crawl), "--redis-partitions", str(parts)]
    nodes = [Node(f"n{i}", tmp_path / f"n{i}", args) for i in range(2)]
    codes = [node.finish() for node in nodes]
    assert codes == [0, 0], [n.lines.err for n in nodes]
    records = [r for node in nodes for r in node.records()]
    pages = [r for r in records if r.get("kind") != "embed"]
    embeds = [r for r in records if r.get("kind") == "embed"]
    assert len(pages) == 15
    for path, hits in main.hits.items():
        if path.startswith(("/static/", "/cdn/")):
            assert hits == 1, (path, hits)
    assert cdn.hits["/cdn/logo.png"] == 1
    assert main.hits["/static/site.woff2"] == 1 and main.hits["/cdn/rule.png"] == 1
    assert len(embeds) == sum(
        h for p, h in [*main.hits.items(), *cdn.hits.items()] if p.startswith(("/static/", "/cdn/"))
    )


def test_without_page_requisites_nothing_changes(make_site: Any, tmp_path: Path) -> None:
    site = TestSite(pages=10, size=2_000, embeds=True)
    main, _ = two_hosts(make_site, site)
    records = crawl_records(main.url, tmp_path / "job", "--allow-private-networks")
    assert all("kind" not in r and "embeds" not in r for r in records)
    assert not any(p.startswith(("/static/", "/cdn/")) for p in main.hits)


def test_the_index_is_the_reference_indexers_across_a_kill_and_a_resume(
    make_site: Any, tmp_path: Path
) -> None:
    """A crawl killed mid-way leaves records whose lines never reached the
    index; the resume indexes them, and the index is cdxj-indexer's."""
    site = TestSite(pages=80, size=2_000, embeds=True)
    main, _ = two_hosts(make_site, site)
    job, warc = tmp_path / "job", tmp_path / "warc"
    args = ["--page-requisites", "--allow-private-networks", "--warc", str(warc), "--cdxj"]
    proc = start_cli(*crawl_args(main.url, job, *args))
    deadline = time.monotonic() + 60
    while len(list(warc.glob("*.warc.gz"))) < 2 or len(main.log) < 40:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    crawl_records(main.url, job, *args)
    index = (warc / "index.cdxj").read_text().splitlines(keepends=True)
    assert index == reference_index(warc)
    urls = {json.loads(line.split(" ", 2)[2])["url"] for line in index}
    assert f"{main.url}static/site.woff2" in urls
    assert all(r["url"] in urls for r in read_records(job / "pages.jsonl"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _screenshot(flags: list[str], url: str, shot: Path) -> str:
    """Draw ``url`` into ``shot``; chromium's log."""
    drawn = subprocess.run(
        [*flags, f"--screenshot={shot}", url], capture_output=True, text=True, timeout=120
    )
    assert shot.exists(), drawn.stderr[-2000:]
    return drawn.stderr


def _differing_share(a: Path, b: Path) -> float:
    from PIL import Image, ImageChops

    with Image.open(a) as first, Image.open(b) as second:
        assert first.size == second.size
        diff = ImageChops.difference(first.convert("RGB"), second.convert("RGB"))
        data = diff.tobytes()  # RGB: three bytes a pixel
        changed = sum(1 for i in range(0, len(data), 3) if data[i : i + 3] != b"\0\0\0")
        return changed / (first.size[0] * first.size[1])


@needs_pywb
def test_pywb_replays_the_archive_whole_in_a_browser(make_site: Any, tmp_path: Path) -> None:
    site = TestSite(pages=8, size=1_500, fanout=2, embeds=True)
    main, cdn = two_hosts(make_site, site)
    job, warc, wacz = tmp_path / "job", tmp_path / "warc", tmp_path / "site.wacz"
    records = crawl_records(main.url, job, *archiving(warc, wacz))
    assert wacz.exists() and (warc / "index.cdxj").exists()
    assert_valid_wacz(wacz)
    # A pywb collection of the crawl's WARC files and its own index, as they are.
    root = tmp_path / "pywb"
    collection = root / "collections" / "c"
    (collection / "archive").mkdir(parents=True)
    (collection / "indexes").mkdir()
    for path in warc.glob("*.warc.gz"):
        shutil.copy(path, collection / "archive" / path.name)
    shutil.copy(warc / "index.cdxj", collection / "indexes" / "index.cdxj")
    (root / "config.yaml").write_text("framed_replay: false\n")  # the page alone, unframed
    port = _free_port()
    log = open(tmp_path / "pywb.log", "w+", encoding="utf-8")  # noqa: SIM115 - closed below
    wayback = subprocess.Popen(
        [str(Path(PYWB or "") / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        import requests

        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except requests.ConnectionError:
                assert wayback.poll() is None and time.monotonic() < deadline, "pywb did not start"
                time.sleep(0.1)
        pages = [r for r in records if r.get("kind") != "embed" and r["status"] == 200]
        assert len(pages) == 8
        flags = chromium_flags(
            tmp_path / "profile",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--run-all-compositor-stages-before-draw",
            "--virtual-time-budget=5000",
            "--window-size=900,700",
        )
        for n, page in enumerate(pages[:2]):
            stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(page["fetched_at"] + 1))
            replayed = f"http://127.0.0.1:{port}/c/{stamp}/{page['url']}"
            before = len(main.log) + len(cdn.log)
            live_log = _screenshot(flags, page["url"], tmp_path / f"live{n}.png")
            replay_log = _screenshot(flags, replayed, tmp_path / f"replay{n}.png")
            assert len(main.log) + len(cdn.log) > before  # the live one came from the site
            for chromium_log in (live_log, replay_log):
                assert "Failed to load resource" not in chromium_log, chromium_log[-2000:]
            share = _differing_share(tmp_path / f"live{n}.png", tmp_path / f"replay{n}.png")
            assert share <= 0.01, f"{page['url']}: {share:.2%} of the pixels differ"
        log.seek(0)
        served = log.read()
    finally:
        wayback.terminate()
        wayback.wait(timeout=30)
        log.close()
    answered = [line for line in served.splitlines() if '"GET /c/' in line]
    assert answered, served[-2000:]
    assert not [line for line in answered if '" 404 ' in line], served[-3000:]
    for path in ("static/site.css", "static/extra.css", "cdn/logo.png", "cdn/rule.png", "icon.png"):
        assert any(path in line for line in answered), path
    assert any(f"static/img/{n}.png" in served for n in range(site.images))


def test_a_kill_while_packaging_leaves_no_partial_wacz(make_site: Any, tmp_path: Path) -> None:
    """The WACZ is built under another name and renamed whole: a kill before
    the rename leaves nothing under the final name, and a rerun makes it."""
    code = (
        "import os, sys, zipfile\n"
        "from mpcrawler.archive import wacz\n"
        "real = zipfile.ZipFile.close\n"
        "def close(self):\n"
        "    real(self)\n"
        "    os.kill(os.getpid(), 9)\n"
        "zipfile.ZipFile.close = close\n"
        "from mpcrawler.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    site = TestSite(pages=5, size=1_500, embeds=True)
    main, _ = two_hosts(make_site, site)
    job, warc, target = tmp_path / "job", tmp_path / "warc", tmp_path / "out" / "site.wacz"
    args = crawl_args(main.url, job, *archiving(warc, target))
    killed = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not target.exists()
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr
    assert target.exists() and not list(target.parent.glob(".*.tmp"))
    import zipfile

    with zipfile.ZipFile(target) as package:
        names = package.namelist()
        assert "datapackage.json" in names and "pages/pages.jsonl" in names
        assert "indexes/index.cdx" in names
        assert package.testzip() is None
        pages = package.read("pages/pages.jsonl").decode().splitlines()
    assert json.loads(pages[0])["format"] == "json-pages-1.0"
    assert len(pages) == 1 + 5


def test_a_wacz_of_pages_with_and_without_titles_validates(tmp_path: Path) -> None:
    """Every row of pages.jsonl has the same fields and an id (the reference
    validator reads a row's columns from the header line's: format, id,
    title): a page without a title, a frameset and a text file have an
    empty title, and the package validates."""
    from hostile import html, links, serve

    routes = {
        "/": lambda h, n: links("/untitled", "/frames", "/notes.txt", title="Home"),
        "/untitled": lambda h, n: html("<html><body><p>No title here.</p></body></html>"),
        "/frames": lambda h, n: html(
            '<html><frameset cols="50%,50%"><frame src="/left"><frame src="/untitled">'
            "</frameset></html>"
        ),
        "/left": lambda h, n: html("<html><head><title></title></head><body>left</body></html>"),
        "/notes.txt": lambda h, n: (200, {"Content-Type": "text/plain"}, b"plain notes\n"),
    }
    warc, wacz = tmp_path / "warc", tmp_path / "site.wacz"
    with serve(routes) as server:
        records = crawl_records(
            server.url,
            tmp_path / "job",
            "--page-requisites",
            "--warc",
            str(warc),
            "--wacz",
            str(wacz),
        )
    fetched = {r["url"].rsplit("/", 1)[1]: r.get("kind") for r in records}
    assert fetched == {
        "": None,
        "untitled": None,
        "frames": None,
        "notes.txt": None,
        "left": "embed",
    }
    records = [r for r in records if not r.get("kind")]  # a frame is an embed: no page of its own
    import zipfile

    with zipfile.ZipFile(wacz) as package:
        rows = [json.loads(line) for line in package.read("pages/pages.jsonl").splitlines()[1:]]
    assert len(rows) == len(records)
    assert all(set(row) == {"id", "url", "ts", "title"} for row in rows), rows
    assert len({row["id"] for row in rows}) == len(rows)
    titles = {row["url"].rsplit("/", 1)[1]: row["title"] for row in rows}
    assert titles["untitled"] == titles["frames"] == titles["notes.txt"] == ""
    assert titles[""] == "Home"
    assert_valid_wacz(wacz)


def test_a_crawl_without_requisites_says_nothing_of_embeds(make_site: Any, tmp_path: Path) -> None:
    site = TestSite(pages=10, size=2_000, embeds=True)
    main, _ = two_hosts(make_site, site)
    done = run_cli(*crawl_args(main.url, tmp_path / "job", "--allow-private-networks"))
    assert done.returncode == 0 and "embeds" not in done.stdout, done.stdout
    stats = json.loads((tmp_path / "job" / "stats.json").read_text())
    assert "embeds" not in stats and "embed_kinds" not in stats


def test_max_embeds_bounds_the_embeds_queued(make_site: Any, tmp_path: Path) -> None:
    site = TestSite(pages=30, size=2_000, embeds=True, images=30)
    main, _ = two_hosts(make_site, site)
    records = crawl_records(
        main.url,
        tmp_path / "job",
        "--page-requisites",
        "--allow-private-networks",
        "--max-embeds",
        "7",
    )
    assert sum(1 for r in records if r.get("kind") == "embed") == 7
    fetched = sum(h for p, h in main.hits.items() if p.startswith(("/static/", "/cdn/")))
    assert fetched <= 7
    stats = json.loads((tmp_path / "job" / "stats.json").read_text())
    assert stats["embeds"]["queued"] == 7 and stats["embeds"]["skipped"] > 0


def test_hostile_requisites_are_each_fetched_once(tmp_path: Path) -> None:
    """A page of 2,027 embeds: 1,000 distinct images, one image named 1,000
    times, a garbage srcset, a stylesheet that imports itself and two that
    import each other: each URL fetched exactly once, and the crawl ends."""
    from hostile import serve

    css = {"Content-Type": "text/css"}
    png = {"Content-Type": "image/png"}
    body = (
        "<html><head><title>embeds</title>"
        "<link rel=stylesheet href=/self.css><link rel=stylesheet href=/a.css></head><body>"
        + "".join(f"<img src=/img/{n}.png>" for n in range(1_000))
        + "<img src=/same.png>" * 1_000
        + "<img srcset=', ,,  1x, /set.png 2x ,, ,bogus 3q, ,'>" * 25
        + "</body></html>"
    ).encode()
    routes: dict[str, Any] = {
        "/": lambda h, n: (200, {"Content-Type": "text/html"}, body),
        "/self.css": lambda h, n: (200, css, b'@import "/self.css"; p { color: red }'),
        "/a.css": lambda h, n: (200, css, b"@import url(/b.css);"),
        "/b.css": lambda h, n: (200, css, b'@import "a.css"; body { background: url(/bg.png) }'),
    }
    with serve(routes, default=lambda h, n: (200, png, b"\x89PNG\r\n\x1a\n")) as server:
        records = crawl_records(
            server.url + "/", tmp_path / "job", "--page-requisites", "--no-robots"
        )
        counts = server.log.counts()
    assert all(count == 1 for count in counts.values()), {
        path: count for path, count in counts.items() if count != 1
    }
    expected = {"/", "/self.css", "/a.css", "/b.css", "/bg.png", "/same.png", "/set.png"}
    assert set(counts) >= expected | {f"/img/{n}.png" for n in range(1_000)}
    assert len(records) == len(counts)
