"""How long a control command takes to act on a running crawl.

    python benchmarks/bench_control.py --repeat 5
    python benchmarks/bench_control.py --repeat 5 --redis redis://127.0.0.1:6379/0

Two built-in sites (the second on 127.0.0.2) with 20 ms of latency; a crawl
of the first (1 worker x 4 slots) in a job dir.  Each round sends, through
``python -m mpcrawler control``: pause, resume, set delay=0.5, add-seeds
(the second site, priority 10), exclude (the pages whose number ends in an
odd digit) and stop, and measures, from the command's start (the CLI's
process launch) and from the servers' logs:

* the answer: when the CLI returned with the crawl's answer;
* pause: the last request that arrived after the command was sent;
* resume: the first request after it;
* set delay=0.5: the first request after which every gap is 0.5 s or more;
* add-seeds: the new host's first request;
* exclude: the last request of an excluded page (0: none after the
  command was sent), and how many queued URLs the answer said it dropped;
* stop: the crawl's exit.

With ``--redis``, the crawl is shared by two nodes (1 worker x 2 slots
each) and every command goes through Redis (``control --redis URL --crawl
NAME``): its answer is the last node's, and the effects are the crawl's.

Prints the medians in seconds.
"""

from __future__ import annotations

import argparse
import itertools
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common
from mpcrawler.testing.site import SiteServer, TestSite, serving

ODD = re.compile(r"[13579]$")


def control(target: list[str], *args: str) -> float:
    """Send a command; seconds until its answer (every node's) came back."""
    return answer(target, *args)[0]


def answer(target: list[str], *args: str) -> tuple[float, str]:
    """Send a command to ``target`` (a job dir, or --redis URL --crawl NAME);
    seconds until its answers came back, and the answers."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mpcrawler", "control", *target, *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return time.monotonic() - started, done.stdout.strip()


def arrivals(server: SiteServer, after: float, path: re.Pattern[str] | None = None) -> list[float]:
    hits = list(server.log)
    return sorted(h.at for h in hits if h.at > after and (path is None or path.search(h.path)))


def start(busy: SiteServer, tmp: str, redis: str | None) -> tuple[list[str], list[Any]]:
    """The crawl: one process with a job dir, or two nodes of a shared
    crawl; (the control target, the processes)."""
    base = [sys.executable, "-m", "mpcrawler", "crawl", busy.url, "--quiet", "--no-robots"]
    base += ["--allow-private-networks", "--workers", "1"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}  # their logs
    if redis is None:
        job = str(Path(tmp) / "job")
        return [job], [subprocess.Popen([*base, "--threads", "4", "--job-dir", job], **quiet)]
    name = f"bench-control-{uuid.uuid4().hex[:8]}"
    shared = ["--redis", redis, "--crawl", name, "--threads", "2"]
    nodes = [
        subprocess.Popen([*base, *shared, "--node", f"n{i}", "--job-dir", f"{tmp}/n{i}"], **quiet)
        for i in range(2)
    ]
    return ["--redis", redis, "--crawl", name], nodes


def one_round(busy: SiteServer, new: SiteServer, redis: str | None) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        job, crawls = start(busy, tmp, redis)
        while len(busy.log) < 50:
            time.sleep(0.01)
        sent = time.monotonic()
        figures["pause answer"] = control(job, "pause")
        figures["pause: last request"] = max(arrivals(busy, sent), default=sent) - sent
        time.sleep(1.0)
        sent = time.monotonic()
        figures["resume answer"] = control(job, "resume")
        while not arrivals(busy, sent):
            time.sleep(0.005)
        figures["resume: first request"] = arrivals(busy, sent)[0] - sent
        sent = time.monotonic()
        figures["set answer"] = control(job, "set", "delay=0.5")
        while len(arrivals(busy, sent)) < 8:
            time.sleep(0.01)
        starts = arrivals(busy, sent)
        paced = next(
            i
            for i in range(len(starts))
            if all(b - a >= 0.45 for a, b in itertools.pairwise(starts[i:]))
        )
        figures["set delay: paced from"] = starts[paced] - sent
        sent = time.monotonic()
        figures["add-seeds answer"] = control(job, "add-seeds", new.url, "--priority", "10")
        while not arrivals(new, sent):
            time.sleep(0.005)
        figures["add-seeds: first request"] = arrivals(new, sent)[0] - sent
        sent = time.monotonic()
        figures["exclude answer"], said = answer(job, "exclude", ODD.pattern)
        figures["exclude: URLs dropped"] = sum(map(float, re.findall(r"applied: (\d+)", said)))
        time.sleep(1.0)  # what would still come
        last = max(arrivals(busy, sent, ODD), default=sent)
        figures["exclude: last excluded request"] = last - sent
        sent = time.monotonic()
        figures["stop answer"] = control(job, "stop")
        for crawl in crawls:
            crawl.wait(60)
        figures["stop: exit"] = time.monotonic() - sent
        if redis is not None:
            subprocess.run(
                [sys.executable, "-m", "mpcrawler", "reset", *job], check=True, capture_output=True
            )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--redis", metavar="URL", help="a crawl of two nodes through this Redis")
    args = parser.parse_args()
    print(common.machine())
    print("a crawl shared by 2 nodes through Redis" if args.redis else "one crawl, one job dir")
    rounds = []
    for _ in range(args.repeat):
        with (
            serving(SiteServer(TestSite(pages=20_000, size=5_000), latency=0.02)) as busy,
            serving(SiteServer(TestSite(pages=50, size=5_000), "127.0.0.2")) as new,
        ):
            rounds.append(one_round(busy, new, args.redis))
    print(f"\nmedians of {args.repeat} rounds, seconds from sending the command\n")
    print("| measure | median s | range |")
    print("|---|---|---|")
    for name in rounds[0]:
        values = [r[name] for r in rounds]
        print(f"| {name} | {statistics.median(values):.2f} | {min(values):.2f}-{max(values):.2f} |")


if __name__ == "__main__":
    main()
