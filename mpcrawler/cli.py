"""The command line: ``python -m mpcrawler COMMAND``, COMMAND one of crawl,
check-url, control, demo, status, verify, report, reset, serve-site.

Parses and checks everything before anything is crawled: a usage error
prints one line on stderr and exits 2.  Then it builds a Settings, runs a
Crawler and prints the summary.

Exit codes: 0 the crawl completed (failed pages are data, not a failure of
the job); 2 usage or configuration error; 130 interrupted; 1 internal error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import typing
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from . import stopsignals
from .__version__ import __version__
from .configfile import apply_config, to_toml
from .errors import FrontierError, MpcrawlerError, UsageError
from .settings import (
    MAX_SLOTS,
    OPTIONS,
    UPPER_BOUNDS,
    Settings,
    check_redis_url,
    flag_of,
)
from .web.redact import hide_userinfo, redact_url
from .web.urls import InvalidURL, host_key, split_credentials

__all__ = ["main"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

EPILOG = """exit codes:
  0    the crawl completed (pages that failed are data, not a failure of the job)
  1    internal error
  2    usage or configuration error
  130  interrupted by SIGINT, SIGTERM or SIGHUP (rerun the same command to resume)

limits (checked before anything is written):
  """ + textwrap.fill(
    ", ".join(f"{flag_of(name)} {most:g}" for name, most in UPPER_BOUNDS.items())
    + f" (seconds for times); --workers x --threads {MAX_SLOTS}",
    width=76,
    subsequent_indent="  ",
)


SHARED_GROUP = "many machines (a crawl shared through Redis)"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _size(text: str) -> int:
    """Bytes, with an optional K, M or G (powers of 1024): ``1G``, ``500M``."""
    number, unit = text.strip(), ""
    if number[-1:].upper() in _SIZE_UNITS:
        number, unit = number[:-1], number[-1].upper()
    return _integer(number) * _SIZE_UNITS[unit]


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(text: str) -> float:
    """Seconds, as a number with an optional unit: ``0``, ``30s``, ``10m``, ``6h``, ``1d``."""
    number, unit = text.strip(), "s"
    if number[-1:].lower() in _DURATION_UNITS:
        number, unit = number[:-1], number[-1].lower()
    try:
        value = float(number)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a duration (0, 30s, 10m, 6h, 1d): {text!r}")
    return value * _DURATION_UNITS[unit]


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return value


def _port(text: str) -> int:
    value = _non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a port (0 to 65535): {text!r}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _add_crawl_options(p: argparse.ArgumentParser) -> None:
    """Every option of the table (settings.OPTIONS), in its order.  Only the
    type is checked here; the bounds are Settings.validate()'s, for the CLI
    and the Python API alike."""
    defaults = Settings()
    hints = typing.get_type_hints(Settings)
    groups = {
        "crawl": p,
        "filters": p.add_argument_group("what to crawl (see 'Choosing what to crawl')"),
        "requests": p.add_argument_group("what every request carries"),
        "shared": p.add_argument_group(SHARED_GROUP),
    }
    p.add_argument(
        "--config",
        metavar="FILE.toml",
        help="read options from this TOML file (by their names; the command line overrides)",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the effective settings as TOML (secrets redacted) and exit",
    )
    for name, how in OPTIONS.items():
        kind, default = hints[name], getattr(defaults, name)
        extra: dict[str, Any] = {}
        if how.metavar:
            extra["metavar"] = how.metavar
        if kind is bool:  # a switch: --x sets True, --no-x (default True) sets False
            extra["action"] = "store_false" if default else "store_true"
        elif kind == list[str]:
            extra.update(action="append", default=[])
        else:
            base = next((k for k in (int, float) if k in typing.get_args(kind) or kind is k), str)
            parse = (
                _size
                if how.size
                else _duration
                if how.duration
                else {int: _integer, float: _number}.get(base, str)
            )
            extra.update(type=parse, default=default, choices=how.choices)
        groups[how.group].add_argument(flag_of(name), dest=name, help=how.help, **extra)


def _add_seed_options(p: argparse.ArgumentParser, seeds_help: str) -> None:
    """The seeds and their credentials, as ``read_seeds`` and
    ``http_credentials`` take them (crawl, and check-url's crawl)."""
    p.add_argument("seeds", nargs="*", metavar="SEED", help=seeds_help)
    p.add_argument(
        "--seeds-file",
        metavar="F",
        help="one URL a line, optionally followed by a TAB and its integer priority; "
        "blank lines and # comments ignored",
    )
    p.add_argument(
        "--http-user",
        metavar="USER",
        help="send the seeds' hosts Basic credentials (as a seed's user:password@ does)",
    )
    p.add_argument(
        "--http-password-file",
        metavar="FILE",
        help="--http-user's password, read from FILE (or MPCRAWLER_HTTP_PASSWORD)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mpcrawler",
        description="A multiprocess web crawler.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mpcrawler {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    crawl = sub.add_parser(
        "crawl",
        help="crawl from seed URLs",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_seed_options(crawl, "http(s) URLs to start from")
    _add_crawl_options(crawl)

    check = sub.add_parser(
        "check-url",
        help="say, without any network, whether a crawl would fetch URL, and which rule refuses it",
    )
    check.add_argument("url", metavar="URL")
    _add_seed_options(check, "the crawl's seeds (default: the job dir's, else URL itself)")
    _add_crawl_options(check)

    control = sub.add_parser(
        "control",
        help="steer a running crawl: pause, resume, stop, set, add-seeds, exclude",
        description="Steer a crawl through its job dir (control DIR COMMAND), or every node "
        "of a shared crawl (control --redis URL --crawl NAME COMMAND).  COMMAND is one of "
        "pause, resume, stop, set NAME=VALUE..., add-seeds URL..., exclude REGEX.",
    )
    control.add_argument(
        "words",
        nargs="+",
        metavar="[DIR] COMMAND [ARG ...]",
        help="set: NAME=VALUE with NAME delay, host-concurrency, max-pages, max-depth; "
        "add-seeds: URLs; exclude: a regular expression",
    )
    control.add_argument("--redis", metavar="URL", help="a shared crawl's Redis ($REDIS_URL)")
    control.add_argument("--crawl", metavar="NAME", help="the shared crawl (with --redis)")
    control.add_argument("--file", metavar="F", help="add-seeds: one URL a line")
    control.add_argument(
        "--priority", type=_integer, default=0, help="add-seeds: their priority (default 0)"
    )
    control.add_argument(
        "--wait",
        type=_non_negative_float,
        default=10.0,
        help="seconds to wait for a running crawl's answer (default %(default)s)",
    )

    demo = sub.add_parser("demo", help="serve the built-in demo site and crawl it")
    demo.add_argument("--pages", type=_positive_int, default=500)
    demo.add_argument("--workers", type=_positive_int, default=Settings().workers)
    demo.add_argument(
        "--job-dir",
        default="mpcrawler-demo",
        help="where the results go; emptied first (default %(default)s)",
    )
    demo.add_argument("--quiet", action="store_true")

    status = sub.add_parser(
        "status", help="print a job's state (or a shared crawl's) without touching it"
    )
    status.add_argument("job_dir", metavar="DIR", nargs="?")
    status.add_argument("--redis", metavar="URL", help="a shared crawl's Redis")
    status.add_argument("--crawl", metavar="NAME", help="the shared crawl (with --redis)")
    status.add_argument("--json", action="store_true", help="as JSON")
    status.add_argument(
        "--serve",
        metavar="PORT",
        type=_port,
        help="with --redis: serve the crawl-wide figures on /metrics (Prometheus) and "
        "/status (JSON) until stopped",
    )
    status.add_argument(
        "--bind", metavar="ADDR", default="127.0.0.1", help="--serve's address (%(default)s)"
    )

    report = sub.add_parser(
        "report", help="write DIR/report.html: charts and tables of how a crawl went"
    )
    report.add_argument("job_dir", metavar="DIR")
    verify = sub.add_parser(
        "verify", help="check every file of a job dir; exit 1 and say what is damaged"
    )
    verify.add_argument("job_dir", metavar="DIR")
    reset = sub.add_parser(
        "reset",
        help="delete a shared crawl's state in Redis, for a fresh start (no node may be running)",
    )
    reset.add_argument("--redis", metavar="URL", help="the crawl's Redis (default: $REDIS_URL)")
    reset.add_argument("--crawl", metavar="NAME", required=True, help="the shared crawl")
    site = sub.add_parser("serve-site", help="serve the built-in test site until stopped")
    site.add_argument("--pages", type=_positive_int, default=500)
    site.add_argument(
        "--latency", type=_non_negative_float, default=0.0, help="seconds of delay per request"
    )
    site.add_argument("--size", type=_non_negative_int, default=30_000, help="bytes per page")
    site.add_argument("--port", type=_non_negative_int, default=8000, help="0 picks a free one")
    site.add_argument("--host", default="127.0.0.1")
    site.add_argument("--fanout", type=_non_negative_int, default=12, help="extra links per page")
    site.add_argument(
        "--embeds",
        action="store_true",
        help="pages need requisites (stylesheets, a script, images, a logo on 127.0.0.2)",
    )
    site.add_argument(
        "--images", type=_positive_int, default=10, help="--embeds: images the pages share in turn"
    )
    return parser


def read_seeds(
    args: argparse.Namespace,
) -> tuple[list[str], dict[str, int], dict[str, list[str]]]:
    """The seeds, the priorities the seeds file gave some of them
    (``URL<TAB>PRIORITY``; a seed without one has priority 0), and the
    credentials the seeds carried, by host (taken out of the URLs here)."""
    seeds: list[str] = []
    priorities: dict[str, int] = {}
    credentials: dict[str, list[str]] = {}

    def take(text: str) -> str:
        url, creds = split_credentials(text)
        if creds is not None:
            credentials.setdefault(host_key(url), list(creds))
        return url

    for seed in args.seeds:
        try:
            seeds.append(take(seed))
        except InvalidURL as exc:
            raise UsageError(f"malformed seed URL {redact_url(seed)!r}: {exc.reason}") from None
    if args.seeds_file:
        try:
            lines = Path(args.seeds_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read seeds file {args.seeds_file}: {exc}") from None
        bad = []
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            text, tab, priority = text.partition("\t")
            try:
                url = take(text.strip())
                if tab:
                    priorities[url] = int(priority.strip())
                seeds.append(url)
            except (InvalidURL, ValueError):
                bad.append(str(number))
        if bad:
            raise UsageError(
                f"malformed line(s) {', '.join(bad)} in {args.seeds_file}: "
                "each line is a URL, optionally a TAB and an integer priority"
            )
    if not seeds:
        raise UsageError("no seed URLs given")
    return seeds, priorities, credentials


def http_credentials(
    args: argparse.Namespace, seeds: list[str], credentials: dict[str, list[str]]
) -> dict[str, list[str]]:
    """The seeds' own credentials, and --http-user's (its password from
    --http-password-file or MPCRAWLER_HTTP_PASSWORD) for the other seed hosts."""
    if args.http_user is None:
        if args.http_password_file:
            raise UsageError("--http-password-file goes with --http-user")
        return credentials
    password = os.environ.get("MPCRAWLER_HTTP_PASSWORD", "")
    if args.http_password_file:
        try:
            password = Path(args.http_password_file).read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read --http-password-file: {exc}") from None
    return {host_key(s): [args.http_user, password] for s in seeds} | credentials


def _check_writable(path: Path, what: str) -> None:
    """Fail now, not after the crawl, if ``path`` cannot be appended to.
    Leaves nothing behind that was not there, and never makes ``path`` itself
    appear, even for a moment (a reader of the job dir would see it come and go)."""
    existed = path.exists()
    new_dir = next((p for p in reversed(path.parents) if not p.exists()), None)
    probe = path if existed else path.with_name(f".{path.name}.{os.getpid()}.write-test")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(probe, "a", encoding="utf-8"):
            pass
        if not existed:
            probe.unlink()
    except OSError as exc:
        raise UsageError(f"cannot write {what} {path}: {exc.strerror or exc}") from None
    finally:
        if new_dir is not None:  # the crawl makes it when it starts
            shutil.rmtree(new_dir, ignore_errors=True)


def settings_from_args(args: argparse.Namespace) -> Settings:
    seeds, seed_priorities, credentials = read_seeds(args)
    return Settings(
        credentials=http_credentials(args, seeds, credentials),
        seeds=seeds,
        seed_priorities=seed_priorities,
        **{name: getattr(args, name) for name in OPTIONS},
    )


def check_paths(settings: Settings) -> None:
    """Usage errors for a job dir, output, log or rejected log that cannot be written."""
    if settings.job_dir:
        job = Path(settings.job_dir)
        if job.exists() and not job.is_dir():
            raise UsageError(f"job dir {job} is not a directory")
        _check_writable(job / ".write-test", "job dir")
    _check_writable(settings.output_path(), "output")
    if settings.log_file:
        _check_writable(Path(settings.log_file), "log file")
    if settings.rejected_log:
        _check_writable(Path(settings.rejected_log), "rejected log")


def _pairs(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())


def format_summary(stats: dict[str, Any]) -> str:
    lines = [
        f"pages      {stats['pages']}  ({stats['pages_per_s']} pages/s in {stats['elapsed_s']} s)",
        *(
            [f"embeds     {_pairs(stats['embeds'])}  ({stats['embeds_per_s']} embeds/s)"]
            if "embeds" in stats
            else []
        ),
        f"errors     {stats['errors']}"
        + (f"  {kinds}" if (kinds := _pairs(stats["errors_by_kind"])) else ""),
        "statuses   " + _pairs(stats["statuses"]),
        *(
            [f"changes    {_pairs(stats['changes'])}  ({stats['bytes_saved']} body bytes saved)"]
            if stats.get("changes")
            else []
        ),
        "frontier   " + _pairs(stats["frontier"]),
        "states     "
        + " ".join(f"{k}={stats[k]}" for k in ("buffered", "downloading", "parsing") if k in stats),
        f"workers    {stats['workers']} x {stats['threads']} slots, "
        f"{stats['worker_restarts']} restarts",
    ]
    by_type: dict[str, dict[str, int]] = {}
    for module in stats["modules"]:
        total = by_type.setdefault(
            module["type"], {"instances": 0, "called": 0, "accepted": 0, "completed": 0}
        )
        total["instances"] += 1
        for key in ("called", "accepted", "completed"):
            total[key] += module[key]
    for name, total in sorted(by_type.items()):
        lines.append(
            f"module     {name} x{total['instances']}: called={total['called']} "
            f"accepted={total['accepted']} completed={total['completed']}"
        )
    if stats.get("tls_verification") is False:
        lines.append("tls        certificates NOT verified (--insecure)")
    lines.append(f"output     {stats['out']}")
    return "\n".join(lines)


def run_crawl(settings: Settings) -> int:
    from .master.pool import start_forkserver

    start_forkserver()  # the workers' imports, beside the master's
    from .master.crawler import Crawler, configure_logging

    try:
        crawler = Crawler(settings)  # checks the settings and imports the plug-ins
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if settings.redis:  # unreachable: one line, exit 1, nothing written
        from .frontier.redis.client import connect

        connect(settings.redis).close()
    check_paths(settings)
    configure_logging(settings.log_file)
    try:
        result = crawler.run()
    except FrontierError as exc:  # a job directory this version cannot use
        raise UsageError(str(exc)) from None
    if result.already_finished:
        print(f"job in {result.job_dir} is already finished; nothing to do", flush=True)
    if "modules" in result.stats:
        print(format_summary(result.stats), flush=True)
    else:
        print(f"pages      {result.stats.get('pages')}", flush=True)
    if result.interrupted:
        print(
            f"interrupted: rerun the same command to resume from {result.job_dir}"
            if result.job_dir
            else "interrupted",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_INTERRUPTED
    return EXIT_OK


def effective_settings(args: argparse.Namespace) -> Settings:
    """The settings a crawl with ``args`` runs with: checked (a UsageError
    if not possible), broad-crawl defaults applied.  No seed is needed."""
    if not args.seeds and not args.seeds_file:
        settings = Settings(**{name: getattr(args, name) for name in OPTIONS})
    else:
        settings = settings_from_args(args)
    try:
        settings.validate()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    settings.apply_scope_defaults()
    return settings


def run_print_config(args: argparse.Namespace) -> int:
    """--print-config: the settings a crawl would run with, as TOML."""
    print(to_toml(effective_settings(args)), end="", flush=True)
    return EXIT_OK


def _control_urls(args: argparse.Namespace) -> list[str]:
    """add-seeds' URLs (arguments and --file), each checked."""
    urls = list(args.values)
    if args.file:
        try:
            lines = Path(args.file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {args.file}: {exc}") from None
        urls += [t for line in lines if (t := line.strip()) and not t.startswith("#")]
    if not urls:
        raise UsageError("add-seeds needs URLs (or --file F)")
    for url in urls:
        try:
            split_credentials(url)  # credentials: refused by parse_seeds, as by the crawl
        except InvalidURL as exc:
            raise UsageError(f"malformed URL {hide_userinfo(url)[:200]!r}: {exc.reason}") from None
    return urls


def _control_command(args: argparse.Namespace) -> tuple[str | None, str, dict[str, Any]]:
    """``control``'s words as (job dir or None, command, its args), checked."""
    from .control import COMMANDS, parse_exclude, parse_seeds, parse_set

    words = list(args.words)
    shared = bool(args.redis or args.crawl)
    if shared and not (args.redis and args.crawl):
        raise UsageError("control of a shared crawl takes --redis URL (or REDIS_URL) and --crawl")
    job_dir = None if shared else words.pop(0)
    if not words or words[0] not in COMMANDS:
        found = repr(words[0]) if words else "none"
        where = "" if shared else " after DIR"
        names = ", ".join(COMMANDS)
        raise UsageError(f"control: COMMAND{where} must be one of {names}, not {found}")
    action, args.values = words[0], words[1:]
    values: dict[str, Any] = {}
    try:
        if action == "set":
            parse_set(args.values)  # checked here; the crawl reads the pairs as given
            values = dict(pair.split("=", 1) for pair in args.values)
        elif action == "add-seeds":  # the crawl's own checks: count, credentials
            values = parse_seeds(_control_urls(args), args.priority)
        elif action == "exclude":
            if len(args.values) != 1:
                raise ValueError("exclude takes one REGEX")
            values = {"regex": parse_exclude(args.values[0])}
        elif args.values:
            raise ValueError(f"{action} takes no arguments")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return job_dir, action, values


_T = typing.TypeVar("_T")


def _wait_for(answer: Callable[[], _T | None], wait: float) -> _T | None:
    """``answer()`` once it is not None, polled for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        found = answer()
        if found is not None or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def run_control(args: argparse.Namespace) -> int:
    """Put a command in a job's inbox (or a shared crawl's); wait (bounded)
    for the answer of the running crawl (of every live node).  Exit 0
    applied (or queued for the next start), 1 refused."""
    from .control import answers, write_command
    from .output.jobdir import JobDir

    job_dir, action, values = _control_command(args)
    if job_dir is None:
        return run_shared_control(args, action, values)
    job = JobDir(job_dir)
    if not job.exists() and not job.started():
        raise UsageError(f"{job_dir} is not a job directory (no job.json)")
    running = job.running_pid() is not None
    if action == "stop" and not running:
        raise UsageError(f"the crawl of {job_dir} is not running: nothing to stop")
    try:
        ident = write_command(job_dir, action, values)
    except ValueError as exc:  # larger than the crawl reads
        raise UsageError(str(exc)) from None
    if not running:
        print(f"{action}: the crawl is not running; applied at its next start")
        return EXIT_OK
    found = _wait_for(
        lambda: next((a["answer"] for a in answers(job_dir, 50) if a.get("id") == ident), None),
        args.wait,
    )
    if found is None:  # it waits in the inbox: the crawl answers it when it reads it
        print(f"{action}: sent; no answer within {args.wait:g} s (see status)")
        return EXIT_ERROR
    print(f"{action}: {found}")
    return EXIT_OK if found.startswith("applied") else EXIT_ERROR


def run_shared_control(args: argparse.Namespace, action: str, values: dict[str, Any]) -> int:
    """``control --redis URL --crawl NAME``: a command for every node; each
    live node's answer.  A node not running applies it when it starts."""
    import redis

    from .frontier.redis.client import connect, key_prefix
    from .frontier.redis.commands import answers_of, live_nodes, send

    client = connect(args.redis)  # FrontierError: exit 1
    prefix = key_prefix(args.crawl)
    try:
        if not client.exists(prefix + "id"):
            raise UsageError(f"no crawl {args.crawl!r} on {redact_url(args.redis)}")
        nodes = live_nodes(client, prefix)
        if action == "stop" and not nodes:
            raise UsageError(f"no node of crawl {args.crawl!r} is running: nothing to stop")
        try:
            ident = send(client, prefix, action, values)
        except ValueError as exc:  # larger than the nodes read
            raise UsageError(str(exc)) from None
        if not nodes:
            print(f"{action}: no node is running; each applies it at its start")
            return EXIT_OK

        def all_answered() -> dict[str, str] | None:
            found = answers_of(client, prefix, ident)
            return found if set(nodes) <= found.keys() else None

        got = _wait_for(all_answered, args.wait) or answers_of(client, prefix, ident)
    except (redis.RedisError, OSError) as exc:
        raise FrontierError(f"Redis at {redact_url(args.redis)}: {exc}") from None
    finally:
        client.close()
    for node in nodes:
        print(f"{action}: {node}: {got.get(node, f'no answer within {args.wait:g} s')}")
    answered = [got.get(node, "") for node in nodes]  # every live node's, applied
    return EXIT_OK if all(a.startswith("applied") for a in answered) else EXIT_ERROR


def run_status(args: argparse.Namespace) -> int:
    from .output.jobdir import JobConflict, JobDir

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
    from .frontier.redis.status import crawl_status

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

    from .frontier.redis.status import crawl_status
    from .output.metrics import MetricsServer, crawl_families

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
    from .output.jobdir import JobDir

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
    from .frontier.redis.status import reset_crawl

    if not args.redis:
        raise UsageError("reset needs --redis URL (or REDIS_URL) and --crawl NAME")
    deleted = reset_crawl(args.redis, args.crawl)  # live nodes: exit 2; unreachable: exit 1
    print(f"crawl {args.crawl!r}: {deleted} keys deleted; start it with new job dirs")
    return EXIT_OK


def run_report(args: argparse.Namespace) -> int:
    from .output.jobdir import JobConflict, JobDir
    from .output.report import write_report

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
        return _pairs(dict(sorted(value.items()))) or "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return "-" if value is None or value == "" else str(value)


@contextmanager
def site_process(
    pages: int, latency: float = 0.0, size: int = 30_000, fanout: int = 12
) -> Iterator[str]:
    """Run ``serve-site`` in a child process on a free port; yields its URL."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mpcrawler",
            "serve-site",
            "--port",
            "0",
            "--pages",
            str(pages),
            "--latency",
            str(latency),
            "--size",
            str(size),
            "--fanout",
            str(fanout),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("serving"):
            raise RuntimeError(f"test site did not start: {line!r}")
        yield line.rsplit(" ", 1)[1]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_demo(args: argparse.Namespace) -> int:
    job = Path(args.job_dir)
    if job.exists():
        if not (job / "frontier").exists() and any(job.iterdir()):
            raise UsageError(f"{job} exists and is not a demo job dir; pick another --job-dir")
        shutil.rmtree(job)
    with site_process(args.pages) as url:
        print(
            f"demo: crawling the built-in site at {url} ({args.pages} pages of 30 KB)", flush=True
        )
        settings = Settings(seeds=[url], workers=args.workers, job_dir=str(job), quiet=args.quiet)
        return run_crawl(settings)


def run_site(args: argparse.Namespace) -> int:
    from .testing.site import SiteServer, TestSite

    site = TestSite(
        pages=args.pages, size=args.size, fanout=args.fanout, embeds=args.embeds, images=args.images
    )
    try:
        server = SiteServer(site, args.host, args.port, args.latency)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print(f"serving {args.pages} pages at {server.url}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    stopsignals.install()  # (python -m mpcrawler did it already)
    try:
        parser = build_parser()
        argv = list(sys.argv[1:] if argv is None else argv)
        args = parser.parse_args(argv)
        if getattr(args, "config", None):
            sub = parser._subparsers._group_actions[0].choices[args.command]  # type: ignore[union-attr]
            args = apply_config(argv, parser, sub, args.config)
        if getattr(args, "crawl", None) and not getattr(args, "redis", None):
            args.redis = os.environ.get("REDIS_URL") or None  # a password off the command line
        if args.command in ("status", "reset", "control") and args.redis:
            try:
                check_redis_url(args.redis)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        if args.command == "crawl" and args.print_config:
            return run_print_config(args)
        if args.command == "crawl":
            return run_crawl(settings_from_args(args))
        if args.command == "check-url":
            from .checkurl import run_check_url

            return run_check_url(args, effective_settings)
        if args.command == "demo":
            return run_demo(args)
        if args.command == "control":
            return run_control(args)
        if args.command == "serve-site":
            return run_site(args)
        if args.command == "status":
            return run_status(args)
        if args.command == "report":
            return run_report(args)
        if args.command == "reset":
            return run_reset(args)
        if args.command == "verify":
            return run_verify(args)
        raise UsageError(f"unknown command {args.command!r}")  # pragma: no cover
    except UsageError as exc:
        print(f"mpcrawler: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("mpcrawler: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `status DIR | head`: the reader went away, as it may
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more to flush at exit
        return EXIT_OK
    except MpcrawlerError as exc:  # the crawl cannot go on; the job stays resumable
        print(f"mpcrawler: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        from .master.crawler import is_disk_full

        if is_disk_full(exc):
            print(
                f"mpcrawler: error: out of disk space ({exc}); free some and rerun the same "
                "command to resume",
                file=sys.stderr,
            )
            return EXIT_ERROR
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
