"""The tests' warm CLI (``tests/warm_cli.py``) runs ``python -m mpcrawler`` as a
cold interpreter does: the same output and status, its own environment
(read again by the modules that read it on import), working directory and
death by a signal, and a bound in time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import support
import warm_cli
from support import Lines, crawl_args, run_cli, start_cli

from mpcrawler.testing.site import SiteServer


def cold(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    warm, support._WARM = support._WARM, None
    try:
        return run_cli(*args, cwd=cwd)
    finally:
        support._WARM = warm


def served_then_stopped(warm: bool) -> tuple[bool, str, int]:
    """``serve-site`` started as ``start_cli`` starts it, until SIGTERM: it
    led its own process group; its first line; its status."""
    kept, support._WARM = support._WARM, support._WARM if warm else None
    try:
        proc = start_cli("serve-site", "--port", "0", "--pages", "1")
    finally:
        support._WARM = kept
    lines = Lines(proc)
    lines.wait_for(lambda out, err: bool(out))
    leader = os.getpgid(proc.pid) == proc.pid
    proc.send_signal(signal.SIGTERM)
    lines.finish()
    return leader, lines.out[0].split(" http")[0], proc.returncode


@pytest.fixture(autouse=True)
def _warm_on() -> None:
    if support._WARM is None:
        pytest.skip("MPCRAWLER_COLD_CLI=1: every run is cold")


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("crawl", "--help"),
        ("crawl", "http://127.0.0.1/", "--workers", "zero"),  # a usage error: 2, one line
        ("no-such-command",),
    ],
)
def test_a_warm_run_answers_as_a_cold_one(args: tuple[str, ...], tmp_path: Path) -> None:
    warm = run_cli(*args, cwd=tmp_path)
    assert (warm.returncode, warm.stdout, warm.stderr) == (
        (expected := cold(*args, cwd=tmp_path)).returncode,
        expected.stdout,
        expected.stderr,
    )
    assert list(tmp_path.iterdir()) == []


def test_a_run_has_its_own_environment_and_directory(site_300: SiteServer, tmp_path: Path) -> None:
    """A fault point named in the run's environment kills it (SIGKILL, as the
    crawl is no group leader here); the job directory is the run's own
    working directory's; a next run without the variable finishes."""
    killed = run_cli(
        *crawl_args(site_300.url, Path("job")),
        cwd=tmp_path,
        env={"MPCRAWLER_FAULT": "record-written:3"},
    )
    assert killed.returncode == -9, killed.stderr
    assert (tmp_path / "job" / "job.json").exists()
    resumed = run_cli(*crawl_args(site_300.url, Path("job")), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert len(support.read_records(tmp_path / "job" / "pages.jsonl")) == 300


def test_a_started_run_leads_its_group_and_ends_as_a_cold_one() -> None:
    """A SIGTERM sent as soon as the line is read is a clean stop (it may
    land in the print: serve-site exited 130 then, in 8 of 20 runs)."""
    stopped = (True, "serving 1 pages at", 0)
    assert served_then_stopped(warm=True) == served_then_stopped(warm=False) == stopped


def test_a_run_past_its_timeout_is_killed(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_cli("serve-site", "--port", "0", "--pages", "1", timeout=1, cwd=tmp_path)


def test_what_an_interpreter_reads_at_its_start_makes_a_run_cold() -> None:
    base = {"PATH": "/bin", "PYTHONPATH": "a"}
    assert warm_cli.warm_enough({**base, "MPCRAWLER_FAULT": "x:1"}, base)
    assert not warm_cli.warm_enough({**base, "PYTHONHASHSEED": "0"}, base)
    assert not warm_cli.warm_enough({**base, "PYTHONPATH": "b"}, base)
    assert not warm_cli.warm_enough({**base, "LC_ALL": "C"}, base)


def test_a_helper_forked_for_a_run_keeps_only_the_descriptors_passed(tmp_path: Path) -> None:
    """multiprocessing's resource tracker, forked as a run forks it: it holds
    only stdin, stdout, stderr and the pipe passed (a descriptor of the run's,
    such as its job directory's lock, would outlive the run), and ends at the
    pipe's end with status 0."""
    import time

    read, write = os.pipe()
    unrelated = os.open(tmp_path / "lock", os.O_CREAT | os.O_RDWR)
    try:
        code = f"from multiprocessing.resource_tracker import main;main({read})"
        pid = warm_cli._fork_helper(sys.executable, [sys.executable, "-c", code], [read])
    finally:
        os.close(read)
        os.close(unrelated)
    try:
        deadline = time.monotonic() + 30
        held: set[str] = set()
        while held != {"0", "1", "2", str(read)} and time.monotonic() < deadline:
            held = set(os.listdir(f"/proc/{pid}/fd"))
            time.sleep(0.01)
        assert held == {"0", "1", "2", str(read)}
        os.close(write)
        write = -1
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    finally:
        if write >= 0:  # failed: the helper may hold the pipe's end itself
            os.close(write)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
