"""What the tests share besides fixtures: the CLI as a real subprocess, and
its records.  Imported as ``support`` (the tests' root folder is on
sys.path), never through conftest."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import warm_cli

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
CLI_TIMEOUT = 120


def _cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **(extra or {})}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")])
    return env


def run_cli(
    *args: str,
    timeout: float = CLI_TIMEOUT,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m mpcrawler ARGS`` and wait for it, bounded in time: in a
    process forked from a warm interpreter (``warm_cli``), or started cold
    where a fork would not start as ``python -m`` does."""
    run_env = _cli_env(env)
    if (warm := _warm_for(run_env)) is not None:
        return warm.run(args, run_env, str(cwd or os.getcwd()), timeout)
    return subprocess.run(
        [sys.executable, "-m", "mpcrawler", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=run_env,
        check=False,
    )


# The warm interpreter runs fork from, unless MPCRAWLER_COLD_CLI=1.
_WARM = None if os.environ.get("MPCRAWLER_COLD_CLI") == "1" else warm_cli.WarmCli(_cli_env())


def _warm_for(run_env: dict[str, str]) -> warm_cli.WarmCli | None:
    """The warm interpreter a run with ``run_env`` forks from; None: start it cold."""
    return _WARM if _WARM is not None and warm_cli.warm_enough(run_env, _WARM.env) else None


def _as_in_a_terminal() -> None:
    """SIGHUP as a terminal session has it, even if the tests run under nohup
    (whose SIG_IGN the child would inherit, and rightly obey)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def start_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``python -m mpcrawler ARGS`` in a process group of its own, with
    stdout and stderr piped (read them with :class:`Lines`): forked from the
    warm interpreter as ``run_cli`` does, or started cold."""
    run_env = _cli_env(env)
    if (warm := _warm_for(run_env)) is not None:
        return warm.start(args, run_env, os.getcwd(), session=True)  # type: ignore[return-value]
    return subprocess.Popen(
        [sys.executable, "-m", "mpcrawler", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=run_env,
        start_new_session=True,
        preexec_fn=_as_in_a_terminal,
    )


class Lines:
    """Reads a running process's stdout and stderr line by line, in threads,
    so a test can wait (bounded) for a line the process prints instead of
    sleeping, and still collect everything at the end."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.out: list[str] = []
        self.err: list[str] = []
        self._changed = threading.Condition()
        self._threads = [
            threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            for stream, lines in ((proc.stdout, self.out), (proc.stderr, self.err))
            if stream is not None
        ]
        for thread in self._threads:
            thread.start()

    def _read(self, stream: Any, lines: list[str]) -> None:
        for line in stream:
            with self._changed:
                lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(
        self, matches: Callable[[list[str], list[str]], bool], timeout: float = 60
    ) -> None:
        """Return once ``matches(out_lines, err_lines)``; fail after ``timeout`` s
        or if the process ends first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not matches(self.out, self.err):
                left = deadline - time.monotonic()
                alive = any(t.is_alive() for t in self._threads)
                if left <= 0 or not alive:
                    raise AssertionError(
                        f"not seen within {timeout} s (process alive: {alive}): "
                        f"stdout {''.join(self.out)[-2000:]!r} stderr {''.join(self.err)[-2000:]!r}"
                    )
                self._changed.wait(min(left, 1.0))

    def finish(self, timeout: float = 60) -> tuple[str, str]:
        """Wait for the process and the readers; (stdout, stderr)."""
        self.proc.wait(timeout=timeout)
        for thread in self._threads:
            thread.join(timeout=timeout)
        return "".join(self.out), "".join(self.err)


def _group_alive(pgid: int) -> bool:
    """A process of group ``pgid`` still runs (zombies do not count: an
    orphan's may wait long for a parent to reap it)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def wait_group_gone(pgid: int, timeout: float = 30) -> None:
    """Return once no process of group ``pgid`` runs (a SIGKILL reaches the
    workers at once, but a write they were in may still land meanwhile)."""
    deadline = time.monotonic() + timeout
    while _group_alive(pgid):
        assert time.monotonic() < deadline, f"process group {pgid} still alive"
        time.sleep(0.05)


def crawl_args(url: str, job: Path, *args: str) -> list[str]:
    """``crawl URL`` with 2 workers x 2 slots and short retries, quietly, in ``job``."""
    return [
        "crawl",
        url,
        "--job-dir",
        str(job),
        "--quiet",
        "--workers",
        "2",
        "--threads",
        "2",
        "--retry-delay",
        "0.05",
        *DOWNLOADER,
        *args,
    ]


# The downloader the crawls of the tests use: the default, or another one
# offered (MPCRAWLER_TEST_DOWNLOADER=curl), to run the same tests against it.
DOWNLOADER = (
    ("--downloader", os.environ["MPCRAWLER_TEST_DOWNLOADER"])
    if os.environ.get("MPCRAWLER_TEST_DOWNLOADER")
    else ()
)


def crawl_records(url: str, job: Path, *args: str, code: int = 0) -> list[dict[str, Any]]:
    """Run ``crawl_args``; the records.  The crawl must exit ``code`` (4:
    no page got an answer)."""
    proc = run_cli(*crawl_args(url, job, *args), timeout=90)
    assert proc.returncode == code, proc.stderr
    return read_records(job / "pages.jsonl")


def read_records(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def scrape(port: int) -> dict[str, float]:
    """Every sample of http://127.0.0.1:PORT/metrics by name and labels
    (``name{label=value,...}``), parsed by prometheus_client's own parser."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples


def chromium_flags(profile: Path, *extra: str) -> list[str]:
    """Debian's chromium, headless, quiet and isolated (its profile in
    ``profile``), logging to stderr; ``extra`` after the rest."""
    import shutil

    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: .ci/run installs Debian's package"
    return [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *extra,
    ]


# A request reaches a loopback server a little after the crawler started it
# (the moment its host's delay counts from), and under the whole suite on 2
# cores that lag differs from one request to the next by up to about 0.12 s:
# clean-clone runs saw a 0.5 s delay as a 0.38 s and a 0.43 s gap at the
# server, and a 0.2 s one as 0.15 s.  One gap may fall short by that much;
# the gaps' median may not: it is the delay the crawler kept.
ARRIVAL_JITTER = 0.15


def assert_paced(starts: Sequence[float], delay: float) -> None:
    """Requests that reached a server at ``starts`` (its clock) were spaced by
    ``delay``: no gap shorter than ``delay - ARRIVAL_JITTER``, and their
    median no shorter than the delay (less 5%).  Half the delay, or none,
    fails."""
    gaps = [b - a for a, b in itertools.pairwise(sorted(starts))]
    assert gaps, starts
    assert min(gaps) >= delay - ARRIVAL_JITTER, gaps
    assert statistics.median(gaps) >= 0.95 * delay, gaps


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` (made here): a disk that
    fills up.  The test fails where it cannot be mounted (run as root)."""
    import pytest

    path.mkdir()
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    if not mounted:
        pytest.fail("this test needs to mount a small tmpfs (run as root)")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
