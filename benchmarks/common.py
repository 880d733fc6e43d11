"""Shared by the benchmark scripts: run a crawl as a child process and watch it.

``run_watched`` samples the whole process tree (the master, the forkserver
and the workers) with psutil while it runs, and reports CPU seconds and peak
RSS per role.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psutil

ROOT = Path(__file__).resolve().parent.parent


def crawl_env(root: Path = ROOT) -> dict[str, str]:
    """The environment of a crawl the benchmarks run with the code of the
    tree ``root`` (run it in ``root`` too: ``python -m`` imports from the
    current directory first): ``root`` on the path, and bytecode cached as
    an installed package has it (an environment with PYTHONDONTWRITEBYTECODE
    would compile every module at each start, in the master and the
    forkserver, and count it as crawl CPU; Scrapy, from site-packages, runs
    from its bytecode)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def crawl_command(
    url: str, job: str, workers: int, threads: int, extra: tuple[str, ...] = ()
) -> list[str]:
    """The ``mpcrawler crawl`` options of a benchmark's crawl of ``url``:
    ``workers`` x ``threads``, a host concurrency of all the slots, no
    robots.txt, quiet; ``extra`` after them (a later option wins)."""
    return [
        *("crawl", url, "--job-dir", job, "--workers", str(workers), "--threads", str(threads)),
        *("--host-concurrency", str(workers * threads), "--no-robots", "--quiet", *extra),
    ]


def downloader_option(name: str) -> tuple[str, ...]:
    """The crawl's options that choose the downloader ``name`` (``http``,
    ``curl``): none for ``http``, the default, so that a tree from before
    downloaders had short names (a ``--base``) crawls with its own."""
    return () if name == "http" else ("--downloader", name)


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


def run_watched(
    cmd: list[str], *, interval: float = 0.1, timeout: float = 1800, root: Path = ROOT
) -> Watched:
    """Run ``cmd`` (a crawl of the tree ``root``); sample CPU and RSS of it
    and of its descendants until it exits."""
    env = crawl_env(root)
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=root
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


def site_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options of a script that crawls the built-in site's pages with
    one layout, repeated: --pages, --size, --workers, --threads, --repeat."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    return parser


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    return (
        f"{os.cpu_count()} CPUs ({cpu}), {psutil.virtual_memory().total / 2**30:.0f} GiB, "
        f"Python {sys.version.split()[0]}, {platform.system()} {platform.release()}"
    )


def crawl(
    url: str,
    workers: int,
    threads: int,
    *,
    watch: bool = False,
    extra: tuple[str, ...] = (),
    root: Path = ROOT,
) -> tuple[dict[str, Any], Watched | None]:
    """One ``mpcrawler crawl`` of ``url`` (``crawl_command``) with the code of
    the tree ``root``, in a fresh job dir (removed after): its stats.json
    (plus ``median_download_ms`` and ``download_times_ms`` from the
    records), and what the watcher saw when ``watch``."""
    job = tempfile.mkdtemp(prefix="bench-mpcrawler-")
    cmd = [sys.executable, "-m", "mpcrawler", *crawl_command(url, job, workers, threads, extra)]
    try:
        if watch:
            watched: Watched | None = run_watched(cmd, root=root)
            assert watched is not None
            if watched.returncode != 0:
                raise SystemExit(f"crawl failed: {watched.stderr[-2000:]}")
        else:
            watched = None
            subprocess.run(
                cmd,
                check=True,
                stdout=subprocess.DEVNULL,
                env=crawl_env(root),
                cwd=root,  # python -m looks in the current directory first
            )
        stats = json.loads(Path(job, "stats.json").read_text())
        with open(Path(job, "pages.jsonl"), encoding="utf-8") as f:
            times = [json.loads(line)["elapsed_ms"] for line in f]
        stats["median_download_ms"] = statistics.median(times) if times else None
        stats["download_times_ms"] = times
        return stats, watched
    finally:
        shutil.rmtree(job, ignore_errors=True)


@contextlib.contextmanager
def nginx_site(
    pages: int, size: int, latency: float = 0.0, access_log: Path | None = None
) -> Iterator[str]:
    """Debian's nginx serving a static copy of the built-in test site, written
    to a temporary directory, on a free loopback port (``nginx_dir``); yields
    the site's URL."""
    from mpcrawler.testing.redis import free_port
    from mpcrawler.testing.site import TestSite

    port = free_port()
    site = TestSite(pages=pages, size=size)
    copy = Path(tempfile.mkdtemp(prefix="bench-site-"))
    try:
        copy.chmod(0o755)  # nginx's workers run as another user
        (copy / "page").mkdir()
        (copy / "index.html").write_bytes(site.body(0, port))
        for i in range(1, pages):
            (copy / "page" / str(i)).write_bytes(site.body(i, port))
        with nginx_dir(copy, latency, access_log, port=port) as url:
            yield url
    finally:
        shutil.rmtree(copy, ignore_errors=True)


@contextlib.contextmanager
def nginx_dir(
    docs: Path,
    latency: float = 0.0,
    access_log: Path | None = None,
    *,
    port: int = 0,
    hosts: tuple[str, ...] = ("127.0.0.1",),
) -> Iterator[str]:
    """Debian's nginx serving the directory ``docs`` with its own config, on
    ``port`` (a free loopback port if 0); yields the site's URL, whose ``/``
    is ``docs/index.html``.  (``apt-get install nginx``; with ``latency``,
    each page is answered after that many seconds by the echo module's
    ``echo_sleep``: ``apt-get install libnginx-mod-http-echo``.)  With
    ``access_log``, nginx logs each request there as ``status body-bytes
    if-none-match|if-modified-since uri``.  nginx sends ETag and
    Last-Modified and answers conditional requests with 304 by default.
    It listens on each of ``hosts`` (the same files on each: a second host
    is a page's CDN), and types requisites by their extension."""
    from mpcrawler.testing.redis import free_port

    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    port = port or free_port()
    root = Path(tempfile.mkdtemp(prefix="bench-nginx-"))
    root.chmod(0o755)
    docs = docs.resolve()
    if latency:
        module = "/usr/lib/nginx/modules/ngx_http_echo_module.so"
        if not os.path.exists(module):
            raise SystemExit(f"{module} is missing (apt-get install libnginx-mod-http-echo)")
        load = f"load_module {module};\n"
        locations = f"""
        location = / {{ echo_sleep {latency}; echo_exec @index; }}
        location @index {{ try_files /index.html =404; }}
        location / {{ echo_sleep {latency}; echo_exec @page; }}
        location @page {{ try_files $uri =404; }}"""
    else:
        load = ""
        locations = """
        location = / { try_files /index.html =404; }"""
    logging = "access_log off;"
    if access_log is not None:
        logging = (
            "log_format revisit '$status $body_bytes_sent "
            "$http_if_none_match|$http_if_modified_since $request_uri';\n"
            f"    access_log {access_log} revisit;"
        )
    listen = " ".join(f"listen {host}:{port};" for host in hosts)
    (root / "nginx.conf").write_text(
        f"""{load}daemon off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    {logging}
    default_type text/html;
    types {{ text/html html; text/css css; image/png png; image/gif gif; image/jpeg jpg;
             image/svg+xml svg; text/javascript js; font/woff2 woff2; font/woff woff; }}
    client_body_temp_path {root}/tmp;
    proxy_temp_path {root}/tmp;
    fastcgi_temp_path {root}/tmp;
    uwsgi_temp_path {root}/tmp;
    scgi_temp_path {root}/tmp;
    keepalive_requests 100000;
    server {{
        {listen}
        root {docs};{locations}
    }}
}}
"""
    )
    proc = subprocess.Popen([nginx, "-c", str(root / "nginx.conf"), "-p", str(root)])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = (root / "error.log").read_text()
                    raise SystemExit(f"nginx did not start: {log}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """Revision ``rev`` of this repository checked out in a temporary git
    worktree (removed after), to crawl with as ``ROOT``."""
    tree = Path(tempfile.mkdtemp(prefix="bench-base-")) / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
        check=True,
        capture_output=True,
    )
    try:
        yield tree
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
            check=False,
            capture_output=True,
        )


def trees(stack: contextlib.ExitStack, base: str | None) -> dict[str, Path]:
    """The trees a benchmark crawls with, by name: this one ("this"), and the
    revision ``base`` (named by it) in a worktree that ``stack`` removes."""
    found = {"this": ROOT}
    if base:
        found[base] = stack.enter_context(worktree(base))
    return found


def start_redis() -> tuple[subprocess.Popen[bytes], str, str]:
    """A redis-server of the benchmark's own on a free loopback port, without
    persistence: (its process, its URL, its directory)."""
    from mpcrawler.testing import redis

    directory = tempfile.mkdtemp(prefix="bench-redis-")
    port = redis.free_port()
    try:
        proc = redis.start(port, directory, "--save", "")
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None
    return proc, f"redis://127.0.0.1:{port}/0", directory


DOCS = Path("/usr/share/doc/postgresql-doc-15/html")  # apt-get install postgresql-doc-15


def serve(
    server: str, pages: int, latency: float, size: int, docs: Path = DOCS
) -> AbstractContextManager[str]:
    """The built-in site by its own server (``builtin``) or by nginx, or the
    directory ``docs`` of real pages by nginx (``docs``), as a URL."""
    from mpcrawler.cli import site_process

    if server == "docs":
        return nginx_dir(docs, latency)
    if server == "nginx":
        return nginx_site(pages, size, latency)
    return site_process(pages, latency, size)


def crawl_figures(
    url: str,
    workers: int,
    threads: int,
    analyzer: str,
    extra: tuple[str, ...] = (),
    root: Path = ROOT,
) -> dict[str, float]:
    """One crawl of ``url`` with ``--analyzer analyzer`` (and ``extra``
    options) with the code of the tree ``root``: pages, pages/s, CPU
    milliseconds a page of the master and of the workers, median download."""
    stats, _ = crawl(url, workers, threads, extra=("--analyzer", analyzer, *extra), root=root)
    pages, procs = stats["pages"], stats["processes"]
    return {
        "pages": pages,
        "pages_per_s": pages / stats["elapsed_s"],
        "master_ms": 1000 * procs["master"]["cpu_s"] / pages,
        "workers_ms": 1000 * sum(w["cpu_s"] for w in procs["workers"]) / pages,
        "download_ms": stats["median_download_ms"],
    }


V = TypeVar("V")


def alternated(
    trees: dict[str, Path],
    variants: list[V],
    repeat: int,
    measure: Callable[[Path, V], dict[str, float]],
) -> dict[tuple[str, V], list[dict[str, float]]]:
    """``measure(tree, variant)`` for every tree and variant, ``repeat``
    rounds, the order reversed every other round (drift on a shared machine
    hits each alike); each run's figures, by (tree name, variant)."""
    runs: dict[tuple[str, V], list[dict[str, float]]] = {}
    order = [(t, v) for v in variants for t in trees]
    for round_ in range(repeat):
        for tree, variant in order if round_ % 2 == 0 else order[::-1]:
            figures = measure(trees[tree], variant)
            runs.setdefault((tree, variant), []).append(figures)
            print(f"round {round_ + 1}: {tree} {variant}: {figures}", file=sys.stderr, flush=True)
    return runs


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """The median of each figure over ``runs``."""
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}
