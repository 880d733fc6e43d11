"""The worker's event loop (:mod:`mpcrawler.worker.loop`): with the libcurl
downloader a worker drives every slot from one thread; with the default one,
a thread a slot, each thread a batch task of the kernel's scheduler (the
master is not).  The crawl's outcome is the same (the curl pass of
``.ci/run`` runs the downloading tests and the kills again with curl)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from support import Lines, read_records, start_cli

from mpcrawler.testing.site import TestSite, serve_site

SLOTS = 8


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def _policies(pid: int) -> set[int]:
    """The scheduling policy of each of the threads of ``pid``."""
    return {os.sched_getscheduler(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")}


@pytest.mark.parametrize("downloader", ["curl", "http"])
def test_a_curl_worker_runs_its_slots_from_one_thread(tmp_path: Path, downloader: str) -> None:
    pages = 120
    with serve_site(TestSite(pages=pages, size=2_000), latency=0.05) as site:
        job = tmp_path / "job"
        proc = start_cli(
            *("crawl", site.url, "--job-dir", str(job), "--workers", "1"),
            *("--threads", str(SLOTS), "--quiet", "--downloader", downloader),
        )
        lines = Lines(proc)
        records = job / "pages.jsonl"
        deadline = time.monotonic() + 60
        while not (records.exists() and records.read_bytes().count(b"\n") >= 10):
            assert proc.poll() is None and time.monotonic() < deadline, lines.err
            time.sleep(0.02)
        worker = int(read_records(records)[0]["worker"].split("pid-")[1])
        during = _threads(worker)
        # a worker's every thread is a batch task; the master is not
        policies, masters = _policies(worker), _policies(proc.pid)
        _, err = lines.finish(timeout=60)
        assert proc.returncode == 0, err
    urls = [r["url"] for r in read_records(records)]
    assert len(urls) == len(set(urls)) == pages
    assert max(site.hits.values()) == 1
    stats = json.loads((job / "stats.json").read_text())
    assert stats["errors"] == 0
    assert policies == {os.SCHED_BATCH} and os.SCHED_BATCH not in masters
    assert [w["scheduling"] for w in stats["processes"]["workers"]] == ["batch"]
    if downloader == "curl":  # the loop alone
        assert during == 1, during
    else:  # a thread a slot, the parser, the receiver and the sender
        assert during == SLOTS + 3, during
