"""Batch jobs under fire: kills, signals, crashing and hanging workers, a full
disk, resume.  Every test checks, against the test site, that every reachable
page ends up recorded, and how often each was fetched.  The crawls use the
downloader of ``support.DOWNLOADER`` (the curl pass of ``.ci/run`` runs the
kills and signals again with the libcurl downloader's event loop)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile import serve
from support import DOWNLOADER, Lines, read_records, run_cli, small_disk, start_cli

from mpcrawler.testing.site import SiteServer, TestSite, serve_site

PAGES = 300


@pytest.fixture
def slow_site() -> Iterator[SiteServer]:
    with serve_site(TestSite(pages=PAGES, size=2_000), latency=0.02) as server:
        yield server


def start_crawl(
    url: str, job: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """The crawl as a real process in a process group of its own."""
    return start_cli(
        "crawl",
        url,
        "--job-dir",
        str(job),
        "--workers",
        "2",
        "--threads",
        "2",
        "--quiet",
        *DOWNLOADER,
        *extra,
        env=env,
    )


def crawl_to_end(url: str, job: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """The same crawl as start_crawl, run to its end (a first run or a resume)."""
    return run_cli(
        *("crawl", url, "--job-dir", str(job), "--workers", "2", "--threads", "2", "--quiet"),
        *(*DOWNLOADER, *extra),
    )


def wait_for_records(
    path: Path, count: int, proc: subprocess.Popen[str], timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} records after {timeout} s")


def page_urls(server: SiteServer) -> set[str]:
    base = server.url.rstrip("/")
    return {base + p for p in server.site.paths()}


def fetch_counts(server: SiteServer) -> Counter[str]:
    return Counter({p: n for p, n in server.hits.items() if p != "/robots.txt"})


def assert_all_recorded(records: list[dict[str, Any]], server: SiteServer) -> Counter[str]:
    urls = Counter(r["url"] for r in records)
    assert set(urls) == page_urls(server)
    return urls


def test_sigkill_of_everything_then_resume(slow_site: SiteServer, tmp_path: Path) -> None:
    job = tmp_path / "job"
    proc = start_crawl(slow_site.url, job)
    wait_for_records(job / "pages.jsonl", 80, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert json.loads((job / "job.json").read_text())["job"]["state"] == "running"
    second = crawl_to_end(slow_site.url, job)
    assert second.returncode == 0, second.stderr
    urls = assert_all_recorded(read_records(job / "pages.jsonl"), slow_site)
    twice = {u for u, n in urls.items() if n > 1}
    fetched_twice = {p for p, n in fetch_counts(slow_site).items() if n > 1}
    # In flight per worker: up to `threads` downloading and `threads` waiting
    # for the parser.  Only those can have been fetched twice; none is
    # recorded twice (a page whose ack the kill took is known by its record).
    in_flight = 2 * (2 + 2)
    assert not twice and len(fetched_twice) <= in_flight, (twice, fetched_twice)
    stats = json.loads((job / "stats.json").read_text())
    assert stats["state"] == "finished" and stats["runs"] == 2
    assert stats["pages"] == sum(urls.values())
    verified = run_cli("verify", str(job))
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGINT-group"])
def test_signal_stops_gracefully_and_resumes_exactly(
    slow_site: SiteServer, tmp_path: Path, how: str
) -> None:
    job = tmp_path / "job"
    proc = start_crawl(slow_site.url, job)
    wait_for_records(job / "pages.jsonl", 60, proc)
    if how == "SIGINT-group":  # Ctrl-C in a terminal reaches the whole group
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(getattr(signal, how))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "resume" in err
    assert json.loads((job / "job.json").read_text())["job"]["state"] == "interrupted"
    partial = read_records(job / "pages.jsonl")
    assert len(partial) < PAGES
    second = crawl_to_end(slow_site.url, job)
    assert second.returncode == 0, second.stderr
    urls = assert_all_recorded(read_records(job / "pages.jsonl"), slow_site)
    assert max(urls.values()) == 1  # a graceful stop loses and repeats nothing
    assert max(fetch_counts(slow_site).values()) == 1
    stats = json.loads((job / "stats.json").read_text())
    assert stats["pages"] == PAGES and stats["runs"] == 2


# ---------------------------------------------- stop signals to the whole group
Moment = Callable[[Path, Path, int, int], bool]  # (job, log, run, records before it)


def _log_after(log: Path, run: int) -> str:
    """The log of run ``run`` so far."""
    text = log.read_text() if log.exists() else ""
    start = text.find(f"crawl started (run {run})")
    return "" if start < 0 else text[start:]


def _records_now(job: Path) -> int:
    path = job / "pages.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _job_state(job: Path) -> str:
    try:
        state = json.loads((job / "job.json").read_text())["job"]
    except (OSError, ValueError, KeyError):
        return "(none)"
    return " ".join(f"{k}={state.get(k)}" for k in ("state", "runs", "pages", "message"))


def _job_runs(job: Path) -> int:
    try:
        return int(json.loads((job / "job.json").read_text())["job"]["runs"])
    except (OSError, ValueError, KeyError):
        return 0


def job_dir_exists(job: Path, log: Path, run: int, before: int) -> bool:
    return job.exists()


def job_json_written(job: Path, log: Path, run: int, before: int) -> bool:
    return _job_runs(job) >= run


def crawl_started(job: Path, log: Path, run: int, before: int) -> bool:
    return bool(_log_after(log, run))


def workers_started(job: Path, log: Path, run: int, before: int) -> bool:
    return "started (pid" in _log_after(log, run)


def new_records(n: int) -> Moment:
    def moment(job: Path, log: Path, run: int, before: int) -> bool:
        return _records_now(job) >= before + n

    moment.__name__ = f"{n}_new_records"
    return moment


def _wait_until(moment: Moment, proc: subprocess.Popen[str], *args: Any) -> None:
    """Wait (at most 60 s) for ``moment``, or for the crawl to end first."""
    deadline = time.monotonic() + 60
    while not moment(*args):
        if proc.poll() is not None:
            return
        assert time.monotonic() < deadline, f"{moment.__name__} not seen in 60 s"
        time.sleep(0.005)


def stop_runs(
    server: SiteServer, job: Path, log: Path, sig: signal.Signals, moments: list[Moment]
) -> list[tuple[str, int]]:
    """One run of the same crawl per moment, each stopped by ``sig`` to the
    whole process group at that moment; (moment, exit code) for each.

    For ``job_json_written`` the site's gate holds every page but the first
    until the signal is sent: a run writes job.json at its first checkpoint,
    and a crawl that ends before that (a fast downloader; the first run was
    stopped before it fetched anything) would write it only as it finished,
    so the signal came after the end (exit 0, and every later run found the
    job finished: the flake seen in CI)."""
    outcomes = []
    for moment in moments:
        before, run = _records_now(job), _job_runs(job) + 1
        if moment is job_json_written:
            server.gate.clear()
        proc = start_crawl(server.url, job, "--log-file", str(log))
        lines = Lines(proc)
        try:
            _wait_until(moment, proc, job, log, run, before)
            if proc.poll() is None:
                os.killpg(proc.pid, sig)
        finally:
            server.gate.set()
        out, err = lines.finish(timeout=60)
        assert proc.returncode in (130, 0), (moment.__name__, proc.returncode, err)
        assert "Traceback" not in err and "died" not in err, (moment.__name__, err)
        if proc.returncode == 130:
            assert "rerun the same command to resume" in err, (moment.__name__, err)
        outcomes.append((moment.__name__, proc.returncode))
        # (said with the outcomes, should they fail)
        print(f"{moment.__name__}: exit {proc.returncode}, then {_job_state(job)}")
        if proc.returncode != 130:
            print(f"  out {out.strip()[-300:]!r} err {err.strip()[-300:]!r}")
    return outcomes


@pytest.mark.parametrize(
    "sig, moments",
    [
        (
            signal.SIGTERM,
            [
                job_dir_exists,
                job_json_written,
                crawl_started,
                workers_started,
                new_records(1),
                new_records(3),
                new_records(10),
                new_records(25),
                new_records(50),
                new_records(80),
            ],
        ),
        (signal.SIGINT, [crawl_started, workers_started, new_records(5), new_records(40)]),
        (signal.SIGHUP, [workers_started, new_records(20)]),
    ],
    ids=["SIGTERM", "SIGINT", "SIGHUP"],
)
def test_group_signal_stops_gracefully_at_any_moment(
    slow_site: SiteServer, tmp_path: Path, sig: signal.Signals, moments: list[Moment]
) -> None:
    """What systemd, SLURM and ``kill -TERM -PGID`` do: every process of the
    job gets the signal.  Workers must not die of it; the master stops."""
    job, log = tmp_path / "job", tmp_path / "crawl.log"
    outcomes = stop_runs(slow_site, job, log, sig, moments)
    assert [code for _, code in outcomes].count(130) >= len(moments) - 1, outcomes
    last = crawl_to_end(slow_site.url, job)
    assert last.returncode == 0, last.stderr
    urls = assert_all_recorded(read_records(job / "pages.jsonl"), slow_site)
    assert max(urls.values()) == 1  # the grace was enough: nothing recorded twice
    assert max(fetch_counts(slow_site).values()) == 1  # nor fetched twice
    text = log.read_text()
    assert "died" not in text and "re-queueing" not in text


def test_second_group_signal_stops_at_once(tmp_path: Path) -> None:
    with serve_site(TestSite(pages=40, size=2_000), latency=0.3) as site:
        job = tmp_path / "job"
        proc = start_crawl(site.url, job, "--grace", "60")
        lines = Lines(proc)
        wait_for_records(job / "pages.jsonl", 10, proc)
        os.killpg(proc.pid, signal.SIGTERM)
        lines.wait_for(lambda out, err: any("finishing in-flight" in x for x in err))
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = lines.finish(timeout=30)
        assert proc.returncode == 130, err
        assert time.monotonic() - started < 15, err  # not the 60 s grace
        assert "Traceback" not in err and "died" not in err, err
        second = crawl_to_end(site.url, job)
        assert second.returncode == 0, (err, second.stderr)
        assert {r["url"] for r in read_records(job / "pages.jsonl")} == page_urls(site)


def test_worker_start_failure_stops_the_crawl_resumably(
    slow_site: SiteServer, tmp_path: Path
) -> None:
    job, log, marker = tmp_path / "job", tmp_path / "crawl.log", tmp_path / "no-start"
    proc = start_crawl(
        slow_site.url,
        job,
        "--log-file",
        str(log),
        "--downloader",
        "plugins:NoStartDownloader",
        env={"MPCRAWLER_TEST_NO_START": str(marker)},
    )
    lines = Lines(proc)
    wait_for_records(job / "pages.jsonl", 30, proc)
    marker.touch()  # from now on a worker cannot start
    victim = int(read_records(job / "pages.jsonl")[-1]["worker"].split("pid-")[1])
    os.kill(victim, signal.SIGKILL)
    _, err = lines.finish(timeout=60)
    assert proc.returncode == 1, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        "mpcrawler: error: worker processes cannot start: RuntimeError: no proxy configuration"
    ), err
    marker.unlink()
    again = crawl_to_end(slow_site.url, job, "--downloader", "plugins:NoStartDownloader")
    assert again.returncode == 0, again.stderr
    assert_all_recorded(read_records(job / "pages.jsonl"), slow_site)


def test_second_sigint_stops_at_once_and_stays_resumable(tmp_path: Path) -> None:
    with serve_site(TestSite(pages=40, size=2_000), latency=0.3) as site:
        job = tmp_path / "job"
        proc = start_crawl(site.url, job, "--grace", "60")
        wait_for_records(job / "pages.jsonl", 10, proc)
        lines = Lines(proc)
        proc.send_signal(signal.SIGINT)
        # The second signal must reach a master that has handled the first.
        lines.wait_for(lambda out, err: any("finishing in-flight" in x for x in err))
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = lines.finish(timeout=30)
        took = time.monotonic() - started
        assert proc.returncode == 130, err
        assert took < 15, (took, err)  # not the 60 s grace
        second = run_cli(
            "crawl", site.url, "--job-dir", str(job), "--workers", "2", "--threads", "4", "--quiet"
        )
        assert second.returncode == 0, (err, second.stderr)
        records = read_records(job / "pages.jsonl")
        assert {r["url"] for r in records} == page_urls(site), (err, second.stderr)


def test_finished_job_rerun_is_a_no_op(tmp_path: Path) -> None:
    with serve_site(TestSite(pages=30, size=1_000)) as site:
        job = tmp_path / "job"
        first = run_cli("crawl", site.url, "--job-dir", str(job), "--quiet")
        assert first.returncode == 0, first.stderr
        hits = sum(site.hits.values())
        again = run_cli("crawl", site.url, "--job-dir", str(job), "--quiet")
        assert again.returncode == 0, again.stderr
        assert "already finished" in again.stdout and "pages      30" in again.stdout
        assert sum(site.hits.values()) == hits
        assert len(read_records(job / "pages.jsonl")) == 30


def test_raising_max_pages_continues_a_finished_job(tmp_path: Path) -> None:
    with serve_site(TestSite(pages=50, size=1_000)) as site:
        job = tmp_path / "job"
        first = run_cli("crawl", site.url, "--job-dir", str(job), "--max-pages", "20", "--quiet")
        assert first.returncode == 0, first.stderr
        assert len(read_records(job / "pages.jsonl")) == 20
        same = run_cli("crawl", site.url, "--job-dir", str(job), "--max-pages", "20", "--quiet")
        assert "already finished" in same.stdout
        more = run_cli("crawl", site.url, "--job-dir", str(job), "--max-pages", "35", "--quiet")
        assert more.returncode == 0, more.stderr
        assert len(read_records(job / "pages.jsonl")) == 35
        rest = run_cli("crawl", site.url, "--job-dir", str(job), "--quiet")
        assert rest.returncode == 0, rest.stderr
        records = read_records(job / "pages.jsonl")
        assert len(records) == 50 and len({r["url"] for r in records}) == 50
        assert max(site.hits[p] for p in site.site.paths()) == 1


def test_conflicting_settings_and_other_formats_are_refused(tmp_path: Path) -> None:
    with serve_site(TestSite(pages=10, size=1_000)) as site:
        job = tmp_path / "job"
        assert run_cli("crawl", site.url, "--job-dir", str(job), "--quiet").returncode == 0
        other = run_cli("crawl", site.url + "page/3", "--job-dir", str(job), "--quiet")
        assert other.returncode == 2 and "seeds" in other.stderr
        assert len(other.stderr.strip().splitlines()) == 1
        scope = run_cli("crawl", site.url, "--job-dir", str(job), "--allow-domain", "x.test")
        assert scope.returncode == 2 and "allow-domain" in scope.stderr
        data = json.loads((job / "job.json").read_text())
        data["format"] = 99
        (job / "job.json").write_text(json.dumps(data))
        old = run_cli("crawl", site.url, "--job-dir", str(job), "--quiet")
        assert old.returncode == 2 and "job format 99" in old.stderr


def test_status_reads_without_touching(slow_site: SiteServer, tmp_path: Path) -> None:
    job = tmp_path / "job"
    proc = start_crawl(slow_site.url, job)
    wait_for_records(job / "pages.jsonl", 50, proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)

    def snapshot() -> dict[str, tuple[int, int]]:
        return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in job.rglob("*")}

    before = snapshot()
    status = run_cli("status", str(job), "--json")
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert snapshot() == before
    assert info["state"] == "interrupted"
    assert info["pages"] == len(read_records(job / "pages.jsonl"))
    assert info["queued"] > 0 and info["last_activity"]
    # One name for each state, the same in status and stats.json.
    stats = json.loads((job / "stats.json").read_text())
    assert "in_flight" not in info and info["taken"] == stats["frontier"]["taken"]
    assert {"queued", "buffered", "downloading", "parsing"} <= set(stats)
    assert "in_flight" not in stats["frontier"]
    table = run_cli("status", str(job))
    assert table.returncode == 0 and snapshot() == before
    lines = table.stdout.splitlines()
    assert not any(mark in table.stdout for mark in ("{", "[", "None", "'")), table.stdout
    assert f"pages          {info['pages']}" in lines and f"seeds          {slow_site.url}" in lines
    assert run_cli("status", str(tmp_path / "nope")).returncode == 2


# ------------------------------------------------------------ worker faults
def test_killed_worker_is_replaced_and_loses_nothing(slow_site: SiteServer, tmp_path: Path) -> None:
    job = tmp_path / "job"
    proc = start_crawl(slow_site.url, job, "--log-file", str(tmp_path / "crawl.log"))
    wait_for_records(job / "pages.jsonl", 40, proc)
    victim = int(read_records(job / "pages.jsonl")[-1]["worker"].split("pid-")[1])
    os.kill(victim, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    urls = assert_all_recorded(read_records(job / "pages.jsonl"), slow_site)
    assert max(urls.values()) == 1
    stats = json.loads((job / "stats.json").read_text())
    assert stats["worker_restarts"] == 1 and stats["errors"] == 0
    assert "died" in err
    log = (tmp_path / "crawl.log").read_text()
    assert "crawl started" in log and "died" in log and "crawl finished" in log
    assert "started (pid" in log and "started (pid" not in err  # info goes to the file only


def test_poison_page_is_dropped_after_three_crashes(slow_site: SiteServer, tmp_path: Path) -> None:
    job = tmp_path / "job"
    proc = crawl_to_end(
        slow_site.url,
        job,
        "--analyzer",
        "plugins:CrashingAnalyzer",
    )
    assert proc.returncode == 0, proc.stderr
    records = read_records(job / "pages.jsonl")
    urls = assert_all_recorded(records, slow_site)
    assert max(urls.values()) == 1
    [poison] = [r for r in records if r["url"].endswith("/page/13")]
    assert poison["error_kind"] == "worker_crash" and "crashed 3" in poison["error"]
    assert slow_site.hits["/page/13"] == 3
    stats = json.loads((job / "stats.json").read_text())
    assert stats["worker_restarts"] == 3


def test_hung_worker_is_killed(tmp_path: Path) -> None:
    with serve_site(TestSite(pages=40, size=1_000)) as site:
        job = tmp_path / "job"
        started = time.monotonic()
        proc = crawl_to_end(
            site.url,
            job,
            "--analyzer",
            "plugins:HangingAnalyzer",
            "--hang-timeout",
            "1",
        )
        assert proc.returncode == 0, proc.stderr
        assert time.monotonic() - started < 60
        records = read_records(job / "pages.jsonl")
        assert_all_recorded(records, site)
        [hung] = [r for r in records if r["url"].endswith("/page/7")]
        assert hung["error_kind"] == "worker_crash"
        assert "over 1 s" in proc.stderr


# ---------------------------------------------------------------- disk full


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk``, as another program might."""
    filler = disk / "filler"
    with open(filler, "wb") as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)
            f.flush()
    return filler


def test_disk_full_stops_cleanly_and_resumes(slow_site: SiteServer, tmp_path: Path) -> None:
    with small_disk(tmp_path / "small", "16m") as disk:
        job = disk / "job"
        proc = start_crawl(slow_site.url, job, "--cache-size", "20")
        wait_for_records(job / "pages.jsonl", 60, proc)
        filler = fill(disk)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, err
        assert "out of disk space" in err and "Traceback" not in err
        assert err.strip().splitlines() == [  # one line, not an ERROR for each echo
            line for line in err.strip().splitlines() if line.startswith("mpcrawler: error:")
        ], err
        written = (job / "pages.jsonl").read_bytes()  # its last line may be torn
        assert 0 < written.count(b"\n") < PAGES
        stats = job / "stats.json"
        assert not stats.exists() or json.loads(stats.read_text())  # never left empty
        status = json.loads(run_cli("status", str(job), "--json").stdout)
        assert status["state"].startswith("stopped: out of disk space"), status
        assert status["pages"] >= written.count(b"\n") - 1, status  # the real count
        filler.unlink()  # free some, then rerun the same command
        done = crawl_to_end(
            slow_site.url,
            job,
            "--cache-size",
            "20",
        )
        assert done.returncode == 0, done.stderr
        records = read_records(job / "pages.jsonl")
        urls = assert_all_recorded(records, slow_site)
        assert sum(urls.values()) - len(urls) <= 8  # repeated: at most what was in flight


# ---------------------------------------------------------- what one sees
def test_the_progress_bar_counts_a_resumed_job_once(tmp_path: Path) -> None:
    with serve_site(TestSite(pages=120, size=2_000), latency=0.02) as site:
        job = tmp_path / "job"
        proc = start_crawl(site.url, job)
        wait_for_records(job / "pages.jsonl", 40, proc)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
        before = len(read_records(job / "pages.jsonl"))
        resumed = run_cli("crawl", site.url, "--job-dir", str(job), "--workers", "2")
        assert resumed.returncode == 0, resumed.stderr
    # What the bar wrote: "\r57 pages 12.3/s [00:01], errors=0 ...", state after state.
    lines = resumed.stderr.replace("\r", "\n").splitlines()
    counts = [int(m.group(1)) for line in lines if (m := re.match(r"(\d+) pages ", line))]
    assert all(len(line.rstrip()) <= 80 for line in lines if " pages " in line), lines
    assert counts and counts[0] >= before, (before, counts[:3])
    assert max(counts) == counts[-1] == 120, counts  # never past the job's own count


def test_library_warnings_stay_off_the_terminal(tmp_path: Path) -> None:
    """XHTML served as text/html (BeautifulSoup warns about it) and a plug-in
    that warns: the terminal shows neither; the log has the plug-in's, once
    per worker at most."""
    xhtml = (
        b'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        b"<head><title>x</title></head><body><a href='/b'>b</a></body></html>"
    )
    routes = {"/": lambda h, n: (200, {"Content-Type": "text/html"}, xhtml)}
    with serve(routes, default=lambda h, n: (200, {"Content-Type": "text/html"}, xhtml)) as site:
        log = tmp_path / "crawl.log"
        proc = run_cli(
            "crawl",
            site.url + "/",
            "--job-dir",
            str(tmp_path / "job"),
            "--workers",
            "2",
            "--analyzer",
            "plugins:WarningAnalyzer",
            "--log-file",
            str(log),
        )
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr and "warn" not in proc.stderr.lower(), proc.stderr
    text = log.read_text()
    assert "XMLParsedAsHTMLWarning" not in text
    assert 1 <= text.count("a plug-in's own warning") <= 2  # once per worker at most
    records = read_records(tmp_path / "job" / "pages.jsonl")
    assert {r["title"] for r in records} == {"x"} and len(records) == 2


def test_a_second_crawl_on_a_running_job_dir_is_refused(make_site: Any, tmp_path: Path) -> None:
    """A job dir is held by the crawl running on it: a second crawl of it
    exits 2 with one line naming the first one's process, before writing
    anything; status still reads the running job; every page once."""
    from support import crawl_args

    site = make_site(TestSite(pages=200, size=2_000), latency=0.02)
    site.gate.clear()  # every page but the home page waits: the first crawl runs on
    job = tmp_path / "job"
    first = start_cli(*crawl_args(site.url, job))
    lines = Lines(first)
    deadline = time.monotonic() + 60
    while not (job / "pages.jsonl").exists() or not read_records(job / "pages.jsonl"):
        assert time.monotonic() < deadline and first.poll() is None, "no record"
        time.sleep(0.02)
    second = run_cli(*crawl_args(site.url, job))
    status = run_cli("status", str(job))
    site.gate.set()
    lines.finish()
    assert first.returncode == 0, lines.err
    assert second.returncode == 2
    assert second.stderr.strip() == (
        f"mpcrawler: error: job dir {job} is in use by another crawl (pid {first.pid}); "
        "wait for it to end, or use another --job-dir"
    )
    assert status.returncode == 0 and "running" in status.stdout, status
    urls = [r["url"] for r in read_records(job / "pages.jsonl")]
    assert len(urls) == len(set(urls)) == 200


def _damage_seen_pages(job: Path) -> None:
    path = job / "seen" / "cache.db"
    data = bytearray(path.read_bytes())
    for i in range(100, len(data), 7):
        data[i] = 0xAB
    path.write_bytes(data)


def _job_json(change: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    def damage(job: Path) -> None:
        data = json.loads((job / "job.json").read_text())
        (job / "job.json").write_text(json.dumps(change(data)))

    return damage


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda job: (job / "seen" / "cache.db").write_text("not a database"), "not a database"),
        (_damage_seen_pages, "malformed"),
        (_job_json(lambda data: [1, 2]), "a list, not an object"),
        (_job_json(lambda data: {**data, "job": {**data["job"], "pages": "x"}}), "job.pages"),
    ],
    ids=["seen-not-a-db", "seen-malformed", "job-a-list", "job-pages-a-string"],
)
def test_a_damaged_job_file_is_one_line_and_exit_1(
    site_300: SiteServer, tmp_path: Path, damage: Callable[[Path], None], said: str
) -> None:
    from support import crawl_args

    job = tmp_path / "job"
    assert run_cli(*crawl_args(site_300.url, job, "--max-pages", "20")).returncode == 0
    damage(job)
    proc = run_cli(*crawl_args(site_300.url, job, "--max-pages", "40"))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpcrawler: error: "), lines
    assert "is damaged" in lines[0] and said in lines[0], lines
    assert len(read_records(job / "pages.jsonl")) == 20  # nothing crawled


@pytest.mark.parametrize("spec", ["os:path", "json:dumps", "json:JSONDecoder"])
def test_a_pipeline_that_is_not_one_is_a_usage_error(tmp_path: Path, spec: str) -> None:
    proc = run_cli("crawl", "http://127.0.0.1:9/", "--pipeline", spec, "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a" in lines[0], lines
    assert not list(tmp_path.iterdir())


def test_a_full_warc_disk_stops_the_crawl_and_resumes(
    slow_site: SiteServer, tmp_path: Path
) -> None:
    """--warc on a disk that fills up: the crawl stops like a full job dir
    (exit 1, one line), records no page whose archive is missing, and a
    rerun once there is room completes it; every WARC file passes
    ``warcio check`` and every record points at its response record."""
    from warcio.archiveiterator import ArchiveIterator

    job = tmp_path / "job"
    with small_disk(tmp_path / "warc", "96k") as warc:
        first = crawl_to_end(slow_site.url, job, "--warc", str(warc))
        assert first.returncode == 1, first.stderr
        lines = first.stderr.strip().splitlines()
        assert len(lines) == 1 and "out of disk space" in lines[0], lines
        before = read_records(job / "pages.jsonl")
        assert 0 < len(before) < PAGES
        assert not [r for r in before if r["error_kind"] == "warc"]
        assert all(r["warc_file"] for r in before if r["status"] == 200)
        subprocess.run(["mount", "-o", "remount,size=16m", str(warc)], check=True)
        again = crawl_to_end(slow_site.url, job, "--warc", str(warc))
        assert again.returncode == 0, again.stderr
        records = read_records(job / "pages.jsonl")
        urls = assert_all_recorded(records, slow_site)
        assert sum(urls.values()) - len(urls) <= 8  # repeated: at most what was in flight
        files = sorted(warc.glob("*.warc.gz"))
        check = subprocess.run(
            [sys.executable, "-m", "warcio.cli", "check", *map(str, files)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert check.returncode == 0, check.stdout + check.stderr
        for record in records:
            with open(warc / record["warc_file"], "rb") as f:
                f.seek(record["warc_offset"])
                found = next(iter(ArchiveIterator(f)))
            assert found.rec_type == "response"
            assert found.rec_headers.get_header("WARC-Target-URI") == record["url"]


SLACK = 2 * 2 * 2 + 16  # the records a kill may leave unacked (JobDir.damage): 2 x 2 slots


def _recorded_since_checkpoint(job: Path) -> int:
    """Records written since job.json's last checkpoint (which counts them)."""
    try:
        checkpointed = json.loads((job / "job.json").read_text())["job"]["pages"]
    except (FileNotFoundError, ValueError, KeyError):
        checkpointed = 0
    return (job / "pages.jsonl").read_bytes().count(b"\n") - checkpointed


def _journal(job: Path) -> Path:
    return job / "frontier" / json.loads((job / "frontier" / "state.json").read_text())["journal"]


def _garble_journal(job: Path) -> None:
    path = _journal(job)
    data = bytearray(path.read_bytes())
    data[20:40] = bytes(b ^ 0xFF for b in data[20:40])
    path.write_bytes(data)


def _garble_cold_hosts(job: Path) -> None:
    """The frozen hosts' SQLite file overwritten, its write-ahead log lost."""
    cold = job / "frontier" / "cold-hosts.db"
    for end in ("-wal", "-shm"):
        cold.with_name(cold.name + end).unlink(missing_ok=True)
    cold.write_bytes(b"garbage" * 600)


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda job: (job / "frontier" / "state.json").unlink(), "state.json is missing"),
        (lambda job: _journal(job).write_bytes(b""), "emptied or cut short"),
        (lambda job: shutil.rmtree(job / "seen"), "cache.db is missing"),
        (_garble_journal, "a corrupt frame at byte 0"),
        (_garble_cold_hosts, "cold-hosts.db is unreadable"),
    ],
    ids=["state-removed", "journal-emptied", "seen-removed", "journal-garbled", "cold-garbled"],
)
def test_damaged_state_is_refused_not_resumed_as_if_whole(
    slow_site: SiteServer, tmp_path: Path, damage: Callable[[Path], None], said: str
) -> None:
    """A job killed mid-crawl resumes whole; with one of its stores lost or
    cut (each of these once resumed to 'finished' with hundreds of pages
    lost or recorded twice), verify and status say what is damaged, a
    resume refuses with one line and exit 1, crawling nothing, and --repair
    completes the crawl with no page missing."""
    job = tmp_path / "job"
    # Killed with more records since the last checkpoint than a kill may leave
    # unacked (verify's slack: an emptied journal shows as acks missing past
    # it); a kill right after a checkpoint leaves fewer: the crawl resumes and
    # is killed again.
    for _ in range(5):
        proc = start_crawl(slow_site.url, job, "--record-links")
        wait_for_records(job / "pages.jsonl", 120, proc)
        deadline = time.monotonic() + 30
        while _recorded_since_checkpoint(job) <= SLACK and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        assert json.loads((job / "job.json").read_text())["job"]["state"] == "running"
        assert run_cli("verify", str(job)).returncode == 0  # a kill alone is no damage
        if _recorded_since_checkpoint(job) > SLACK:
            break
    else:
        raise AssertionError("every kill came right after a checkpoint")
    damage(job)
    verify = run_cli("verify", str(job))
    assert verify.returncode == 1 and said in verify.stdout, verify.stdout
    status = json.loads(run_cli("status", str(job), "--json").stdout)
    assert status["state"].startswith("damaged: ") and said in status["state"], status
    before = (job / "pages.jsonl").read_bytes()
    resumed = crawl_to_end(slow_site.url, job)
    assert resumed.returncode == 1
    lines = resumed.stderr.strip().splitlines()
    assert len(lines) == 1 and "is damaged" in lines[0] and said in lines[0], lines
    assert "--repair" in lines[0] and "start a new --job-dir" in lines[0]
    assert (job / "pages.jsonl").read_bytes() == before  # nothing crawled
    # --repair goes on with the records and what the queue still holds, finds
    # again what was lost through the links the records kept, and says so.
    repaired = crawl_to_end(slow_site.url, job, "--record-links", "--repair")
    assert repaired.returncode == 0, repaired.stderr
    assert "repair: " in repaired.stderr and "rebuilt" in repaired.stderr, repaired.stderr
    urls = assert_all_recorded(read_records(job / "pages.jsonl"), slow_site)  # none missing
    assert sum(urls.values()) - len(urls) <= 8, urls.most_common(3)  # at most the kill's
    assert run_cli("verify", str(job)).returncode == 0


def test_a_finished_crawl_closes_its_frontier(slow_site: SiteServer, tmp_path: Path) -> None:
    """A crawl that finishes (its queue empty) closes its frontier, as one
    stopped does: the last checkpoint holds everything, so its journal is
    empty and the queue's files are gone, and the seen set's last batch is
    in its database.  (An empty frontier is falsy: it once went unclosed.)"""
    job = tmp_path / "job"
    done = crawl_to_end(slow_site.url, job, "--cache-size", "20")
    assert done.returncode == 0, done.stderr
    assert len(read_records(job / "pages.jsonl")) == PAGES
    frontier = job / "frontier"
    state = json.loads((frontier / "state.json").read_text())
    assert state["segments"] == [] and state["snapshot"] is None, state
    assert (frontier / state["journal"]).stat().st_size == 0
    assert not list(frontier.glob("*.seg")), sorted(p.name for p in frontier.iterdir())
    batch = job / "seen" / "batch"
    assert not batch.exists() or batch.stat().st_size == 0
    assert run_cli("verify", str(job)).returncode == 0


def _queue_file(job: Path, which: str) -> Path:
    """The frontier's snapshot, or the first file of its log, after a checkpoint."""
    state = json.loads((job / "frontier" / "state.json").read_text())
    name = state["snapshot"] if which == "snapshot" else state["segments"][0][0]
    return job / "frontier" / name


@pytest.mark.parametrize(
    ("which", "said"),
    [
        ("snapshot", "where the frontier's checkpoint counted"),
        ("log", "the URLs queued there cannot be read"),
    ],
)
def test_a_cut_queue_file_is_refused_and_repaired(
    slow_site: SiteServer, tmp_path: Path, which: str, said: str
) -> None:
    """A crawl stopped gracefully checkpoints its queue: the URLs it holds in
    memory (20 here) in the snapshot, the rest in the log's files.  One of
    them cut in half (each was once opened quietly, its URLs lost): verify
    says so, a resume refuses with one line and exit 1, and --repair
    completes the crawl with no page missing."""
    job = tmp_path / "job"
    proc = start_crawl(slow_site.url, job, "--record-links", "--cache-size", "20")
    wait_for_records(job / "pages.jsonl", 60, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    cut = _queue_file(job, which)
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    verify = run_cli("verify", str(job))
    assert verify.returncode == 1 and said in verify.stdout, verify.stdout
    resumed = crawl_to_end(slow_site.url, job, "--cache-size", "20")
    lines = resumed.stderr.strip().splitlines()
    assert resumed.returncode == 1 and len(lines) == 1 and said in lines[0], lines
    repaired = crawl_to_end(slow_site.url, job, "--record-links", "--repair", "--cache-size", "20")
    assert repaired.returncode == 0, repaired.stderr
    urls = assert_all_recorded(read_records(job / "pages.jsonl"), slow_site)
    assert max(urls.values()) == 1, urls.most_common(3)  # a graceful stop repeats nothing
    assert run_cli("verify", str(job)).returncode == 0


def test_a_job_dir_on_a_disk_full_from_the_start_is_recognised(
    slow_site: SiteServer, tmp_path: Path
) -> None:
    """The disk is full before the first job.json: one line, exit 1; status
    still knows the dir for a job's, and once there is room the same command
    crawls everything."""
    with small_disk(tmp_path / "small", "1m") as disk:
        job = disk / "job"
        filler = fill(disk)
        first = crawl_to_end(slow_site.url, job)
        assert first.returncode == 1, first.stderr
        lines = first.stderr.strip().splitlines()
        assert len(lines) == 1 and "out of disk space" in lines[0], lines
        assert not (job / "job.json").exists()
        status = run_cli("status", str(job))
        assert status.returncode == 0, status.stderr
        assert "job.json was never written" in status.stdout, status.stdout
        filler.unlink()
        done = crawl_to_end(slow_site.url, job)
        assert done.returncode == 0, done.stderr
        assert_all_recorded(read_records(job / "pages.jsonl"), slow_site)


@pytest.mark.parametrize("room", [8 << 10, 32 << 10, 128 << 10])
def test_a_disk_nearly_full_at_the_start_is_not_called_damage(
    slow_site: SiteServer, tmp_path: Path, room: int
) -> None:
    """With a few KiB free, the stores the job opens first (the seen set, the
    frozen hosts) cannot be written: that is said as a full disk, never as
    damage (which would invite a --repair that sets good stores aside)."""
    with small_disk(tmp_path / "small", "1m") as disk:
        job = disk / "job"
        filler = fill(disk)
        os.truncate(filler, filler.stat().st_size - room)
        first = crawl_to_end(slow_site.url, job)
        assert first.returncode == 1, first.stderr
        lines = first.stderr.strip().splitlines()
        assert len(lines) == 1 and "out of disk space" in lines[0], lines
        assert "damaged" not in first.stderr
        filler.unlink()
        done = crawl_to_end(slow_site.url, job)
        assert done.returncode == 0, done.stderr
        assert_all_recorded(read_records(job / "pages.jsonl"), slow_site)
