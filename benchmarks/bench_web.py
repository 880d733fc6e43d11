"""What does watching a crawl from its web page cost the crawl?

    python benchmarks/bench_web.py [--pages 6000] [--repeat 5] [--servers builtin,nginx] \\
        [--views 1000]

The same crawl of the built-in site (2 workers x 4 slots, no robots.txt, 10
KB pages) three ways, alternated round by round:

* ``no page``: no ``--web-port`` (the master still writes its live file
  once a second, as every crawl does);
* ``page open``: ``--web-port``, and one client doing what the page does:
  the event stream read as it comes, and the last pages every 2 s;
* ``N views``: ``--web-port`` and ``--views`` event streams held open, half
  of them never reading (slow clients), plus the one above.

For each: pages/s, and CPU milliseconds a page of the crawl's master and
workers (from its stats.json), and of the page's server (the child process,
measured apart with psutil).  Medians of ``--repeat`` rounds.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import contextlib

from benchmarks import common

VARIANTS = ("no page", "page open", "views")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def viewer(url: str, stop: threading.Event) -> None:
    """One page's traffic: the event stream, and /api/pages every 2 s."""
    session = requests.Session()
    session.trust_env = False

    def stream() -> None:
        try:
            with session.get(url + "api/events", stream=True, timeout=30) as answer:
                for _ in answer.iter_lines():
                    if stop.is_set():
                        return
        except requests.RequestException:
            return

    threading.Thread(target=stream, daemon=True).start()
    while not stop.wait(2.0):
        try:
            session.get(url + "api/pages", params={"limit": 50}, timeout=30)
        except requests.RequestException:
            return


def open_views(port: int, count: int) -> list[socket.socket]:
    """``count`` event streams; the odd ones are never read (slow clients)."""
    views = []
    for _i in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        views.append(s)
    return views


def drain(views: list[socket.socket], stop: threading.Event) -> None:
    """Read the even views as they come (the odd ones stay unread)."""
    readers = views[::2]
    for s in readers:
        s.setblocking(False)
    while not stop.wait(0.2):
        for s in readers:
            with contextlib.suppress(BlockingIOError, OSError):
                s.recv(65536)


def one_crawl(url: str, variant: str, pages: int, views: int) -> dict[str, float]:
    job = Path(tempfile.mkdtemp(prefix="bench-web-"))
    port = free_port()
    extra: tuple[str, ...] = ("--no-robots", "--max-pages", str(pages))
    if variant != "no page":
        extra += ("--web-port", str(port))
    cmd = [sys.executable, "-m", "mpcrawler", *common.crawl_command(url, str(job), 2, 4, extra)]
    stop = threading.Event()
    web_cpu = 0.0
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=common.crawl_env()
        )
        held: list[socket.socket] = []
        web_proc = None
        if variant != "no page":
            line = proc.stdout.readline() if proc.stdout else ""
            if " on http://" not in line:
                raise SystemExit(
                    f"no web page: {line!r} {proc.stderr.read() if proc.stderr else ''}"
                )
            web_url = line.split(" on ", 1)[1].strip()
            for child in psutil.Process(proc.pid).children():
                if "web" in child.cmdline():
                    web_proc = child
            threading.Thread(target=viewer, args=(web_url, stop), daemon=True).start()
            if variant == "views":
                held = open_views(port, views)
                threading.Thread(target=drain, args=(held, stop), daemon=True).start()
        cpu_seen = 0.0
        while proc.poll() is None:
            if web_proc is not None:
                try:
                    times = web_proc.cpu_times()
                    cpu_seen = times.user + times.system
                except psutil.Error:
                    pass
            time.sleep(0.1)
        web_cpu = cpu_seen
        stop.set()
        for s in held:
            s.close()
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"crawl failed: {err[-2000:]}")
        stats = json.loads((job / "stats.json").read_text())
    finally:
        stop.set()
        shutil.rmtree(job, ignore_errors=True)
    done, procs = stats["pages"], stats["processes"]
    master = procs["master"]["cpu_s"]
    workers = sum(w["cpu_s"] for w in procs["workers"])
    return {
        "pages_per_s": done / stats["elapsed_s"],
        "crawl_ms": 1000 * (master + workers) / done,
        "master_ms": 1000 * master / done,
        "web_ms": 1000 * web_cpu / done,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=6000)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--views", type=int, default=1000)
    parser.add_argument("--servers", default="builtin,nginx")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # the views' sockets, here and
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))  # there
    print(f"# {common.machine()}; {args.pages} pages of {args.size} bytes, 2 x 4")
    print(
        "| server | variant | pages/s | crawl CPU ms a page | ratio | master ms | web server ms |"
    )
    print("|---|---|---|---|---|---|---|")
    for server in args.servers.split(","):
        with common.serve(server, args.pages + 100, 0.0, args.size) as url:
            runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
            for round_ in range(args.repeat):
                order = VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]
                for variant in order:
                    figures = one_crawl(url, variant, args.pages, args.views)
                    runs[variant].append(figures)
                    print(f"round {round_ + 1}: {server} {variant}: {figures}", file=sys.stderr)
            base = statistics.median(r["crawl_ms"] for r in runs["no page"])
            for variant in VARIANTS:
                m = common.medians(runs[variant])
                name = f"{args.views} views" if variant == "views" else variant
                print(
                    f"| {server} | {name} | {m['pages_per_s']:.0f} | {m['crawl_ms']:.3f} | "
                    f"{m['crawl_ms'] / base:.3f} | {m['master_ms']:.3f} | {m['web_ms']:.3f} |"
                )


if __name__ == "__main__":
    main()
