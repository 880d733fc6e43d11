"""Crawling again: conditional requests, changes told apart, WARC revisit
records, --continuous, a schedule that survives SIGKILL.

The built-in site sends ETag and Last-Modified and answers conditional
requests with 304 (as nginx does), and logs every request with the
validators it carried; every assertion on the wire is from that log.
"""

from __future__ import annotations

import collections
import email.utils
import glob
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
from support import Lines, crawl_args, crawl_records, read_records, run_cli, start_cli
from warcio.archiveiterator import ArchiveIterator

from mpcrawler.testing.site import Hit, SiteServer, TestSite

PAGES = 40


@pytest.fixture
def served(make_site: Any) -> tuple[TestSite, SiteServer]:
    """The site of most tests here, and its server."""
    site = TestSite(pages=PAGES, size=3_000)
    return site, make_site(site)


def page_hits(server: SiteServer, start: int = 0) -> list[Hit]:
    return [h for h in server.log[start:] if h.path != "/robots.txt"]


def warc_records(directory: Path) -> list[Any]:
    """(type, headers) of every record in the WARC files of ``directory``."""
    found = []
    for name in sorted(glob.glob(str(directory / "*.warc.gz"))):
        with open(name, "rb") as f:
            for record in ArchiveIterator(f):
                found.append((record.rec_type, record.rec_headers))
    return found


def test_a_revisit_of_an_unchanged_site_sends_the_validators_and_gets_no_body(
    served: tuple[TestSite, SiteServer], tmp_path: Path
) -> None:
    site, server = served
    job, warc = tmp_path / "job", tmp_path / "warc"
    first = crawl_records(server.url, job, "--warc", str(warc))
    assert len(first) == PAGES
    assert {r["change"] for r in first} == {"new"}
    before = len(server.log)

    records = crawl_records(server.url, job, "--warc", str(warc), "--revisit-after", "0")[PAGES:]
    hits = page_hits(server, before)
    assert len(hits) == PAGES  # each page once
    for hit in hits:
        etag, modified = site.validators(site.page_index(hit.path) or 0)
        assert hit.if_none_match == etag
        assert hit.if_modified_since == modified  # IMF-fixdate, exactly as sent
        assert email.utils.parsedate_to_datetime(hit.if_modified_since).tzname() == "UTC"
    assert {h.status for h in hits} == {304}
    assert sum(h.body_bytes for h in hits) == 0
    assert len(records) == PAGES
    assert {r["change"] for r in records} == {"unchanged"}
    assert {r["status"] for r in records} == {304}
    by_url = {r["url"]: r for r in first}
    for record in records:
        assert record["digest"] == by_url[record["url"]]["digest"]
        assert record["bytes_saved"] == by_url[record["url"]]["bytes"]
    status = json.loads(run_cli("status", str(job), "--json").stdout)
    assert status["changes"] == {"unchanged": PAGES}
    assert status["bytes_saved"] == sum(r["bytes"] for r in first)

    # The archive: one revisit record per page, naming its original capture.
    originals = {
        h.get_header("WARC-Record-ID"): h for kind, h in warc_records(warc) if kind == "response"
    }
    revisits = [h for kind, h in warc_records(warc) if kind == "revisit"]
    assert len(revisits) == PAGES
    assert len({h.get_header("WARC-Target-URI") for h in revisits}) == PAGES
    for headers in revisits:
        assert headers.get_header("WARC-Profile").endswith("/revisit/server-not-modified")
        original = originals[headers.get_header("WARC-Refers-To")]
        assert headers.get_header("WARC-Refers-To-Target-URI") == original.get_header(
            "WARC-Target-URI"
        )
        assert headers.get_header("WARC-Refers-To-Date") == original.get_header("WARC-Date")
        assert headers.get_header("WARC-Payload-Digest") == original.get_header(
            "WARC-Payload-Digest"
        )
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "from warcio.cli import main; main()",
            "check",
            "-v",
            *sorted(glob.glob(str(warc / "*.warc.gz"))),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, check.stdout[-2000:]


def test_edits_additions_and_deletions_are_told_apart(
    served: tuple[TestSite, SiteServer], tmp_path: Path
) -> None:
    site, server = served
    job = tmp_path / "job"
    crawl_records(server.url, job)
    edited = [3, 5, 8, 13, 21]
    for i in edited:
        site.edit(i)
    added = site.add(linked_from=8)  # an edited page links to it
    site.delete(34)

    records = crawl_records(server.url, job, "--revisit-after", "0")[PAGES:]
    changes = {r["url"].split(":", 2)[2].partition("/")[2]: r["change"] for r in records}
    path = {i: site.path(i).lstrip("/") for i in range(PAGES + 1)}
    assert sorted(u for u, c in changes.items() if c == "changed") == sorted(
        path[i] for i in edited
    )
    assert [u for u, c in changes.items() if c == "new"] == [path[added]]
    assert [u for u, c in changes.items() if c == "gone"] == [path[34]]
    assert collections.Counter(changes.values())["unchanged"] == PAGES - len(edited) - 1
    assert len(records) == PAGES + 1
    stats = (job / "stats.json").read_text()
    assert '"changed": 5' in stats and '"gone": 1' in stats and '"new": 1' in stats
    assert run_cli("report", str(job)).returncode == 0
    report = (job / "report.html").read_text()
    chart = report.split('<svg id="changes"', 1)[1].split("</svg>", 1)[0]
    for change, count in (("unchanged", PAGES - 6), ("changed", 5), ("new", 1), ("gone", 1)):
        assert f">{change}<" in chart and f">{count}<" in chart


def test_a_server_that_ignores_conditional_requests_is_seen_unchanged_by_digest(
    make_site: Any, tmp_path: Path
) -> None:
    server = make_site(TestSite(pages=PAGES, size=3_000), conditional=False)
    job, warc = tmp_path / "job", tmp_path / "warc"
    first = crawl_records(server.url, job, "--warc", str(warc))
    before = len(server.log)
    records = crawl_records(server.url, job, "--warc", str(warc), "--revisit-after", "0")[PAGES:]
    assert {h.status for h in page_hits(server, before)} == {200}
    assert {r["change"] for r in records} == {"unchanged"}
    digests = {r["url"]: r["digest"] for r in first}
    assert all(r["digest"] == digests[r["url"]] for r in records)
    # identical-payload-digest revisits carry the original's digest (heritrix3 PR #118)
    responses = {
        h.get_header("WARC-Record-ID"): h for kind, h in warc_records(warc) if kind == "response"
    }
    revisits = [h for kind, h in warc_records(warc) if kind == "revisit"]
    assert len(revisits) == PAGES
    for headers in revisits:
        assert headers.get_header("WARC-Profile").endswith("/identical-payload-digest")
        original = responses[headers.get_header("WARC-Refers-To")]
        assert headers.get_header("WARC-Payload-Digest") == original.get_header(
            "WARC-Payload-Digest"
        )
        url = headers.get_header("WARC-Target-URI")
        assert headers.get_header("WARC-Payload-Digest") == digests[url]


def test_a_finished_job_revisits_only_what_is_due_and_a_job_without_a_schedule_gets_one(
    served: tuple[TestSite, SiteServer], tmp_path: Path
) -> None:
    _, server = served
    job = tmp_path / "job"
    crawl_records(server.url, job)  # no revisits: no schedule kept
    before = len(server.log)
    again = run_cli(*crawl_args(server.url, job))
    assert again.returncode == 0 and "already finished" in again.stdout + again.stderr
    assert len(server.log) == before
    # Nothing is a day old yet: nothing is due, and the job finishes at once.
    crawl_records(server.url, job, "--revisit-after", "1d")
    assert page_hits(server, before) == []
    # Due now: the schedule built from the records sends their validators.
    records = crawl_records(server.url, job, "--revisit-after", "0")
    hits = page_hits(server, before)
    assert len(hits) == PAGES and all(h.if_none_match for h in hits)
    assert len(records) == 2 * PAGES
    # --max-pages counts a pass, and a pass it cuts short still finishes.
    records = crawl_records(server.url, job, "--revisit-after", "0", "--max-pages", "5")
    assert len(records) == 2 * PAGES + 5


def _emptied(schedule: Path) -> None:
    schedule.write_bytes(b"")


def _cut(schedule: Path) -> None:
    import sqlite3

    with sqlite3.connect(schedule) as db:
        db.execute("DELETE FROM revisits WHERE url IN (SELECT url FROM revisits LIMIT 10)")


def _garbled(schedule: Path) -> None:
    schedule.write_bytes(os.urandom(4096))


@pytest.mark.parametrize("spoil", [_emptied, _cut, _garbled], ids=["empty", "cut", "random"])
def test_a_damaged_schedule_is_refused_and_one_moved_away_is_built_again(
    served: tuple[TestSite, SiteServer], tmp_path: Path, spoil: Any
) -> None:
    """An emptied, cut or garbled revisit schedule is damage for verify,
    status and a pass (nothing fetched, exit 1); --repair moves it aside and
    every page is revisited from a schedule built from the records."""
    _, server = served
    job = tmp_path / "job"
    crawl_records(server.url, job, "--revisit-after", "1d")
    assert run_cli("verify", str(job)).returncode == 0
    schedule = job / "revisits.db"
    for name in ("revisits.db-wal", "revisits.db-shm"):
        (job / name).unlink(missing_ok=True)
    spoil(schedule)
    verify = run_cli("verify", str(job))
    assert verify.returncode == 1 and "damaged: the revisit schedule" in verify.stdout
    status = json.loads(run_cli("status", str(job), "--json").stdout)
    assert "the revisit schedule" in status["state"]
    before = len(server.log)
    refused = run_cli(*crawl_args(server.url, job, "--revisit-after", "0"))
    assert refused.returncode == 1, refused.stderr
    assert "the revisit schedule" in refused.stderr and "--repair" in refused.stderr
    assert len(server.log) == before  # nothing fetched
    records = crawl_records(server.url, job, "--revisit-after", "0", "--repair")
    hits = page_hits(server, before)
    assert len(hits) == PAGES and all(h.if_none_match for h in hits)
    assert {r["change"] for r in records[PAGES:]} == {"unchanged"}
    assert run_cli("verify", str(job)).returncode == 0


def test_a_schedule_moved_away_is_built_again(
    served: tuple[TestSite, SiteServer], tmp_path: Path
) -> None:
    _, server = served
    job = tmp_path / "job"
    crawl_records(server.url, job, "--revisit-after", "1d")
    for name in ("revisits.db", "revisits.db-wal", "revisits.db-shm"):
        (job / name).unlink(missing_ok=True)
    assert run_cli("verify", str(job)).returncode == 0  # missing: built again, not damage
    before = len(server.log)
    records = crawl_records(server.url, job, "--revisit-after", "0")
    hits = page_hits(server, before)
    assert len(hits) == PAGES and all(h.if_none_match for h in hits)
    assert {r["change"] for r in records[PAGES:]} == {"unchanged"}


def test_a_shared_crawl_revisits_through_redis(
    served: tuple[TestSite, SiteServer], tmp_path: Path, crawl: str
) -> None:
    import redis_server

    site, server = served
    shared = ["--redis", redis_server.url(), "--crawl", crawl]
    job = tmp_path / "job"
    crawl_records(server.url, job, *shared, "--revisit-after", "1d")
    site.edit(7)
    before = len(server.log)
    records = crawl_records(server.url, job, *shared, "--revisit-after", "0")[PAGES:]
    hits = page_hits(server, before)
    assert len(hits) == PAGES and all(h.if_none_match for h in hits)
    assert collections.Counter(h.status for h in hits) == {304: PAGES - 1, 200: 1}
    assert collections.Counter(r["change"] for r in records) == {
        "unchanged": PAGES - 1,
        "changed": 1,
    }
    status = run_cli("status", "--redis", redis_server.url(), "--crawl", crawl)
    assert f"scheduled      {PAGES}" in status.stdout and "next due" in status.stdout


def test_continuous_sees_an_edit_within_its_interval_and_keeps_its_schedule_across_sigkill(
    make_site: Any, tmp_path: Path
) -> None:
    site = TestSite(pages=10, size=2_000)
    server = make_site(site)
    job = tmp_path / "job"
    args = crawl_args(
        server.url, job, "--continuous", "--revisit-after", "1s", "--revisit-min", "0.5s"
    )
    lines = Lines(start_cli(*args))
    out = job / "pages.jsonl"

    def records() -> list[dict[str, Any]]:
        return read_records(out) if out.exists() else []

    def wait(done: Any, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"not seen in {timeout} s"
            assert lines.proc.poll() is None, lines.err
            time.sleep(0.05)

    wait(lambda: len(records()) >= 10)  # each page once
    site.edit(4)
    wait(lambda: any(r["url"].endswith("/page/4") and r["change"] == "changed" for r in records()))
    wait(lambda: len({r["url"] for r in records() if r["change"] == "unchanged"}) == 9)
    os.killpg(lines.proc.pid, signal.SIGKILL)
    lines.finish()
    status = run_cli("status", str(job))
    assert "next due" in status.stdout, status.stdout

    # Resumed, every page is fetched with the validators kept: none is new.
    before = len(server.log)
    kept = len(records())
    lines = Lines(start_cli(*args))
    wait(lambda: len(records()) >= kept + 10)
    os.killpg(lines.proc.pid, signal.SIGTERM)
    lines.finish()
    assert lines.proc.returncode == 130  # stopped, resumable, as any batch job
    resumed = page_hits(server, before)
    assert resumed and all(h.if_none_match for h in resumed), resumed
    assert {r["change"] for r in records()[kept:]} <= {"unchanged"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.skipif(
    not shutil.which("wayback", path=os.environ.get("MPCRAWLER_PYWB_BIN")),
    reason="pywb is not installed (set MPCRAWLER_PYWB_BIN to the bin folder of a venv with "
    "pywb; .ci/run makes one)",
)
def test_pywb_replays_an_unchanged_page_from_its_original_capture(
    make_site: Any, tmp_path: Path
) -> None:
    """A 304 revisit record replays as the page itself (httrack's could not:
    its issues #778 and #839)."""
    import requests

    site = TestSite(pages=5, size=2_000)
    server = make_site(site)
    job, warc = tmp_path / "job", tmp_path / "warc"
    crawl_records(server.url, job, "--warc", str(warc))
    crawl_records(server.url, job, "--warc", str(warc), "--revisit-after", "0")
    revisit = next(h for kind, h in warc_records(warc) if kind == "revisit")
    url = revisit.get_header("WARC-Target-URI")
    stamp = "".join(c for c in revisit.get_header("WARC-Date") if c.isdigit())[:14]
    bin_dir = Path(os.environ["MPCRAWLER_PYWB_BIN"])
    archive = tmp_path / "pywb"
    archive.mkdir()
    files = [str(p) for p in warc.glob("*.warc.gz")]
    for command in (["init", "c"], ["add", "c", *files]):
        subprocess.run(
            [str(bin_dir / "wb-manager"), *command],
            cwd=archive,
            check=True,
            capture_output=True,
            timeout=120,
        )
    port = _free_port()
    wayback = subprocess.Popen(
        [str(bin_dir / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
        cwd=archive,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = requests.get(f"http://127.0.0.1:{port}/c/{stamp}id_/{url}", timeout=10)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, "pywb did not start"
                time.sleep(0.1)
    finally:
        wayback.terminate()
        wayback.wait(timeout=30)
    assert answer.status_code == 200
    path = url.split(f":{server.port}", 1)[1]
    assert answer.content == site.body(site.page_index(path) or 0, server.port)
    when = email.utils.parsedate_to_datetime(answer.headers["Memento-Datetime"])
    assert when.strftime("%Y%m%d%H%M%S") == stamp  # the revisit, played from the original
