"""``status``, ``verify``, ``reset`` and ``report``: what a job dir or a
shared crawl says of itself."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import stopsignals
from ..errors import UsageError
from ..web.redact import redact_url
from .crawl import pairs
from .parser import EXIT_ERROR, EXIT_OK


def run_status(args: argparse.Namespace) -> int:
    from ..output.jobdir import JobConflict, JobDir

    if args.redis or args.crawl:
        return run_shared_status(args)
    if args.serve is not None:
        raise UsageError(
            "status --serve takes --redis URL --crawl NAME (a crawl serves its own figures "
            "with --metrics-port)"
        )
    if args.job_dir is None:
        raise UsageError("status needs a job directory, or --redis URL --crawl NAME")
    job = JobDir(args.job_dir)
    if not job.exists() and not job.started():
        raise UsageError(f"{args.job_dir} is not a job directory (no job.json)")
    try:
        status = job.status()
    except (JobConflict, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        for key, value in status.items():
            print(f"{key.replace('_', ' '):<15}{_cell(value)}")
    return EXIT_OK


def run_shared_status(args: argparse.Namespace) -> int:
    """``status --redis URL --crawl NAME``: crawl-wide totals, a row per node."""
    from ..frontier.redis.status import crawl_status

    if not (args.redis and args.crawl) or args.job_dir:
        raise UsageError("status of a shared crawl takes --redis URL --crawl NAME, no DIR")
    status = crawl_status(args.redis, args.crawl)  # FrontierError: exit 1
    if not status["nodes"] and not status["seen"] and not status["lost"]:
        raise UsageError(f"no crawl {args.crawl!r} on {redact_url(args.redis)}")
    if args.serve is not None:
        return serve_shared_status(args)
    if args.json:
        print(json.dumps(status, indent=2))
        return EXIT_ERROR if status["lost"] else EXIT_OK
    if status["lost"]:
        print(f"mpcrawler: error: {status['lost']}", file=sys.stderr)
        return EXIT_ERROR
    keys = ("crawl", "queued", "leased", "done", "errors", "seen", "late", "pages_per_s")
    if status["scheduled"]:
        keys += ("scheduled", "next_due")
    for key in keys:
        print(f"{key.replace('_', ' '):<15}{_cell(status[key])}")
    columns = ("node", "alive", "last_heartbeat_s", "pages", "errors", "pages_per_s", "hosts_held")
    heads = ("node", "alive", "heartbeat", "pages", "errors", "pages/s", "hosts")
    rows = [heads] + [
        tuple(f"{row[c]} s ago" if c == "last_heartbeat_s" else _cell(row[c]) for c in columns)
        for row in status["nodes"]
    ]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(heads))]
    print()
    for r in rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    if status["commands"]:
        print("\ncommands")
    for command in status["commands"]:
        said = "; ".join(f"{n}: {a}" for n, a in sorted(command["answers"].items()))
        words = [str(command.get("command")), *map(str, (command.get("args") or {}).values())]
        print(f"  {' '.join(words)} -> {said or 'no answer yet'}")
    return EXIT_OK


def serve_shared_status(args: argparse.Namespace) -> int:
    """``status --redis URL --crawl NAME --serve PORT``: the crawl-wide
    figures on /metrics and /status, read from Redis at each request, until
    a stop signal."""
    import threading

    from ..frontier.redis.status import crawl_status
    from ..output.metrics import MetricsServer, crawl_families

    def status() -> dict[str, Any]:
        return crawl_status(args.redis, args.crawl)

    try:
        server = MetricsServer(
            args.bind, args.serve, status, collect=lambda: crawl_families(status())
        )
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.bind}:{args.serve}: {exc.strerror}") from None
    stop = threading.Event()
    stopsignals.listen(lambda signum: stop.set())
    server.start()
    host, port = server.address
    print(f"serving crawl {args.crawl!r} on http://{host}:{port}/metrics and /status", flush=True)
    try:
        stop.wait()
    finally:
        stopsignals.listen(None)
        server.close()
    return EXIT_OK


def run_verify(args: argparse.Namespace) -> int:
    """``verify DIR``: job.json, the frontier, its journal, the seen set and
    the records checked against each other (reads only); exit 1 on damage."""
    from ..output.jobdir import JobDir

    job = JobDir(args.job_dir)
    if not job.exists():
        raise UsageError(f"{args.job_dir} is not a job directory (no job.json)")
    settings, state = job.read()  # JobDamaged: exit 1
    out = Path(settings["out"]) if settings.get("out") else None
    reasons = job.damage(state, out)
    records = out or job.path / "pages.jsonl"
    if records.exists():
        with open(records, "rb") as f:
            lines = f.read().split(b"\n")
        for number, line in enumerate(lines[:-2], 1):  # the last may be torn by a kill
            try:
                if not isinstance(json.loads(line), dict):
                    raise ValueError("not an object")
            except ValueError:
                reasons.append(f"{records} line {number} is not a JSON record")
                break
    for reason in reasons:
        print(f"damaged: {reason}")
    if reasons:
        return EXIT_ERROR
    print(f"{args.job_dir}: ok ({state.pages} pages, state {state.state})")
    return EXIT_OK


def run_reset(args: argparse.Namespace) -> int:
    """``reset --redis URL --crawl NAME``: delete the crawl's keys (a fresh start)."""
    from ..frontier.redis.status import reset_crawl

    if not args.redis:
        raise UsageError("reset needs --redis URL (or REDIS_URL) and --crawl NAME")
    deleted = reset_crawl(args.redis, args.crawl)  # live nodes: exit 2; unreachable: exit 1
    print(f"crawl {args.crawl!r}: {deleted} keys deleted; start it with new job dirs")
    return EXIT_OK


def run_report(args: argparse.Namespace) -> int:
    from ..output.jobdir import JobConflict, JobDir
    from ..output.report import write_report

    if not JobDir(args.job_dir).exists():
        raise UsageError(f"{args.job_dir} is not a job directory (no job.json)")
    try:
        path = write_report(args.job_dir)
    except (JobConflict, OSError) as exc:
        raise UsageError(str(exc)) from None
    print(f"report written to {path}")
    return EXIT_OK


def _cell(value: Any) -> str:
    """A value as a person reads it: no Python reprs."""
    if isinstance(value, dict):
        return pairs(dict(sorted(value.items()))) or "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return "-" if value is None or value == "" else str(value)
