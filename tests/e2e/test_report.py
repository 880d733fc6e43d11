"""``report``: one self-contained HTML file, rendered by a real browser
(Debian's chromium, headless; .ci/run installs it) with nothing to fetch."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from hostile import html, links, redirect, serve
from support import Lines, chromium_flags, crawl_records, run_cli, start_cli

from mpcrawler.testing.site import TestSite, serve_site

CHARTS = ("rate", "changes", "statuses", "errors", "depths", "sizes", "download")
TABLES = ("overview", "top-hosts", "error-hosts", "slowest", "runs", "settings")


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A job of two runs (the first stopped by --max-pages) with errors."""
    job = tmp_path_factory.mktemp("report") / "job"
    routes = {
        "/": lambda h, n: links(*(f"/p{i}" for i in range(12)), "/gone", "/broken", "/moved"),
        "/gone": lambda h, n: html("no", status=404),
        "/broken": lambda h, n: html("oops", status=500),
        "/moved": lambda h, n: redirect("/p3"),
    }
    with serve(routes, default=lambda h, n: links("/", "/p1")) as site:
        crawl_records(site.url + "/", job, "--max-pages", "6", "--retries", "0")
        crawl_records(site.url + "/", job, "--retries", "0")
    return job


def test_the_report_is_one_file_with_every_part(job: Path) -> None:
    def files() -> dict[str, bytes]:
        return {str(p): p.read_bytes() for p in job.rglob("*") if p.is_file()}

    before = files()
    proc = run_cli("report", str(job))
    assert proc.returncode == 0, proc.stderr
    page = (job / "report.html").read_text(encoding="utf-8")
    after = files()
    after.pop(str(job / "report.html"))
    assert after == before  # nothing else in the job dir touched
    for part in CHARTS:
        assert f'<svg id="{part}"' in page, part
    for part in TABLES:
        assert f'<table id="{part}"' in page, part
    assert "<script" not in page and not re.search(r"\b(src|href)\s*=", page)
    assert "run 2" in page  # the resume, marked on the time axis
    assert ">404<" in page and ">500<" in page and ">http_4xx<" in page


def test_a_browser_shows_it_without_errors(job: Path, tmp_path: Path) -> None:
    assert run_cli("report", str(job)).returncode == 0
    flags = chromium_flags(tmp_path / "profile", "--window-size=1200,1800")
    url = (job / "report.html").as_uri()
    shot = tmp_path / "report.png"
    drawn = subprocess.run(
        [*flags, f"--screenshot={shot}", url], capture_output=True, text=True, timeout=120
    )
    assert shot.exists() and shot.stat().st_size > 20_000, drawn.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    for part in CHARTS:
        assert f'<svg id="{part}"' in dom.stdout, part
    assert dom.stdout.count("<rect") >= 10  # the bars were laid out
    for log in (drawn.stderr, dom.stderr):
        assert "CONSOLE" not in log and "Failed to load resource" not in log, log[-2000:]


def test_a_running_job_can_be_reported(tmp_path: Path) -> None:
    with serve_site(TestSite(pages=200, size=2_000), latency=0.05) as site:
        job = tmp_path / "job"
        proc = start_cli("crawl", site.url, "--job-dir", str(job), "--workers", "2", "--quiet")
        lines = Lines(proc)
        records, deadline = job / "pages.jsonl", time.monotonic() + 60
        while not (records.exists() and b"\n" in records.read_bytes()):
            assert proc.poll() is None and time.monotonic() < deadline, lines.err
            time.sleep(0.01)
        report = run_cli("report", str(job))
        assert report.returncode == 0, report.stderr
        assert '<svg id="statuses"' in (job / "report.html").read_text()
        lines.finish(timeout=120)
        assert proc.returncode == 0, lines.err
    assert len(crawl_records(site.url, job)) == 200  # the crawl went on untouched
