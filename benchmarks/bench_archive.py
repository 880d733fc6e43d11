"""Archiving a site with its page requisites: mpcrawler against wget -p.

The built-in site with ``--embeds`` (every page needs a stylesheet that
imports another, a script, an image of its own, a font, a background and a
logo on a second host, 127.0.0.2, its "CDN"), served by its own server and
by Debian's nginx (a static copy, on both hosts), is archived three ways,
runs alternated:

* ``mpcrawler -p``: ``--page-requisites --warc DIR``;
* ``wget -p``: ``wget -r -l inf -p -e robots=off --warc-file=...`` (one
  process; without ``-H`` it cannot fetch the logo on the other host, and
  with it, it would follow every page link there too);
* ``mpcrawler``: ``--warc DIR`` alone, pages only (the cost of the embeds).

For each: wall seconds of the whole process, pages and embeds archived (for
wget, the files it saved: HTML pages, and the rest), pages/s and embeds/s
over the wall time.  robots.txt is not read by either.  Prints medians.

    python benchmarks/bench_archive.py --pages 2000 --repeat 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, crawl_command, crawl_env, machine, nginx_dir
from mpcrawler.testing.redis import free_port
from mpcrawler.testing.site import TestSite


@contextlib.contextmanager
def builtin(pages: int, size: int) -> Iterator[str]:
    """The built-in server with --embeds on 127.0.0.1 and 127.0.0.2, one port."""
    port = free_port()
    procs = []
    try:
        for host in ("127.0.0.1", "127.0.0.2"):
            proc = subprocess.Popen(
                [
                    *(sys.executable, "-m", "mpcrawler", "serve-site", "--embeds"),
                    *("--host", host, "--port", str(port), "--pages", str(pages)),
                    *("--size", str(size), "--images", str(pages)),
                ],
                stdout=subprocess.PIPE,
                text=True,
                env=crawl_env(),
                cwd=ROOT,
            )
            procs.append(proc)
            assert proc.stdout is not None
            if not proc.stdout.readline().startswith("serving"):
                raise SystemExit("the built-in site did not start")
        yield f"http://127.0.0.1:{port}/"
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)


@contextlib.contextmanager
def nginx(pages: int, size: int) -> Iterator[str]:
    """nginx serving a static copy of the --embeds site on both hosts."""
    port = free_port()
    site = TestSite(pages=pages, size=size, embeds=True, images=pages)
    copy = Path(tempfile.mkdtemp(prefix="bench-archive-site-"))
    try:
        copy.chmod(0o755)
        (copy / "page").mkdir()
        (copy / "index.html").write_bytes(site.body(0, port))
        for i in range(1, pages):
            (copy / "page" / str(i)).write_bytes(site.body(i, port))
        for path, (_, body) in site.assets.items():
            target = copy / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
        for folder in copy.rglob("*"):
            folder.chmod(0o755 if folder.is_dir() else 0o644)
        with nginx_dir(copy, port=port, hosts=("127.0.0.1", "127.0.0.2")) as url:
            yield url
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def run_mpcrawler(url: str, workers: int, threads: int, requisites: bool) -> dict[str, float]:
    scratch = Path(tempfile.mkdtemp(prefix="bench-archive-"))
    try:
        extra = ["--warc", str(scratch / "warc"), "--allow-private-networks"]
        if requisites:
            extra.append("--page-requisites")
        cmd = [sys.executable, "-m", "mpcrawler"]
        cmd += crawl_command(url, str(scratch / "job"), workers, threads, tuple(extra))
        started = time.monotonic()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=crawl_env(), cwd=ROOT)
        wall = time.monotonic() - started
        stats = json.loads((scratch / "job" / "stats.json").read_text())
        embeds = stats.get("embeds", {}).get("fetched", 0)
        return _figures(wall, stats["pages"], embeds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_wget(url: str) -> dict[str, float]:
    scratch = Path(tempfile.mkdtemp(prefix="bench-archive-wget-"))
    try:
        cmd = [
            *("wget", "-q", "-r", "-l", "inf", "-p", "-e", "robots=off"),
            *(f"--warc-file={scratch / 'archive'}", "-P", str(scratch / "files"), url),
        ]
        started = time.monotonic()
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.monotonic() - started
        if done.returncode not in (0, 8):  # 8: some answer was an error (a 404)
            raise SystemExit(f"wget failed: {done.returncode}")
        files = [p for p in (scratch / "files").rglob("*") if p.is_file()]
        pages = sum(1 for p in files if p.name == "index.html" or p.parent.name == "page")
        return _figures(wall, pages, len(files) - pages)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _figures(wall: float, pages: int, embeds: int) -> dict[str, float]:
    return {
        "wall_s": wall,
        "pages": pages,
        "embeds": embeds,
        "pages_per_s": pages / wall,
        "embeds_per_s": embeds / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--servers", default="builtin,nginx")
    args = parser.parse_args()
    if shutil.which("wget") is None:
        raise SystemExit("wget is missing (apt-get install wget)")
    print(machine())
    print(f"{args.pages} pages of {args.size} bytes, {args.workers} x {args.threads} slots")
    servers = {"builtin": builtin, "nginx": nginx}
    for server in args.servers.split(","):
        with servers[server](args.pages, args.size) as url:
            ways = {
                "mpcrawler -p": lambda: run_mpcrawler(url, args.workers, args.threads, True),
                "wget -p": lambda: run_wget(url),
                "mpcrawler": lambda: run_mpcrawler(url, args.workers, args.threads, False),
            }
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
            order = list(ways)
            for round_ in range(args.repeat):
                for name in order if round_ % 2 == 0 else order[::-1]:
                    figures = ways[name]()
                    runs[name].append(figures)
                    print(f"{server} round {round_ + 1}: {name}: {figures}", file=sys.stderr)
            print(f"\n{server}: medians of {args.repeat}")
            print("| way | wall s | pages | embeds | pages/s | embeds/s |")
            print("|---|---|---|---|---|---|")
            for name, found in runs.items():
                m = {k: statistics.median(r[k] for r in found) for k in found[0]}
                print(
                    f"| {name} | {m['wall_s']:.2f} | {m['pages']:.0f} | {m['embeds']:.0f} | "
                    f"{m['pages_per_s']:.1f} | {m['embeds_per_s']:.1f} |"
                )


if __name__ == "__main__":
    main()
