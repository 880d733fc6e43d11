"""``python -m benchmarks``: one runner lists every benchmark with its
question and runs one by its short name (issue 60)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
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


def test_every_benchmark_imports_what_the_project_has() -> None:
    """Each benchmark's imports of the project name what it has (a module
    moved without its benchmarks fails here, not in a run), and its own
    helpers come as ``benchmarks.common``, so the runner can run it.  Read
    from the files: the bench extra (psutil, scrapy) need not be installed."""
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level:
                continue
            module = node.module or ""
            assert module.split(".")[0] != "common", (path.name, module)
            if module.split(".")[0] == "mpcrawler":
                imported = importlib.import_module(module)
                for alias in node.names:
                    assert hasattr(imported, alias.name) or importlib.util.find_spec(
                        f"{module}.{alias.name}"
                    ), (path.name, module, alias.name)
