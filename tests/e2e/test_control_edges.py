"""Control commands at their edges (issue 40): an answer survives a kill,
``set`` keeps the command line's bounds, junk in the inbox is refused
without stopping the crawl, and a command's size and secrets are bounded."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from hostile import Handler, Reply, links, serve
from support import Lines, crawl_args, run_cli, start_cli, wait_group_gone

from mpcrawler.control.commands import MAX_COMMAND_BYTES, MAX_SEEDS
from mpcrawler.control.inbox import write_command

PAGES = [f"/p{i}" for i in range(400)]


def slow_page(handler: Handler, n: int) -> Reply:
    time.sleep(0.05)  # the server's own latency, so the crawl lasts
    return links()


def wait_for(check, timeout: float, every: float = 0.02) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return bool(check())


def job_state(job: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((job / "job.json").read_text())["job"]


@pytest.mark.parametrize(
    "command, args, kept",
    [
        ("pause", {}, lambda state: state["paused"] is True),
        ("exclude", {"regex": "/p1"}, lambda state: state["excluded"] == ["/p1"]),
        ("set", {"delay": "0.5"}, lambda state: state["overrides"] == {"delay": 0.5}),
    ],
)
def test_a_command_answered_applied_survives_a_kill_at_once(
    tmp_path: Path,
    command: str,
    args: dict,
    kept,  # type: ignore[no-untyped-def,type-arg]
) -> None:
    """SIGKILL the crawl the moment the answer appears: job.json holds what
    the command changed, so the resumed crawl runs as the answer said."""
    job = tmp_path / "job"
    with serve({"/": lambda h, n: links(*PAGES)}, default=slow_page) as server:
        proc = start_cli(*crawl_args(server.url + "/", job, "--no-robots", "--workers", "1"))
        output = Lines(proc)
        try:
            assert wait_for(lambda: len(server.log.hits) >= 5, 30), "the crawl did not start"
            ident = write_command(job, command, args)
            done = job / "control" / "done" / f"{ident}.json"
            assert wait_for(done.exists, 30, every=0.001), "no answer"
            os.killpg(proc.pid, signal.SIGKILL)  # at the answer's moment
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            wait_group_gone(proc.pid)
            output.finish()
    assert json.loads(done.read_text())["answer"].startswith("applied")
    assert kept(job_state(job)), job_state(job)


def test_set_keeps_the_command_lines_bounds(tmp_path: Path) -> None:
    job = tmp_path / "job"
    with serve({"/": lambda h, n: links("/a")}, default=lambda h, n: links()) as server:
        first = run_cli(*crawl_args(server.url + "/", job, "--no-robots", "--max-pages", "1"))
        assert first.returncode == 0, first.stderr
        for value, why in [
            ("delay=inf", "set delay: must be at most 3600"),
            ("delay=1e300", "set delay: must be at most 3600"),
            ("delay=nan", "set delay: must not be negative"),
            ("host-concurrency=99999999999999999999", "must be at most 1024"),
            ("max-pages=1.5", "'1.5' is not an integer"),
        ]:
            proc = run_cli("control", str(job), "set", value)
            assert (proc.returncode, proc.stderr.count("\n")) == (2, 1), proc.stderr
            assert why in proc.stderr
        # A hand-written command is checked by the crawl the same way: refused.
        write_command(job, "set", {"delay": float("inf")})
        again = run_cli(*crawl_args(server.url + "/", job, "--no-robots", "--max-pages", "2"))
        assert again.returncode == 0, again.stderr
        assert "refused: set delay: must be at most 3600" in again.stderr
        assert job_state(job)["overrides"] == {}
        assert "Infinity" not in (job / "job.json").read_text()
        # A job.json edited (or left by an older version) with one is refused at resume.
        data = json.loads((job / "job.json").read_text())
        data["job"]["overrides"] = {"delay": 1e300}
        (job / "job.json").write_text(json.dumps(data))
        refused = run_cli(*crawl_args(server.url + "/", job, "--no-robots", "--max-pages", "3"))
        assert refused.returncode == 1 and "--delay=1e+300: must be at most 3600" in refused.stderr
        assert "control" in refused.stderr and "set NAME=VALUE" in refused.stderr
        # ... and the fix it names works: a set sent while it is not running.
        assert run_cli("control", str(job), "set", "delay=0").returncode == 0
        mended = run_cli(*crawl_args(server.url + "/", job, "--no-robots", "--max-pages", "3"))
        assert mended.returncode == 0, mended.stderr
        assert job_state(job)["overrides"] == {"delay": 0.0}


def test_a_large_delay_set_then_undone_unsticks_the_crawl(tmp_path: Path) -> None:
    """A delay of an hour, set while pages are in flight, holds the crawl;
    set back to 0, it goes on and finishes.  The pages in flight wait for
    the first command's answer (a gate, not the server's latency), so the
    crawl cannot end before the delay holds it, however slow the commands;
    what started before the second was sent is bounded, not timed."""
    job = tmp_path / "job"
    gate = threading.Event()

    def gated(handler: Handler, n: int) -> Reply:
        gate.wait(60)
        return links()

    with serve({"/": lambda h, n: links(*PAGES[:60])}, default=gated) as server:
        hits = server.log.hits
        proc = start_cli(*crawl_args(server.url + "/", job, "--no-robots", "--workers", "1"))
        output = Lines(proc)
        try:
            assert wait_for(lambda: len(hits) >= 2, 30), "the crawl did not start"  # / and a page
            held = run_cli("control", str(job), "set", "delay=3600")
            assert held.stdout.strip() == "set: applied"
        finally:
            gate.set()
        undoing = time.monotonic()
        assert run_cli("control", str(job), "set", "delay=0").stdout.strip() == "set: applied"
        _, stderr = output.finish(60)
    assert proc.returncode == 0, stderr
    assert server.log.counts()["/p59"] == 1  # the crawl finished after the delay went
    # Held: before the delay was undone, only "/", the slots' pages in flight
    # (4) and one more at most had started.
    before = [h.path for h in hits if h.start <= undoing]
    assert len(before) <= 6, before


def test_junk_in_the_inbox_is_refused_and_the_crawl_goes_on(tmp_path: Path) -> None:
    """A directory, a FIFO, a link and an oversized file named *.json: each
    answered "refused" and moved out of the inbox; a command sent after them
    is applied, and the crawl and its resume run as before."""
    job = tmp_path / "job"
    inbox = job / "control" / "inbox"
    with serve({"/": lambda h, n: links(*PAGES)}, default=slow_page) as server:
        args = crawl_args(server.url + "/", job, "--no-robots", "--workers", "1")
        proc = start_cli(*args)
        output = Lines(proc)
        assert wait_for(lambda: len(server.log.hits) >= 5, 30), "the crawl did not start"
        inbox.mkdir(parents=True, exist_ok=True)
        (inbox / "a-dir.json").mkdir()
        os.mkfifo(inbox / "b-fifo.json")
        (inbox / "c-link.json").symlink_to("/dev/zero")
        (inbox / "d-big.json").write_bytes(b" " * (MAX_COMMAND_BYTES + 1))
        answer = run_cli("control", str(job), "pause")
        assert answer.stdout.strip() == "pause: applied", answer.stdout + answer.stderr
        os.killpg(proc.pid, signal.SIGTERM)
        _, stderr = output.finish(60)
        assert proc.returncode == 130, stderr
        done = job / "control" / "done"
        for name, why in [
            ("a-dir.json", "not a regular file"),
            ("b-fifo.json", "not a regular file"),
            ("c-link.json", "Too many levels of symbolic links"),
            ("d-big.json", f"larger than {MAX_COMMAND_BYTES} bytes"),
        ]:
            answered = json.loads((done / name).read_text())["answer"]
            assert answered.startswith("refused: not a command file: ") and why in answered
        assert sorted(os.listdir(inbox)) == []
        assert len(os.listdir(job / "control" / "refused")) == 3  # the dir, FIFO and link
        assert run_cli("control", str(job), "resume").returncode == 0  # at its next start
        resumed = run_cli(*args, "--max-pages", "20")
        assert resumed.returncode == 0, resumed.stderr
    assert json.loads(run_cli("status", str(job), "--json").stdout)["pages"] >= 20


def test_a_command_carries_no_secret_and_no_unbounded_payload(tmp_path: Path) -> None:
    job = tmp_path / "job"
    log = tmp_path / "crawl.log"
    secret = "s3cretpw"
    with serve({"/": lambda h, n: links("/a")}, default=lambda h, n: links()) as server:
        args = crawl_args(server.url + "/", job, "--no-robots", "--log-file", str(log))
        first = run_cli(*args, "--reject-regex", "/never", "--max-pages", "1")
        assert first.returncode == 0, first.stderr
        write_command(job, "add-seeds", {"urls": [f"http://user:{secret}@127.0.0.1/x"]})
        too_many = [f"{server.url}/m{i}" for i in range(MAX_SEEDS + 1)]
        write_command(job, "add-seeds", {"urls": too_many})
        big = json.dumps({"command": "add-seeds", "args": {"urls": ["http://h.test/" + "x" * 99]}})
        (job / "control" / "inbox" / "zz-huge.json").write_text(big[:-2] + " " * (7 << 20) + "]}")
        write_command(job, "add-seeds", {"urls": [server.url + "/b", server.url + "/never"]})
        again = run_cli(*args, "--reject-regex", "/never", "--max-pages", "3")
    assert again.returncode == 0, again.stderr
    outputs = {"stderr": again.stderr, "log": log.read_text()}
    for path in (job / "control" / "done").iterdir():
        outputs[path.name] = path.read_text()
    for where, text in outputs.items():
        assert secret not in text, where
        assert max(map(len, text.splitlines())) < 2000, where  # no 16 MB log line
    answers = [json.loads(t)["answer"] for n, t in outputs.items() if n.endswith(".json")]
    assert sum("credentials are not taken here" in a for a in answers) == 1
    assert sum(f"at most {MAX_SEEDS} URLs" in a for a in answers) == 1
    assert sum(f"larger than {MAX_COMMAND_BYTES} bytes" in a for a in answers) == 1
    # Only what was admitted is kept (not the refused /never, nor the refused commands).
    assert job_state(job)["added_seeds"] == {server.url + "/b": 0}
    assert (job / "job.json").stat().st_size < 20_000


def test_the_command_line_refuses_what_the_crawl_would(tmp_path: Path) -> None:
    job = tmp_path / "job"
    with serve({"/": lambda h, n: links()}) as server:
        assert run_cli(*crawl_args(server.url + "/", job, "--no-robots")).returncode == 0
    many = tmp_path / "many.txt"
    many.write_text("".join(f"http://h.test/{i}\n" for i in range(MAX_SEEDS + 1)))
    long_urls = tmp_path / "long.txt"
    long_urls.write_text("".join(f"http://h.test/{i}/{'x' * 200}\n" for i in range(6000)))
    for args, why in [
        (("add-seeds", "--file", str(many)), f"at most {MAX_SEEDS} URLs a command"),
        (("add-seeds", "--file", str(long_urls)), f"larger than {MAX_COMMAND_BYTES} bytes"),
        (("add-seeds", "http://u:pw@h.test/"), "add-seeds http://***@h.test/: credentials"),
    ]:
        proc = run_cli("control", str(job), *args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert why in proc.stderr and "pw" not in proc.stderr
    assert not (job / "control" / "inbox").exists() or not os.listdir(job / "control" / "inbox")
