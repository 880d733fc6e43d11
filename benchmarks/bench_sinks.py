"""What does each --out sink cost?  Records/s, CPU a record and bytes on
disk a record, for the same crawl with --extract written to the journal
alone (JSON Lines, the peer) and to the journal plus one sink each.

    python benchmarks/bench_sinks.py [--pages 50000] [--size 10000] [--repeat 3] \\
        [--servers builtin,nginx] [--sinks jsonl.gz,jsonl.zst,parquet,postgresql] \\
        [--pg postgresql://postgres@127.0.0.1:5432] [--out DIR]

Each crawl is of the built-in site (``--server builtin``: its own server;
``nginx``: a static copy served by Debian's nginx), 2 workers x 8 slots,
--extract, no robots.txt.  The variants alternate round by round (drift
on a shared machine hits each alike); the figures are medians.  CPU is
the crawl's processes' (master and workers) and, for PostgreSQL, the
database server's too (its processes' CPU over the crawl, reported
apart).  Bytes are the sink's files (a Parquet directory, a compressed
file) or the table's size (``pg_total_relation_size``), a record; the
journal's are the JSON Lines file's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common

JOURNAL = "jsonl"


class DbCpu:
    """The CPU seconds PostgreSQL's server processes spend meanwhile, sampled
    in a thread (a connection's backend exits with it, and its CPU time)."""

    def __init__(self) -> None:
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.stop = threading.Event()
        self.sample()
        self.before = set(self.first)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def sample(self) -> None:
        for proc in psutil.process_iter(["name"]):
            if (proc.info["name"] or "").startswith("postgres"):
                try:
                    times = proc.cpu_times()
                except psutil.Error:
                    continue
                self.first.setdefault(proc.pid, times.user + times.system)
                self.last[proc.pid] = times.user + times.system

    def run(self) -> None:
        while not self.stop.wait(0.1):
            self.sample()

    def seconds(self) -> float:
        self.stop.set()
        self.thread.join()
        self.sample()
        return sum(
            self.last[pid] - (self.first[pid] if pid in self.before else 0.0) for pid in self.last
        )


def size_of(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size if path.exists() else 0


def one_crawl(url: str, sink: str, workers: int, threads: int, pg: str) -> dict[str, float]:
    """One crawl with the journal and ``sink`` (or the journal alone)."""
    work = Path(tempfile.mkdtemp(prefix="bench-sinks-"))
    job = work / "job"
    extra: list[str] = ["--extract"]
    table = f"bench_{uuid.uuid4().hex[:10]}"
    target = None
    if sink == "postgresql":
        extra.append(f"--out={pg}/postgres?table={table}")
    elif sink != JOURNAL:
        target = work / f"pages.{sink}"
        extra.append(f"--out={target}")
    cmd = [
        sys.executable,
        "-m",
        "mpcrawler",
        *common.crawl_command(url, str(job), workers, threads, tuple(extra)),
    ]
    db = DbCpu() if sink == "postgresql" else None
    try:
        watched = common.run_watched(cmd)
        if watched.returncode != 0:
            raise SystemExit(f"crawl failed: {watched.stderr[-2000:]}")
        stats = json.loads((job / "stats.json").read_text())
        pages = stats["pages"]
        figures = {
            "pages": pages,
            "records_per_s": pages / stats["elapsed_s"],
            "cpu_ms": 1000 * (watched.cpu_master_s + watched.cpu_workers_s) / pages,
            "master_ms": 1000 * watched.cpu_master_s / pages,
            "journal_bytes": size_of(job / "pages.jsonl") / pages,
            "sink_bytes": 0.0,
            "db_cpu_ms": 0.0,
        }
        if target is not None:
            figures["sink_bytes"] = size_of(target) / pages
        if sink == "postgresql":
            import psycopg

            assert db is not None
            figures["db_cpu_ms"] = 1000 * db.seconds() / pages
            with psycopg.connect(f"{pg}/postgres", autocommit=True) as conn:
                row = conn.execute(f"SELECT pg_total_relation_size('{table}')").fetchone()
                figures["sink_bytes"] = (row[0] if row else 0) / pages
                conn.execute(f"DROP TABLE {table}")
        return figures
    finally:
        shutil.rmtree(work, ignore_errors=True)


def table(rows: dict[str, dict[str, float]]) -> str:
    base = rows[JOURNAL]
    lines = [
        "| sinks | records/s | CPU ms a record (x journal) | master ms | DB server ms | "
        "bytes a record: journal / sink (sink / journal) |",
        "|---|---|---|---|---|---|",
    ]
    for sink, m in rows.items():
        ratio = m["sink_bytes"] / m["journal_bytes"] if m["sink_bytes"] else 0.0
        lines.append(
            f"| {'journal' if sink == JOURNAL else 'journal + ' + sink} "
            f"| {m['records_per_s']:.0f} | {m['cpu_ms']:.2f} ({m['cpu_ms'] / base['cpu_ms']:.3f}) "
            f"| {m['master_ms']:.3f} | {m['db_cpu_ms']:.3f} "
            f"| {m['journal_bytes']:.0f} / {m['sink_bytes']:.0f} ({ratio:.3f}) |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--servers", default="builtin,nginx")
    parser.add_argument("--sinks", default="jsonl.gz,jsonl.zst,parquet,postgresql")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    variants = [JOURNAL, *args.sinks.split(",")]
    report = [f"# bench_sinks: {common.machine()}", f"# {vars(args)}"]
    for server in args.servers.split(","):
        with common.serve(server, args.pages, 0.0, args.size) as url:
            runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
            for round_ in range(args.repeat):
                for sink in variants if round_ % 2 == 0 else variants[::-1]:
                    figures = one_crawl(url, sink, args.workers, args.threads, args.pg)
                    runs[sink].append(figures)
                    print(f"{server} round {round_ + 1} {sink}: {figures}", file=sys.stderr)
            rows = {v: common.medians(r) for v, r in runs.items()}
            spread = {
                v: statistics.pstdev(x["cpu_ms"] for x in r) if len(r) > 1 else 0.0
                for v, r in runs.items()
            }
        report += [
            "",
            f"## {server}: {args.pages} pages of {args.size} bytes, --extract, "
            f"{args.workers}x{args.threads}, medians of {args.repeat} alternated runs",
            "",
            table(rows),
            "",
            "CPU spread (stdev ms): " + ", ".join(f"{v} {s:.3f}" for v, s in spread.items()),
        ]
    text = "\n".join(report)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "sinks.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
