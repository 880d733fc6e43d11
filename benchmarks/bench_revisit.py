"""Crawling again: a first crawl and a revisit of the unchanged site, against
nginx, beside GNU wget -N doing the same.

    python benchmarks/bench_revisit.py --pages 2000 --repeat 3

Debian's nginx serves a static copy of the built-in test site
(``common.nginx_site``); it sends ETag and Last-Modified and answers
conditional requests with 304 on its own, so the revisit is measured
against a server the project did not write.  Each round, alternated:

* mpcrawler: ``crawl URL --job-dir J``, then ``crawl URL --job-dir J
  --revisit-after 0`` (robots.txt obeyed, as wget does);
* wget: ``wget -r -l inf -N -P DIR URL``, then the same command again
  (``-N``: If-Modified-Since from the files' times).

From nginx's access log: requests, 304s and body bytes of each crawl;
from the process tree: wall time and CPU milliseconds a page (mpcrawler:
master and workers; wget: its one process).  Prints medians and, for each
revisit, the share of 304s and of the first crawl's body bytes.

    python benchmarks/bench_revisit.py --state-urls 100000

measures instead what the revisit schedule costs a URL: the local
frontier's ``revisits.db`` on disk, and Redis's memory for its ``rv`` and
``due`` keys (``MEMORY USAGE``), on a redis-server of its own, for URLs
scheduled with the state a real page leaves (ETag, Last-Modified, digest,
a WARC capture's id and date).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import machine, nginx_site, run_watched


def served(log: Path, start: int) -> tuple[dict[str, int], int]:
    """Requests, 304s, body bytes and conditional requests logged from byte ``start``; the end."""
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    figures = {"requests": 0, "not_modified": 0, "body_bytes": 0, "conditional": 0}
    for line in text[start:].splitlines():
        status, size, validators, _ = line.split(" ", 3)
        figures["requests"] += 1
        figures["not_modified"] += status == "304"
        figures["body_bytes"] += int(size)
        figures["conditional"] += validators not in ("-|-", "|")
    return figures, len(text)


def run(cmd: list[str], log: Path, start: int) -> tuple[dict[str, float], int]:
    watched = run_watched(cmd, interval=0.05)
    if watched.returncode not in (0, 8):  # wget: 8 for the 404 of robots.txt
        raise SystemExit(f"{cmd[0]} failed ({watched.returncode}): {watched.stderr[-2000:]}")
    figures, end = served(log, start)
    cpu = watched.cpu_master_s + watched.cpu_workers_s
    return {**figures, "wall_s": watched.wall_s, "cpu_s": cpu}, end


def state_bytes(urls: int) -> None:
    """Bytes a URL of the revisit schedule, in the local frontier and in Redis."""
    import time

    from benchmarks.common import start_redis
    from mpcrawler.frontier import LocalFrontier, Revisit
    from mpcrawler.frontier.redis.frontier import RedisFrontier
    from mpcrawler.master.revisit import RevisitState

    now = time.time()

    def revisit(i: int) -> Revisit:
        url = f"http://host{i % 100}.example.org/docs/section-{i // 100}/page-{i}.html"
        state = RevisitState(
            fetched=now,
            status=200,
            digest="sha1:7VIJLAQOD6JZXOWSY667UPJJ4S2HEC5R",
            etag=f'"5f3c-{i:x}-61a2b3c4d5e6f"',
            last_modified="Thu, 01 Jan 2026 00:00:00 GMT",
            size=31_234,
            warc_id="<urn:uuid:3e806725-77a1-4335-b43b-c28ab2ac62eb>",
            warc_date="2026-12-02T00:58:52.279850Z",
            warc_uri=None,  # the page's own URL, as the crawler keeps it
        )
        return Revisit(url, now, 3, 0, "page", state.to_json(), now)

    batch = [revisit(i) for i in range(urls)]
    scratch = Path(tempfile.mkdtemp(prefix="bench-revisit-state-"))
    proc, redis_url, redis_dir = start_redis()
    try:
        local = LocalFrontier(scratch / "local")
        for start in range(0, urls, 10_000):
            local.schedule(batch[start : start + 10_000])
        local.close()
        db = scratch / "local" / "revisits.db"
        local_bytes = db.stat().st_size + sum(
            p.stat().st_size for p in db.parent.glob("revisits.db-*")
        )
        import redis

        client = redis.Redis.from_url(redis_url)
        before = int(client.info("memory")["used_memory"])
        shared = RedisFrontier(redis_url, "state", "node-1")
        for start in range(0, urls, 1000):
            shared.schedule(batch[start : start + 1000])
            shared.sync()
        shared.close()
        keys = {
            k: int(client.memory_usage(f"mpc:{{state}}:{k}", samples=0) or 0) for k in ("rv", "due")
        }
        used = int(client.info("memory")["used_memory"]) - before
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(redis_dir, ignore_errors=True)
    print(f"machine: {machine()}")
    length = statistics.mean(len(r.url) for r in batch)
    state = statistics.mean(len(r.state) for r in batch)
    print(f"{urls} URLs scheduled, URL {length:.0f} bytes, state (JSON) {state:.0f} bytes\n")
    print(f"local  revisits.db                {local_bytes / urls:>7.1f} bytes a URL (disk)")
    print(f"Redis  rv (hash)                  {keys['rv'] / urls:>7.1f} bytes a URL")
    print(f"Redis  due (sorted set)           {keys['due'] / urls:>7.1f} bytes a URL")
    print(f"Redis  used_memory growth         {used / urls:>7.1f} bytes a URL")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--state-urls", type=int, default=0, help="measure the schedule's bytes")
    args = parser.parse_args()
    if args.state_urls:
        state_bytes(args.state_urls)
        return
    if shutil.which("wget") is None:
        raise SystemExit("wget is missing (apt-get install wget)")
    scratch = Path(tempfile.mkdtemp(prefix="bench-revisit-"))
    log = scratch / "access.log"
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    try:
        with nginx_site(args.pages, args.size, access_log=log) as url:
            offset = 0
            for n in range(args.repeat):
                job, mirror = scratch / f"job-{n}", scratch / f"wget-{n}"
                crawl = [sys.executable, "-m", "mpcrawler", "crawl", url, "--job-dir", str(job)]
                crawl += ["--workers", str(args.workers), "--threads", str(args.threads)]
                crawl += ["--quiet"]
                wget = ["wget", "-q", "-r", "-l", "inf", "-N", "-P", str(mirror), url]
                plans = [
                    ("mpcrawler", [crawl, [*crawl, "--revisit-after", "0"]]),
                    ("wget -N", [wget, wget]),
                ]
                for name, (first, again) in plans if n % 2 == 0 else reversed(plans):
                    for phase, cmd in (("first", first), ("revisit", again)):
                        figures, offset = run(cmd, log, offset)
                        results.setdefault((name, phase), []).append(figures)
                shutil.rmtree(job, ignore_errors=True)
                shutil.rmtree(mirror, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"machine: {machine()}")
    print(
        f"site: {args.pages} pages of {args.size} bytes on nginx, no latency; mpcrawler "
        f"{args.workers} workers x {args.threads} slots; medians of {args.repeat} rounds, "
        "the tools alternated\n"
    )
    head = (
        f"{'tool':<10}{'crawl':<8}{'requests':>9}{'cond.':>7}{'304s':>7}{'body bytes':>13}"
        f"{'wall s':>8}{'CPU ms/page':>12}{'304 share':>10}{'bytes vs 1st':>13}"
    )
    print(head)
    for (name, phase), runs in results.items():
        med: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        first = statistics.median(r["body_bytes"] for r in results[(name, "first")])
        pages = max(1, med["requests"])
        share = med["not_modified"] / pages
        print(
            f"{name:<10}{phase:<8}{med['requests']:>9.0f}{med['conditional']:>7.0f}"
            f"{med['not_modified']:>7.0f}"
            f"{med['body_bytes']:>13,.0f}{med['wall_s']:>8.2f}"
            f"{1000 * med['cpu_s'] / pages:>12.2f}{share:>10.1%}"
            f"{med['body_bytes'] / max(1, first):>13.2%}"
        )


if __name__ == "__main__":
    main()
