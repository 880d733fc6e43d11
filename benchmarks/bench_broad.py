"""A broad crawl over many hosts: what each host more costs the master.

    python benchmarks/bench_broad.py --hosts 10,1000,10000,100000 --pages 40000 --repeat 1

One server process, bound to 0.0.0.0, answers for every 127.X.Y.Z (the
whole of 127/8 is loopback), so a host costs no setup: host k is
127.A.B.C with A = 1 + k // 62500, B = 1 + (k // 250) % 250, C = 1 + k % 250.
Page i (``/p/i``) lives on host ``i % hosts``, links to its children
``i*10+1 .. i*10+10`` (each on its own host) and answers with about 2 KB; each
host has its own robots.txt.  The crawl: ``--scope any``,
``--allow-private-networks``, robots.txt on, 2 workers x 8 threads,
``--max-pages``.  Reported per host count: pages/s, the master's peak RSS
and CPU a page, the workers' CPU a page, and the TCP connections the
server accepted a request (1.0: none reused).

Issue 28's "before" table; the same command measures its "after".
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common

FANOUT = 10  # depth 5 (the broad-crawl default --max-depth) reaches 111,111 pages
FILLER = b"<p>" + b"broad crawl filler text " * 80 + b"</p>\n"  # about 2 KB a page


def host_of(k: int) -> str:
    return f"127.{1 + k // 62500}.{1 + (k // 250) % 250}.{1 + k % 250}"


class BroadServer(ThreadingHTTPServer):
    """Answers ``/p/i`` and ``/robots.txt`` for every host; counts requests
    and accepted connections."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, hosts: int, pages: int) -> None:
        self.hosts, self.pages = hosts, pages
        self.requests = self.connections = 0
        self.lock = threading.Lock()
        super().__init__(("0.0.0.0", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            self.connections += 1
        super().process_request(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: BroadServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        server = self.server
        with server.lock:
            server.requests += 1
        if self.path == "/robots.txt":
            self._send(b"User-agent: *\nAllow: /\n", "text/plain")
            return
        try:
            i = int(self.path.rsplit("/", 1)[1])
        except ValueError:
            i = -1
        host = (self.headers.get("Host") or "").split(":")[0]
        if not 0 <= i < server.pages or host != host_of(i % server.hosts):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        port = server.server_address[1]
        links = "".join(
            f'<a href="http://{host_of(c % server.hosts)}:{port}/p/{c}">{c}</a>\n'
            for c in range(i * FANOUT + 1, min(server.pages, i * FANOUT + FANOUT + 1))
        )
        body = f"<html><head><title>{i}</title></head><body>{links}".encode() + FILLER
        self._send(body + b"</body></html>", "text/html; charset=utf-8")

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def one_crawl(hosts: int, pages: int) -> dict[str, float]:
    server = BroadServer(hosts, pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    job = tempfile.mkdtemp(prefix="bench-broad-")
    try:
        port = server.server_address[1]
        with socket.create_connection((host_of(0), port), timeout=5):
            pass  # it answers on 127.x
        with server.lock:
            server.connections = 0
        cmd = [
            *(sys.executable, "-m", "mpcrawler", "crawl", f"http://{host_of(0)}:{port}/p/0"),
            *("--job-dir", job, "--workers", "2", "--threads", "8", "--quiet"),
            *("--scope", "any", "--allow-private-networks", "--max-pages", str(pages)),
        ]
        started = time.monotonic()
        subprocess.run(
            cmd, check=True, stdout=subprocess.DEVNULL, env=common.crawl_env(), cwd=common.ROOT
        )
        wall = time.monotonic() - started
        stats = json.loads(Path(job, "stats.json").read_text())
        done, procs = stats["pages"], stats["processes"]
        return {
            "pages": done,
            "pages_per_s": done / stats["elapsed_s"],
            "wall_s": wall,
            "master_rss_mb": procs["master"]["max_rss_mb"],
            "master_ms": 1000 * procs["master"]["cpu_s"] / done,
            "workers_ms": 1000 * sum(w["cpu_s"] for w in procs["workers"]) / done,
            "connections_a_request": server.connections / max(1, server.requests),
        }
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(job, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", default="10,1000,10000,100000")
    parser.add_argument("--pages", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    counts = [int(h) for h in args.hosts.split(",")]
    runs: dict[int, list[dict[str, float]]] = {h: [] for h in counts}
    for round_ in range(args.repeat):
        for hosts in counts if round_ % 2 == 0 else counts[::-1]:
            runs[hosts].append(one_crawl(hosts, args.pages))
            print(f"round {round_ + 1}: {hosts} hosts: {runs[hosts][-1]}", file=sys.stderr)
    print(f"machine: {common.machine()}")
    print(
        f"{args.pages} pages of about 2 KB, --scope any, robots.txt on, 2 workers x 8 threads; "
        f"medians of {args.repeat} runs\n"
    )
    print(
        "| hosts | pages | pages/s | master peak RSS MB | master ms/page | workers ms/page "
        "| connections a request |"
    )
    print("|---|---|---|---|---|---|---|")
    result: dict[str, Any] = {"args": vars(args), "machine": common.machine(), "hosts": {}}
    for hosts in counts:
        m = {k: statistics.median(r[k] for r in runs[hosts]) for k in runs[hosts][0]}
        result["hosts"][str(hosts)] = {"median": m, "runs": runs[hosts]}
        print(
            f"| {hosts:,} | {m['pages']:.0f} | {m['pages_per_s']:.1f} | {m['master_rss_mb']:.1f} "
            f"| {m['master_ms']:.3f} | {m['workers_ms']:.3f} | {m['connections_a_request']:.2f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
