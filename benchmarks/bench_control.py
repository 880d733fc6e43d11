"""How long a control command takes to act on a running crawl.

    python benchmarks/bench_control.py --repeat 5

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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common
from mpcrawler.testing.site import SiteServer, TestSite, serving

ODD = re.compile(r"[13579]$")


def control(job: str, *args: str) -> float:
    """Send a command; seconds until its answer came back."""
    return answer(job, *args)[0]


def answer(job: str, *args: str) -> tuple[float, str]:
    """Send a command; seconds until its answer came back, and the answer."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mpcrawler", "control", job, *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return time.monotonic() - started, done.stdout.strip()


def arrivals(server: SiteServer, after: float, path: re.Pattern[str] | None = None) -> list[float]:
    hits = list(server.log)
    return sorted(h.at for h in hits if h.at > after and (path is None or path.search(h.path)))


def one_round(busy: SiteServer, new: SiteServer) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        job = str(Path(tmp) / "job")
        crawl = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mpcrawler",
                "crawl",
                busy.url,
                "--job-dir",
                job,
                "--quiet",
                "--workers",
                "1",
                "--threads",
                "4",
                "--no-robots",
                "--allow-private-networks",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # its log of each command
        )
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
        figures["exclude: URLs dropped"] = float(said.split("applied: ")[1].split()[0])
        time.sleep(1.0)  # what would still come
        last = max(arrivals(busy, sent, ODD), default=sent)
        figures["exclude: last excluded request"] = last - sent
        sent = time.monotonic()
        figures["stop answer"] = control(job, "stop")
        crawl.wait(60)
        figures["stop: exit"] = time.monotonic() - sent
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(common.machine())
    rounds = []
    for _ in range(args.repeat):
        with (
            serving(SiteServer(TestSite(pages=20_000, size=5_000), latency=0.02)) as busy,
            serving(SiteServer(TestSite(pages=50, size=5_000), "127.0.0.2")) as new,
        ):
            rounds.append(one_round(busy, new))
    print(f"\nmedians of {args.repeat} rounds, seconds from sending the command\n")
    print("| measure | median s | range |")
    print("|---|---|---|")
    for name in rounds[0]:
        values = [r[name] for r in rounds]
        print(f"| {name} | {statistics.median(values):.2f} | {min(values):.2f}-{max(values):.2f} |")


if __name__ == "__main__":
    main()
