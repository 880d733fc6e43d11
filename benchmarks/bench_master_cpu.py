"""The master's CPU a page: what a crawl costs it, what one page more costs
it, and where that goes.

    python benchmarks/bench_master_cpu.py --servers builtin,nginx --pages 2000,8000 --repeat 3 \\
        [--profile [--keep-profile DIR]] [--base REV]

Crawls the built-in site (its own server, and nginx) with 2 workers x 4
threads, host concurrency 64, ``--no-robots``, for each ``--pages`` count,
alternated, and reports the master's CPU (user + system, its own
``getrusage`` in stats.json): milliseconds a page for the whole crawl (the
figure issue 27 sets a target for), and, from two page counts, the
*marginal* cost of a page (the slope) and the *fixed* cost of a crawl (the
intercept: interpreter, imports, job dir, starting the workers, stopping).
With ``--base REV``, that revision crawls too, in the same rounds.

With ``--profile``, one crawl more of the largest count runs with the master
under cProfile (CPU time), with each tree; its steady state (``Engine.run``) is split into
the parts below, as shares, and scaled to the marginal cost measured
without the profiler:

- ``wait``: the pool's one wait, reading and unpickling the workers' messages;
- ``dispatch``: the scheduler choosing, leasing from the frontier, and
  sending FetchBatch messages;
- ``admit``: links into the frontier (the seen set, the queue, its journal);
- ``record``: building each record, writing it (``pages.jsonl``), acking
  its URL (the journal), counting;
- ``checkpoint``: job.json and the frontier's sync, every few seconds;
- ``other``: the loop itself, routing results, progress, metrics snapshot.

Then the C functions with the most time of their own (unpickling, the
syscalls, the JSON encoder, sqlite): what no Python could save; the rest of
a page's cost is the interpreter running the master's Python.
"""

from __future__ import annotations

import argparse
import json
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common

# The master under cProfile with a CPU clock.  From -c, so the forkserver has
# no main module to run again.
PROFILED = """
import cProfile, runpy, sys, time
sys.argv = ["mpcrawler", *sys.argv[2:]]
profile = cProfile.Profile(time.process_time)
try:
    profile.runcall(runpy.run_module, "mpcrawler", run_name="__main__")
except SystemExit:
    pass
profile.dump_stats(OUT)
"""

TOP_BUILTINS = 8  # C functions (pickle, syscalls, json, sqlite) shown by their own time
PARTS = {  # part: (file, function) whose cumulative time it is
    "wait": ("master/pool.py", "wait"),
    "dispatch": ("master/engine.py", "dispatch"),
    "admit": ("master/settle.py", "admit"),
    "record": ("master/settle.py", "_record"),
    "checkpoint": ("master/job.py", "checkpoint"),
}


def extra(pages: int) -> tuple[str, ...]:
    """The crawl's options beyond ``common.crawl_command``'s."""
    return ("--host-concurrency", "64", "--max-pages", str(pages))


def master_cpu(url: str, pages: int, root: Path) -> tuple[int, float]:
    """(pages crawled, the master's CPU seconds) of one crawl with the tree ``root``."""
    stats, _ = common.crawl(url, 2, 4, extra=extra(pages), root=root)
    return stats["pages"], stats["processes"]["master"]["cpu_s"]


def profile_parts(url: str, pages: int, root: Path, keep: Path | None = None) -> dict[str, float]:
    """Shares of the master's steady state (Engine.run) by part, and of the
    whole run outside it (``fixed``), from one profiled crawl (its profile
    copied to ``keep``, for pstats)."""
    work = Path(tempfile.mkdtemp(prefix="bench-master-"))
    try:
        out = work / "master.prof"
        code = PROFILED.replace("OUT", repr(str(out)))
        options = common.crawl_command(url, str(work / "job"), 2, 4, extra(pages))
        subprocess.run(
            [sys.executable, "-c", code, "-", *options],
            check=True,
            stdout=subprocess.DEVNULL,
            env=common.crawl_env(root),
            cwd=root,
        )
        if keep is not None:
            shutil.copyfile(out, keep)
        stats = pstats.Stats(str(out))
        cumulative: dict[tuple[str, str], float] = {}
        builtin: dict[str, float] = {}  # C functions: their own time
        for (file, _, name), (_, _, own, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
            key = ("/".join(Path(file).parts[-2:]), name)
            cumulative[key] = cumulative.get(key, 0.0) + cum
            if file == "~":
                builtin[name] = builtin.get(name, 0.0) + own
        run = cumulative[("master/engine.py", "run")]
        total = stats.total_tt  # type: ignore[attr-defined]
        shares = {part: cumulative.get(key, 0.0) / run for part, key in PARTS.items()}
        settle = cumulative[("master/engine.py", "settle")]
        shares["other"] = 1.0 - (
            shares["wait"] + shares["dispatch"] + settle / run + shares["checkpoint"]
        )
        shares["settle, beyond admit and record"] = (
            settle / run - shares["admit"] - shares["record"]
        )
        shares["fixed"] = (total - run) / total
        for name, own in sorted(builtin.items(), key=lambda kv: -kv[1])[:TOP_BUILTINS]:
            shares[f"C: {name}"] = own / run
        return shares
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--servers", default="builtin,nginx")
    parser.add_argument("--pages", default="2000,8000", help="two page counts or more")
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--keep-profile", type=Path, help="with --profile: keep each profile in this folder"
    )
    parser.add_argument("--base", help="also crawl with this git revision, alternated")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    counts = sorted(int(n) for n in args.pages.split(","))
    servers = args.servers.split(",")
    runs: dict[tuple[str, str, int], list[tuple[int, float]]] = {}
    parts: dict[tuple[str, str], dict[str, float]] = {}
    with ExitStack() as stack:
        trees = {"this": common.ROOT}
        if args.base:
            trees["base"] = stack.enter_context(common.worktree(args.base))
        urls = {
            server: stack.enter_context(common.serve(server, counts[-1], 0.0, args.size))
            for server in servers
        }
        for round_ in range(args.repeat):
            order = [(t, n) for t in trees for n in counts]
            for server in servers:
                for tree, n in order if round_ % 2 == 0 else order[::-1]:
                    figures = master_cpu(urls[server], n, trees[tree])
                    runs.setdefault((tree, server, n), []).append(figures)
                    print(f"round {round_ + 1}: {tree} {server} {n}:", figures)
        if args.profile:
            for tree, root in trees.items():
                for server in servers:
                    keep = (
                        args.keep_profile / f"master-{tree}-{server}.prof"
                        if args.keep_profile
                        else None
                    )
                    parts[tree, server] = profile_parts(urls[server], counts[-1], root, keep)
    print(f"\nmachine: {common.machine()}")
    print(
        f"built-in site, pages of {args.size} bytes; 2 workers x 4 threads, host concurrency "
        f"64, --no-robots; medians of {args.repeat} alternated runs"
        + (f"; base {args.base}" if args.base else "")
        + "\n"
    )
    print("| tree | server | pages | master CPU s | ms a page |")
    print("|---|---|---|---|---|")
    result: dict[str, Any] = {"args": vars(args), "machine": common.machine(), "runs": {}}
    for tree in trees:
        for server in servers:
            medians = {}
            for n in counts:
                pages = statistics.median(p for p, _ in runs[tree, server, n])
                cpu = statistics.median(c for _, c in runs[tree, server, n])
                medians[n] = (pages, cpu)
                print(f"| {tree} | {server} | {pages:.0f} | {cpu:.3f} | {1000 * cpu / pages:.3f} |")
            (p1, c1), (p2, c2) = medians[counts[0]], medians[counts[-1]]
            slope = (c2 - c1) / (p2 - p1)
            fixed = c1 - slope * p1
            result["runs"][f"{tree} {server}"] = {
                "medians": {str(n): medians[n] for n in counts},
                "marginal_ms": 1000 * slope,
                "fixed_s": fixed,
            }
            more = f"a page more | fixed {fixed:.3f} s | **{1000 * slope:.3f}**"
            print(f"| {tree} | {server} | {more} |")
    for (tree, server), shares in parts.items():
        slope_ms = result["runs"][f"{tree} {server}"]["marginal_ms"]
        print(
            f"\n{tree}, {server}, one profiled crawl of {counts[-1]} pages: a page more, by part\n"
        )
        print("| part | share | ms a page |")
        print("|---|---|---|")
        for part, share in shares.items():
            if part != "fixed":
                print(f"| {part} | {100 * share:.0f}% | {share * slope_ms:.3f} |")
        print(f"\n(outside the engine's loop: {100 * shares['fixed']:.0f}% of the profiled CPU)")
        result["runs"][f"{tree} {server}"]["parts"] = shares
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
