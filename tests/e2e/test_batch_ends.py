"""How a batch job's run ends and what it says: the budgets of a run
(--max-duration, --max-total-bytes), the command run at its end
(--on-finish), and the exit codes a cron job reads."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from hostile import links, serve
from support import DOWNLOADER, read_records, run_cli

from mpcrawler.testing.redis import free_port
from mpcrawler.testing.site import TestSite, serve_site

PAGES = 200


def crawl(url: str, job: Path, *extra: str) -> tuple[int, str, str]:
    done = run_cli(
        *("crawl", url, "--job-dir", str(job), "--workers", "2", "--threads", "2", "--quiet"),
        *(*DOWNLOADER, *extra),
    )
    return done.returncode, done.stdout, done.stderr


def test_a_byte_budget_ends_the_run_resumably_with_exit_3(tmp_path: Path) -> None:
    """--max-total-bytes 40KB over pages of 2 KB: the run ends gracefully
    (exit 3, one line naming the budget, the job saved); the same command
    without it goes on, and every page is fetched and recorded once."""
    job = tmp_path / "job"
    with serve_site(TestSite(pages=PAGES, size=2_000), latency=0.01) as site:
        code, _, err = crawl(site.url, job, "--max-total-bytes", "40KB")
        assert code == 3, err
        assert err.strip().splitlines()[-1] == (
            f"stopped: --max-total-bytes 40KB reached; rerun the same command to go on from {job}"
        )
        first = read_records(job / "pages.jsonl")
        assert 20 <= len(first) < PAGES
        status = json.loads(run_cli("status", str(job), "--json").stdout)
        assert status["state"] == "interrupted"
        assert (
            status["message"] == "--max-total-bytes 40KB reached; rerun the same command to go on"
        )
        code, _, err = crawl(site.url, job)
        assert code == 0, err
        hits = Counter({p: n for p, n in site.hits.items() if p != "/robots.txt"})
    records = read_records(job / "pages.jsonl")
    assert len(records) == len({r["url"] for r in records}) == PAGES
    assert max(hits.values()) == 1


def test_a_time_budget_ends_the_run_and_the_next_run_has_its_own(tmp_path: Path) -> None:
    """--max-duration 1s on a crawl that cannot take less than 5 s (200
    pages at 100 ms, 4 slots): exit 3 each run, each run adds pages."""
    job = tmp_path / "job"
    with serve_site(TestSite(pages=PAGES, size=1_000), latency=0.1) as site:
        counts = []
        for _ in range(2):
            code, _, err = crawl(site.url, job, "--max-duration", "1s")
            assert code == 3, err
            assert "stopped: --max-duration 1s reached" in err
            counts.append(len(read_records(job / "pages.jsonl")))
    assert 0 < counts[0] < counts[1] < PAGES


def test_the_finish_command_hears_how_the_run_ended(tmp_path: Path) -> None:
    """--on-finish runs once, after the outputs are closed, with the run's
    end in its environment; a command that fails is said, and the crawl's
    exit status stays its own."""
    job, seen = tmp_path / "job", tmp_path / "seen.env"
    names = "EXIT_STATUS|OUTCOME|JOB_DIR|OUT|STATS|PAGES|ERRORS|BUDGET"  # (not the tests' own)
    hook = f"env | grep -E '^MPCRAWLER_({names})=' > {seen}; wc -l < \"$MPCRAWLER_OUT\" >> {seen}"
    hook += "; exit 7"
    with serve_site(TestSite(pages=30, size=1_000)) as site:
        code, _, err = crawl(site.url, job, "--on-finish", hook)
    assert code == 0, err
    assert f"mpcrawler: --on-finish: {hook!r} ended with exit status 7" in err
    *variables, records = seen.read_text().splitlines()
    assert sorted(variables) == [
        "MPCRAWLER_ERRORS=0",
        "MPCRAWLER_EXIT_STATUS=0",
        f"MPCRAWLER_JOB_DIR={job}",
        f"MPCRAWLER_OUT={job / 'pages.jsonl'}",
        "MPCRAWLER_OUTCOME=finished",
        "MPCRAWLER_PAGES=30",
        f"MPCRAWLER_STATS={job / 'stats.json'}",
    ]
    assert records == "30"  # the records were all written when it ran


def test_the_finish_command_hears_of_a_failure_too(tmp_path: Path) -> None:
    """A job that cannot run (its job.json damaged): exit 1 with one line,
    and the finish command runs with MPCRAWLER_OUTCOME=failed."""
    job, seen = tmp_path / "job", tmp_path / "seen.env"
    with serve_site(TestSite(pages=10, size=1_000)) as site:
        code, _, err = crawl(site.url, job)
        assert code == 0, err
        (job / "job.json").write_text("[1, 2")
        hook = f"echo $MPCRAWLER_EXIT_STATUS $MPCRAWLER_OUTCOME > {seen}"
        code, _, err = crawl(site.url, job, "--on-finish", hook)
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert seen.read_text() == "1 failed\n"


def test_a_crawl_that_got_nothing_exits_4_and_its_rerun_tries_the_seeds_again(
    tmp_path: Path,
) -> None:
    """The site is down (a closed port): exit 4 with one line, the job
    failed, not finished; once the site is up, the same command fetches the
    seed again and crawls the site (a cron job whose site was down once)."""
    job, port = tmp_path / "job", free_port()
    url = f"http://127.0.0.1:{port}/"
    fast = ("--robots-retry-delay", "0.05")  # robots.txt's three tries, quickly
    code, out, err = crawl(url, job, *fast)
    assert code == 4, err
    assert err.strip().splitlines()[-1] == (
        f"mpcrawler: error: no page could be fetched ({url}: robots.txt unavailable: connection "
        "failed: connection refused (127.0.0.1)); rerun the same command to try its seeds again"
    )
    status = json.loads(run_cli("status", str(job), "--json").stdout)
    assert status["state"] == "failed" and status["message"].startswith("no page could be fetched")
    code, _, err = crawl(url, job, *fast)  # still down: the same
    assert code == 4, err
    with serve_site(TestSite(pages=20, size=1_000), port=port) as site:
        code, out, err = crawl(url, job, *fast)
        assert code == 0, err
        assert "already finished" not in out
        hits = Counter({p: n for p, n in site.hits.items() if p != "/robots.txt"})
    records = read_records(job / "pages.jsonl")
    answered = [r for r in records if r["status"] is not None]
    assert len(answered) == len({r["url"] for r in answered}) == 20
    assert [r["error_kind"] for r in records if r["url"] == url] == ["connection"] * 2 + [None]
    assert max(hits.values()) == 1
    again = run_cli("crawl", url, "--job-dir", str(job), "--quiet")  # finished now
    assert again.returncode == 0 and "already finished" in again.stdout


def test_retry_failed_fetches_again_the_pages_that_got_no_answer(tmp_path: Path) -> None:
    """Pages that answered 503 past their retries are the job's errors; the
    job finishes (exit 0).  --retry-failed fetches those pages again (a
    finished job's), and nothing else; a 404 is an answer, not retried."""
    job = tmp_path / "job"
    down = {"on": True}

    def flaky(handler: Any, n: int) -> Any:
        if down["on"]:
            return 503, {"Content-Type": "text/html"}, b"busy"
        return links(title="back")

    routes: dict[str, Any] = {
        "/": lambda h, n: links("/a", "/b", "/flaky/1", "/flaky/2", "/missing"),
        "/a": lambda h, n: links(title="a"),
        "/b": lambda h, n: links(title="b"),
        "/flaky/1": flaky,
        "/flaky/2": flaky,
        "/missing": lambda h, n: (404, {"Content-Type": "text/html"}, b"gone"),
    }
    with serve(routes) as server:
        url = server.url + "/"
        code, _, err = crawl(url, job, "--no-robots", "--retries", "1", "--retry-delay", "0")
        assert code == 0, err
        first = server.log.counts()
        down["on"] = False
        code, out, err = crawl(url, job, "--no-robots", "--retry-failed")
        assert code == 0, err
        assert "already finished" not in out
        counts = server.log.counts()
    assert first["/flaky/1"] == first["/flaky/2"] == 2  # a try and a retry
    assert counts["/flaky/1"] == counts["/flaky/2"] == 3  # and one more, asked for
    assert all(counts[p] == 1 for p in ("/", "/a", "/b", "/missing")), counts
    last = {r["url"].split("/", 3)[3]: r for r in read_records(job / "pages.jsonl")}
    assert last["flaky/1"]["status"] == last["flaky/2"]["status"] == 200
    assert last["missing"]["status"] == 404
