"""control DIR pause|resume|set|stop on a running crawl, seen from the
server's log (issue 26, the local part)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from hostile import Handler, Reply, links, serve
from support import Lines, assert_paced, crawl_args, read_records, run_cli, start_cli

PAGES = [f"/p{i}" for i in range(400)]


def slow_page(handler: Handler, n: int) -> Reply:
    time.sleep(0.05)  # the server's own latency, so the crawl lasts
    return links()


def wait_for(check: Callable[[], bool], timeout: float) -> bool:
    """Poll ``check`` every 20 ms for ``timeout`` seconds: whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def control(job: Path, *args: str) -> str:
    proc = run_cli("control", str(job), *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_pause_resume_set_and_stop_a_running_crawl(tmp_path: Path) -> None:
    job = tmp_path / "job"
    routes = {"/": lambda h, n: links(*PAGES)}
    with serve(routes, default=slow_page) as server:
        hits = server.log.hits
        proc = start_cli(*crawl_args(server.url + "/", job, "--no-robots", "--workers", "1"))
        output = Lines(proc)
        assert wait_for(lambda: len(hits) >= 10, 30), "the crawl did not start"

        assert control(job, "pause") == "pause: applied"
        paused_at = time.monotonic()
        status = json.loads(run_cli("status", str(job), "--json").stdout)
        # Requests in flight at the pause began before it: nothing starts after.
        assert not wait_for(lambda: any(h.start > paused_at for h in hits), 3.0)

        assert control(job, "resume") == "resume: applied"
        resumed_at = time.monotonic()
        assert wait_for(lambda: any(h.start > resumed_at for h in hits), 5.0)

        (job / "control" / "inbox" / "zz-broken.json").write_text("{not json", encoding="utf-8")
        done = job / "control" / "done" / "zz-broken.json"
        assert wait_for(done.exists, 5.0), "a malformed command was not answered"
        answered_at = time.monotonic()
        assert wait_for(lambda: any(h.start > answered_at for h in hits), 5.0)

        assert control(job, "set", "delay=0.5") == "set: applied"
        set_at = time.monotonic()
        assert wait_for(lambda: sum(h.start > set_at for h in hits) >= 5, 10.0)
        later = sorted(h.start for h in hits if h.start > set_at)

        assert control(job, "stop") == "stop: applied"
        _, stderr = output.finish()
    assert proc.returncode == 130, stderr
    assert status["paused"] is True and status["state"] == "running"
    assert json.loads(done.read_text())["answer"].startswith("refused: not a command file")
    assert_paced(later, 0.5)
    final = json.loads(run_cli("status", str(job), "--json").stdout)
    assert final["settings_set"] == {"delay": 0.5}
    assert [c.split(" -> ")[1] for c in final["commands"]] == [
        "applied",
        "applied",
        "refused: not a command file: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)",
        "applied",
        "applied",
    ]


def test_commands_are_checked_and_kept_for_the_next_start(tmp_path: Path) -> None:
    job = tmp_path / "job"
    with serve({"/": lambda h, n: links("/a")}, default=lambda h, n: links()) as server:
        first = run_cli(*crawl_args(server.url + "/", job, "--max-pages", "1"))
        assert first.returncode == 0, first.stderr
        for args, message in [
            (("set", "speed=3"), "not NAME=VALUE"),
            (("set", "delay=-1"), "set delay: must not be negative"),
            (("stop",), "is not running: nothing to stop"),
            (("pause", "x=1"), "pause takes no arguments"),
            (("exclude", "/a("), "not a regular expression"),
            (("exclude",), "exclude takes one REGEX"),
            (("frobnicate",), "COMMAND after DIR must be one of"),
            (("add-seeds", "http://u:s3cret@h.test/"), "credentials are not taken here"),
        ]:
            proc = run_cli("control", str(job), *args)
            assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
            assert "s3cret" not in proc.stderr
        assert control(job, "set", "max-pages=2") == (
            "set: the crawl is not running; applied at its next start"
        )
        again = run_cli(*crawl_args(server.url + "/", job, "--max-pages", "1"))
        assert again.returncode == 0, again.stderr
        counts = server.log.counts()
    assert counts["/a"] == 1  # the second run's budget was the command's, 2
    status = json.loads(run_cli("status", str(job), "--json").stdout)
    assert status["settings_set"] == {"max_pages": 2} and status["pages"] == 2


def test_seeds_added_to_a_running_crawl_go_ahead_of_its_queue(tmp_path: Path) -> None:
    job = tmp_path / "job"
    many = [f"/q{i}" for i in range(5000)]
    with (
        serve({"/": lambda h, n: links(*many)}, default=slow_page) as busy,
        serve(
            {"/": lambda h, n: links("/b1")}, default=lambda h, n: links(), host="127.0.0.2"
        ) as new,
    ):
        proc = start_cli(
            *crawl_args(
                busy.url + "/", job, "--no-robots", "--workers", "1", "--allow-private-networks"
            )
        )
        output = Lines(proc)
        assert wait_for(lambda: len(busy.log.hits) >= 10, 30), "the crawl did not start"
        answer = control(job, "add-seeds", new.url + "/", "--priority", "10")
        added_at = time.monotonic()
        assert answer == "add-seeds: applied: 1 queued, 0 seen before"
        assert wait_for(lambda: new.log.counts()["/"] == 1, 10.0), "the new host waits"
        first = min(h.start for h in new.log.hits)
        again = control(job, "add-seeds", new.url + "/")
        assert control(job, "stop") == "stop: applied"
        output.finish()
    assert first - added_at < 2.0
    assert again == "add-seeds: applied: 0 queued, 1 seen before"
    assert len(busy.log.hits) < 1000  # the 5,000 queued before were still waiting
    status = json.loads(run_cli("status", str(job), "--json").stdout)
    assert status["state"] == "interrupted"
    [record] = [r for r in read_records(job / "pages.jsonl") if r["url"] == new.url + "/"]
    assert record["new_links"] == 1  # /b1: the workers took the new host into the scope
    saved = json.loads((job / "job.json").read_text())["job"]["added_seeds"]
    assert saved == {new.url + "/": 0}  # kept for resumes, at its last priority


def test_exclude_drops_the_queued_urls_it_matches_and_refuses_new_links(tmp_path: Path) -> None:
    """The queued URLs that match are never fetched once the answer came;
    links found later that match are refused (counted under ``exclude``);
    the rest is crawled, and the exclusion is kept in the job."""
    job = tmp_path / "job"
    many = [f"/q{i}" for i in range(600)]
    routes = {"/": lambda h, n: links(*many)}

    def page(handler: Handler, n: int) -> Reply:
        time.sleep(0.02)
        if handler.path.count("/") > 1:
            return links()
        return links(handler.path + "/odd1", handler.path + "/even2")

    with serve(routes, default=page) as server:
        hits = server.log.hits
        proc = start_cli(*crawl_args(server.url + "/", job, "--no-robots", "--workers", "1"))
        output = Lines(proc)
        assert wait_for(lambda: len(hits) >= 20, 30), "the crawl did not start"
        answer = control(job, "exclude", r"[13579]$")
        answered_at = time.monotonic()
        _, stderr = output.finish(120)
    assert proc.returncode == 0, stderr
    dropped = int(answer.split("applied: ")[1].split()[0])
    late = [h.path for h in hits if h.start > answered_at and h.path.endswith(tuple("13579"))]
    assert late == []
    fetched_before = {h.path for h in hits if h.start <= answered_at}
    odd_queued = [u for u in many if u[-1] in "13579" and u not in fetched_before]
    found_odd = sum(1 for path in fetched_before if path in many)  # each linked to its /odd1
    assert len(odd_queued) - 4 <= dropped <= len(odd_queued) + found_odd  # 4: in flight
    counts = server.log.counts()
    assert all(counts[u] == 1 for u in many if u[-1] in "02468")  # the rest was crawled
    stats = json.loads((job / "stats.json").read_text())
    assert stats["links_dropped"]["exclude"] > 0  # /odd1 links found after the command
    status = json.loads(run_cli("status", str(job), "--json").stdout)
    assert status["excluded"] == [r"[13579]$"]
    assert status["commands"][-1].startswith("exclude regex=[13579]$ -> applied: ")
