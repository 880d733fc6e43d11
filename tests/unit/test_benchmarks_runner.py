"""``python -m benchmarks``: one runner lists every benchmark with its
question and runs one by its short name (issue 60)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_every_benchmark_is_listed_with_its_question() -> None:
    listed = run()
    assert listed.returncode == 0, listed.stderr
    names = {line.split()[0] for line in listed.stdout.splitlines()}
    files = {p.stem.removeprefix("bench_") for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert files <= names
    assert all(len(line.split(None, 1)) == 2 for line in listed.stdout.splitlines())


def test_a_benchmark_runs_by_its_name_and_an_unknown_one_is_one_line() -> None:
    helped = run("url_rules", "--help")
    assert helped.returncode == 0 and "usage:" in helped.stdout
    unknown = run("no_such_thing")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1


def test_every_benchmark_starts() -> None:
    """Each benchmark's ``--help`` runs: its imports of the project hold
    (a module moved without its benchmarks fails here, not in a run)."""
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        helped = run(path.stem.removeprefix("bench_"), "--help")
        assert helped.returncode == 0 and "usage:" in helped.stdout, (path.name, helped.stderr)
