"""Run one fuzz target under atheris (libFuzzer, coverage-guided).

    python fuzz/run.py TARGET [--runs N] [--seed S] [--max-len B] [--corpus DIR]

TARGET is one of fuzz/targets.py's TARGETS (url, analyzer, robots, frontier,
jsonl).  A finding (an exception other than the documented ones, a broken
invariant, an input slower than --timeout seconds, RSS over --rss-limit-mb)
stops the run with libFuzzer's report, a traceback and the input saved as
``crash-*`` / ``timeout-*`` / ``oom-*`` in the working directory.  At the end
one line gives the inputs run, their rate and the RSS after the first 10,000
inputs and at the end, so memory growth shows.  Needs ``pip install atheris``.
"""

from __future__ import annotations

import argparse
import atexit
import resource
import sys
import time
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

with atheris.instrument_imports(include=["mpcrawler", "targets", "protego", "bs4"]):
    from targets import TARGETS


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", choices=sorted(TARGETS))
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-len", type=int, default=4096)
    parser.add_argument("--timeout", type=int, default=10, help="seconds per input")
    parser.add_argument("--rss-limit-mb", type=int, default=2048)
    parser.add_argument("--corpus", type=Path, help="directory of inputs to start from and grow")
    args = parser.parse_args()

    target = TARGETS[args.target]
    seen = {"runs": 0, "rss_10k": 0.0, "reported": False}
    started = time.monotonic()

    def report() -> None:
        if seen["reported"]:
            return
        seen["reported"] = True
        took = time.monotonic() - started
        print(
            f"fuzz {args.target}: {seen['runs']:,} inputs in {took:.0f} s "
            f"({seen['runs'] / max(took, 1e-9):,.0f}/s); RSS {seen['rss_10k']:.1f} MB "
            f"after 10,000, {_rss_mb():.1f} MB at the end",
            flush=True,
        )

    def one_input(data: bytes) -> None:
        target(data)
        seen["runs"] += 1
        if seen["runs"] == 10_000:
            seen["rss_10k"] = _rss_mb()
        if seen["runs"] == args.runs:  # libFuzzer exits without running atexit
            report()

    atexit.register(report)  # after a finding
    libfuzzer = [
        sys.argv[0],
        f"-runs={args.runs}",
        f"-seed={args.seed}",
        f"-max_len={args.max_len}",
        f"-timeout={args.timeout}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        "-print_final_stats=1",
    ]
    if args.corpus:
        args.corpus.mkdir(parents=True, exist_ok=True)
        libfuzzer.append(str(args.corpus))
    atheris.Setup(libfuzzer, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
