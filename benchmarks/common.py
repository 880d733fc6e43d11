"""Shared by the benchmark scripts: run a crawl as a child process and watch it.

``run_watched`` samples the whole process tree (the master, the forkserver
and the workers) with psutil while it runs, and reports CPU seconds and peak
RSS per role.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Watched:
    wall_s: float
    returncode: int
    cpu_master_s: float = 0.0
    cpu_workers_s: float = 0.0
    rss_master_mb: float = 0.0
    rss_worker_max_mb: float = 0.0
    # per worker pid: (seconds since start, RSS MB) samples
    worker_rss_mb: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    stderr: str = ""


def run_watched(cmd: list[str], *, interval: float = 0.1, timeout: float = 1800) -> Watched:
    """Run ``cmd``; sample CPU and RSS of it and of its descendants until it exits."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    master = psutil.Process(proc.pid)
    cpu: dict[int, float] = {}
    roles: dict[int, str] = {}
    result = Watched(0.0, 0)
    deadline = start + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            tree = [master, *master.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in tree:
            try:
                with p.oneshot():
                    times = p.cpu_times()
                    rss = p.memory_info().rss / 2**20
                    parent = p.ppid()
            except psutil.Error:
                continue
            cpu[p.pid] = times.user + times.system
            if p.pid == master.pid:
                roles[p.pid] = "master"
                result.rss_master_mb = max(result.rss_master_mb, rss)
            elif parent == master.pid:
                roles[p.pid] = "forkserver"  # workers are forked from it
            else:
                roles[p.pid] = "worker"
                result.rss_worker_max_mb = max(result.rss_worker_max_mb, rss)
                result.worker_rss_mb.setdefault(p.pid, []).append((time.monotonic() - start, rss))
        time.sleep(interval)
    if proc.poll() is None:
        proc.kill()
    _, result.stderr = proc.communicate()
    result.wall_s = time.monotonic() - start
    result.returncode = proc.returncode
    result.cpu_master_s = sum(c for pid, c in cpu.items() if roles.get(pid) == "master")
    result.cpu_workers_s = sum(c for pid, c in cpu.items() if roles.get(pid) == "worker")
    return result


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    return (
        f"{os.cpu_count()} CPUs ({cpu}), {psutil.virtual_memory().total / 2**30:.0f} GiB, "
        f"Python {sys.version.split()[0]}, {platform.system()} {platform.release()}"
    )


def crawl(
    url: str, workers: int, threads: int, *, watch: bool = False
) -> tuple[dict[str, Any], Watched | None]:
    """One ``mpcrawler crawl`` of ``url`` in a fresh job dir (removed after):
    its stats.json, and what the watcher saw when ``watch``."""
    job = tempfile.mkdtemp(prefix="bench-mpcrawler-")
    cmd = [
        sys.executable,
        "-m",
        "mpcrawler",
        "crawl",
        url,
        "--job-dir",
        job,
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--host-concurrency",
        str(workers * threads),
        "--no-robots",
        "--quiet",
    ]
    try:
        if watch:
            watched: Watched | None = run_watched(cmd)
            assert watched is not None
            if watched.returncode != 0:
                raise SystemExit(f"crawl failed: {watched.stderr[-2000:]}")
        else:
            watched = None
            subprocess.run(
                cmd,
                check=True,
                stdout=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
        return json.loads(Path(job, "stats.json").read_text()), watched
    finally:
        shutil.rmtree(job, ignore_errors=True)
