"""Crawling again: a first crawl and a revisit of the unchanged site, on two
servers, beside GNU wget -N doing the same.

    python benchmarks/bench_revisit.py --pages 2000 --repeat 3

Debian's nginx serves a static copy of the built-in test site
(``common.nginx_site``); it sends ETag and Last-Modified and answers
conditional requests with 304 on its own, so the revisit is measured
against a server the project did not write.  The built-in site (served
from this process) does the same.  Each round, on each server, the tools
in alternated order:

* mpcrawler: ``crawl URL --job-dir J``, then ``crawl URL --job-dir J
  --revisit-after 0`` (robots.txt obeyed, as wget does);
* wget: ``wget -r -l inf -N -P DIR URL``, then the same command again
  (``-N``: If-Modified-Since from the files' times).  wget 1.21 does not
  recurse into a page that answered 304, so its revisit stops at the home
  page; so the older way runs too, ``--no-if-modified-since`` (a plain GET,
  the body not saved if the file is no newer: nginx still sends it).

From the server's log (nginx's access log, the built-in site's own):
requests, conditional ones, 304s and body bytes of each crawl; from the
process tree: wall time and CPU milliseconds a page (mpcrawler: master and
workers; wget: its one process, as "master").  Prints medians.

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
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import machine, nginx_site, run_watched, site_parser
from mpcrawler.testing.site import TestSite, serve_site


class Served:
    """What a server saw since a mark: nginx's access log, or the built-in
    site's own log (``SiteServer.log``)."""

    def __init__(self, log: Path | None = None, site: Any = None) -> None:
        self.log, self.site, self.mark = log, site, 0

    def since_mark(self) -> dict[str, float]:
        """Requests, conditional ones, 304s and body bytes since the last call."""
        if self.site is not None:
            hits = self.site.log[self.mark :]
            self.mark += len(hits)
            rows = [
                (h.status, h.body_bytes, bool(h.if_none_match or h.if_modified_since)) for h in hits
            ]
        else:
            assert self.log is not None
            text = self.log.read_text(encoding="utf-8") if self.log.exists() else ""
            lines = text[self.mark :].splitlines()
            self.mark = len(text)
            rows = []
            for line in lines:
                status, size, validators, _ = line.split(" ", 3)
                rows.append((int(status), int(size), validators not in ("-|-", "|")))
        return {
            "requests": len(rows),
            "conditional": sum(c for _, _, c in rows),
            "not_modified": sum(s == 304 for s, _, _ in rows),
            "body_bytes": sum(b for _, b, _ in rows),
        }


def run(cmd: list[str], served: Served) -> dict[str, float]:
    watched = run_watched(cmd, interval=0.05)
    if watched.returncode not in (0, 8):  # wget: 8 for the 404 of robots.txt
        raise SystemExit(f"{cmd[0]} failed ({watched.returncode}): {watched.stderr[-2000:]}")
    return {
        **served.since_mark(),
        "wall_s": watched.wall_s,
        "master_s": watched.cpu_master_s,
        "workers_s": watched.cpu_workers_s,
    }


def state_bytes(urls: int) -> None:
    """Bytes a URL of the revisit schedule, in the local frontier and in Redis."""
    import time

    from benchmarks.common import start_redis
    from mpcrawler.frontier import LocalFrontier, Revisit
    from mpcrawler.frontier.redis.frontier import RedisFrontier
    from mpcrawler.revisits.decisions import RevisitState

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
    parser = site_parser(__doc__)
    parser.add_argument("--state-urls", type=int, default=0, help="measure the schedule's bytes")
    args = parser.parse_args()
    if args.state_urls:
        state_bytes(args.state_urls)
        return
    if shutil.which("wget") is None:
        raise SystemExit("wget is missing (apt-get install wget)")
    scratch = Path(tempfile.mkdtemp(prefix="bench-revisit-"))
    results: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    try:
        with ExitStack() as stack:
            log = scratch / "access.log"
            nginx = stack.enter_context(nginx_site(args.pages, args.size, access_log=log))
            builtin = stack.enter_context(serve_site(TestSite(pages=args.pages, size=args.size)))
            servers = {
                "nginx": (nginx, Served(log=log)),
                "builtin": (builtin.url, Served(site=builtin)),
            }
            for n in range(args.repeat):
                for server, (url, served) in servers.items():
                    for tool, first, again in plans(url, scratch / f"{server}-{n}", args):
                        for phase, cmd in (("first", first), ("revisit", again)):
                            results.setdefault((server, tool, phase), []).append(run(cmd, served))
                    shutil.rmtree(scratch / f"{server}-{n}", ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"machine: {machine()}")
    print(
        f"site: {args.pages} pages of {args.size} bytes, no latency; mpcrawler "
        f"{args.workers} workers x {args.threads} slots; medians of {args.repeat} rounds, "
        "the tools alternated\n"
    )
    print(
        f"{'server':<8}{'tool':<32}{'crawl':<8}{'requests':>9}{'cond.':>7}{'304s':>7}"
        f"{'body bytes':>13}{'wall s':>8}{'master ms/p':>12}{'workers ms/p':>13}"
    )
    for (server, tool, phase), runs in results.items():
        med: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        pages = max(1, med["requests"])
        print(
            f"{server:<8}{tool:<32}{phase:<8}{med['requests']:>9.0f}{med['conditional']:>7.0f}"
            f"{med['not_modified']:>7.0f}{med['body_bytes']:>13,.0f}{med['wall_s']:>8.2f}"
            f"{1000 * med['master_s'] / pages:>12.2f}{1000 * med['workers_s'] / pages:>13.2f}"
        )


def plans(
    url: str, scratch: Path, args: argparse.Namespace
) -> list[tuple[str, list[str], list[str]]]:
    """(tool, first crawl, revisit) of each tool, in a fresh directory; the
    order alternates with the directory's round number."""
    job = scratch / "job"
    crawl = [sys.executable, "-m", "mpcrawler", "crawl", url, "--job-dir", str(job), "--quiet"]
    crawl += ["--workers", str(args.workers), "--threads", str(args.threads)]
    wget = ["wget", "-q", "-r", "-l", "inf", "-N", "-P", str(scratch / "wget"), url]
    by_get = [*wget[:6], "--no-if-modified-since", "-P", str(scratch / "wget-get"), url]
    found = [
        ("mpcrawler", crawl, [*crawl, "--revisit-after", "0"]),
        ("wget -N", wget, wget),
        ("wget -N --no-if-modified-since", by_get, by_get),
    ]
    return found if int(scratch.name.rsplit("-", 1)[1]) % 2 == 0 else found[::-1]


if __name__ == "__main__":
    main()
