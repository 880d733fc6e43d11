"""What matching URL patterns in linear time costs: RE2 against Python's re.

    python benchmarks/bench_url_rules.py --urls 100000 --repeat 5

Every link a worker finds is asked of the URL rules; with ``--reject-regex``
and ``--accept-regex`` given, that is a pattern match per link.  mpcrawler
matches with RE2 (``mpcrawler.web.patterns``), whose time is linear in the
URL's length whatever the pattern; Python's ``re`` backtracks.  This times,
in one process and alternated, each way of matching the same patterns
against the same URLs (realistic documentation-site links): any of 1 and of
4 patterns, and ``UrlRules.refusal`` whole (scope, 3 reject and 1 accept
patterns, extensions, path traps).  Then the hostile case: one backtracking
pattern against a URL a site could aim at it, with ``re`` cut off early.
Prints nanoseconds a URL, medians of ``--repeat`` rounds.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mpcrawler.settings import Settings
from mpcrawler.web.filters import UrlRules
from mpcrawler.web.patterns import PatternSet
from mpcrawler.web.urls import Scope

REJECT = [r"/search\.html", r"/archives/", r"\?replytocom="]
ACCEPT = [r"^https://docs\.example\.org/"]


def urls(count: int) -> list[str]:
    return [
        f"https://docs.example.org/3/library/section{i % 97}/page{i}.html?highlight={i % 7}"
        for i in range(count)
    ]


def per_url(check: Callable[[str], object], links: list[str]) -> float:
    """Nanoseconds a URL of ``check`` over ``links``."""
    started = time.perf_counter()
    for link in links:
        check(link)
    return (time.perf_counter() - started) / len(links) * 1e9


def python_re(patterns: list[str]) -> Callable[[str], bool]:
    compiled = [re.compile(p) for p in patterns]
    return lambda url: any(c.search(url) for c in compiled)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    links = urls(args.urls)
    settings = Settings(seeds=["https://docs.example.org/"], reject_regex=REJECT)
    settings.accept_regex = ACCEPT
    rules = UrlRules.from_settings(settings, Scope.from_seeds(settings.seeds))
    cases: dict[str, Callable[[str], object]] = {
        "1 pattern, re": python_re(ACCEPT),
        "1 pattern, RE2": PatternSet(ACCEPT).any,
        "4 patterns, re": python_re(REJECT + ACCEPT),
        "4 patterns, RE2 (one set)": PatternSet(REJECT + ACCEPT).any,
        "UrlRules.refusal (RE2)": rules.refusal,
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, check in cases.items():  # alternated: drift hits each alike
            times[name].append(per_url(check, links))
    print(f"{args.urls} URLs, medians of {args.repeat} alternated rounds")
    for name, runs in times.items():
        print(f"  {name:28s} {statistics.median(runs):8.0f} ns a URL")
    hostile = "https://docs.example.org/x/" + "a" * 24 + "!"
    started = time.perf_counter()
    PatternSet(["(a+)+$"]).any(hostile)
    re2_s = time.perf_counter() - started
    started = time.perf_counter()
    re.search("(a+)+$", hostile)  # 2**24 steps: each 'a' more doubles it
    re_s = time.perf_counter() - started
    print(f"  (a+)+$ against a+{24} a's and '!': RE2 {re2_s * 1e6:.0f} us, re {re_s:.2f} s")


if __name__ == "__main__":
    main()
