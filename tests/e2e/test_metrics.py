"""--metrics-port: /metrics in the Prometheus format and /status, from a
real crawl whose last page the test holds back (issue 26, metrics part)."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from pathlib import Path

from hostile import Handler, Reply, links, serve
from support import Lines, crawl_args, run_cli, scrape, start_cli

from mpcrawler.testing.redis import free_port

PAGES = [f"/p{i}" for i in range(30)]


def wait_until(check: object, timeout: float, what: str) -> float:
    """Poll ``check()`` every 20 ms until true; the seconds it took."""
    started = time.monotonic()
    while not check():  # type: ignore[operator]
        assert time.monotonic() - started < timeout, what
        time.sleep(0.02)
    return time.monotonic() - started


def lines_of(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_metrics_follow_the_records_and_parse(tmp_path: Path) -> None:
    release = threading.Event()

    def slow(handler: Handler, n: int) -> Reply:
        release.wait(60)
        return links()

    routes = {"/": lambda h, n: links(*PAGES, "/slow"), "/slow": slow}
    port = free_port()
    job = tmp_path / "job"
    records = job / "pages.jsonl"
    with serve(routes, default=lambda h, n: links()) as server:
        args = crawl_args(server.url + "/", job, "--no-robots", "--metrics-port", str(port))
        proc = start_cli(*args)
        output = Lines(proc)
        try:
            wait_until(lambda: lines_of(records) > 0, 30, "no record written")
            seen = lines_of(records)
            took = wait_until(
                lambda: scrape(port).get("mpcrawler_pages_total{status=2xx}", 0) >= seen,
                1.0,
                "the metrics lag the records file by more than a second",
            )
            # Everything but /slow is recorded; the crawl waits for it.
            wait_until(lambda: lines_of(records) == len(PAGES) + 1, 30, "records missing")
            latest: dict[str, float] = {}

            def caught_up() -> bool:
                latest.update(scrape(port))
                return latest.get("mpcrawler_pages_total{status=2xx}", 0) >= len(PAGES) + 1

            # The metrics follow the last records too, the crawl idle meanwhile.
            took_last = wait_until(caught_up, 1.0, "the metrics lag the last records")
            samples = dict(latest)
            status = json.loads(
                urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5).read()
            )
            command = json.loads(run_cli("status", str(job), "--json").stdout)
        finally:
            release.set()
        _, stderr = output.finish()
    assert proc.returncode == 0, stderr
    recorded = len(PAGES) + 1
    assert samples["mpcrawler_pages_total{status=2xx}"] == recorded
    assert samples["mpcrawler_fetch_seconds_count{}"] == recorded
    assert samples["mpcrawler_bytes_total{}"] > 0
    assert samples["mpcrawler_in_flight{state=downloading}"] == 1  # /slow
    assert samples["mpcrawler_queued{}"] == 0 and samples["mpcrawler_hosts_paced{}"] == 0
    assert samples["mpcrawler_fetch_seconds_bucket{le=+Inf}"] == recorded
    assert set(status) == set(command) and status["state"] == "running"
    assert took < 1.0 and took_last < 1.0


def test_a_port_in_use_is_a_usage_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        job = tmp_path / "job"
        proc = run_cli(*crawl_args("http://127.0.0.1:9/", job, "--metrics-port", str(port)))
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        f"mpcrawler: error: --metrics-port: cannot listen on 127.0.0.1:{port}"
    )
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (job / "job.json").exists()
