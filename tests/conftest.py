"""Shared fixtures: real loopback servers, the CLI as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mpcrawler.testsite import SiteServer, TestSite, serve_site

ROOT = Path(__file__).resolve().parent.parent
CLI_TIMEOUT = 120


def run_cli(
    *args: str, timeout: float = CLI_TIMEOUT, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m mpcrawler ARGS`` and wait for it, bounded in time."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "mpcrawler", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
        check=False,
    )


def crawl_records(url: str, job: Path, *args: str) -> list[dict[str, Any]]:
    """Crawl ``url`` with 2 workers x 2 slots and short timeouts; the records.
    The crawl must exit 0."""
    proc = run_cli(
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
        *args,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    return read_records(job / "pages.jsonl")


def read_records(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def site_300() -> Iterator[SiteServer]:
    with serve_site(TestSite(pages=300, size=4_000)) as server:
        yield server


@pytest.fixture
def make_site() -> Iterator[Any]:
    """Start any number of sites; all are stopped at the end of the test."""
    stack: list[Any] = []

    def start(site: TestSite, **kwargs: Any) -> SiteServer:
        manager = serve_site(site, **kwargs)
        stack.append(manager)
        return manager.__enter__()

    yield start
    for manager in reversed(stack):
        manager.__exit__(None, None, None)
