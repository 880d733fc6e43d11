"""The command line's parser: every command and its options, the crawl's
made from the option table (:data:`mpcrawler.settings.OPTIONS`), and the
converters of the values, made by one factory."""

from __future__ import annotations

import argparse
import textwrap
import typing
from typing import Any, NoReturn

from ..__version__ import __version__
from ..errors import UsageError
from ..settings import (
    MAX_SLOTS,
    OPTION_HINTS,
    OPTIONS,
    UPPER_BOUNDS,
    Settings,
    flag_of,
)
from .values import (
    _duration,
    _integer,
    _non_negative_float,
    _non_negative_int,
    _number,
    _port,
    _positive_int,
    _size,
)

# The exit codes (the parser's epilog says them too).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_BUDGET = 3  # --max-duration or --max-total-bytes ended the run: resumable
EXIT_NOTHING = 4  # no page was answered (as wget's 4, a network failure): the seeds again next run
# How a crawl ended, by its exit status, as --on-finish is told (MPCRAWLER_OUTCOME).
OUTCOMES = {
    EXIT_OK: "finished",
    EXIT_ERROR: "failed",
    EXIT_BUDGET: "budget",
    EXIT_NOTHING: "nothing-fetched",
    EXIT_INTERRUPTED: "interrupted",
}

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
# The sections of crawl --help, in order, by the option table's ``group``
# (as wget's and curl's manuals group theirs).
GROUPS = {
    "startup": "running the crawl",
    "limits": "how much to crawl",
    "filters": "what to crawl (see 'Choosing what to crawl')",
    "requests": "how pages are fetched",
    "politeness": "politeness",
    "outputs": "where the records go",
    "content": "text and duplicates",
    "archive": "archiving (WARC, WACZ, page requisites)",
    "revisits": "crawling again",
    "render": "pages that need JavaScript (see the README)",
    "shared": SHARED_GROUP,
    "watch": "watching a running crawl (metrics, the web page)",
}


def metavar_of(name: str) -> str | None:
    """The value an option of the table takes, as --help and the reference
    name it: its own metavar, else one style by type (N, SECONDS, BYTES,
    DURATION, DIR, FILE, TEXT); None for a switch or a choice (shown whole)."""
    how, kind = OPTIONS[name], OPTION_HINTS[name]
    if how.metavar or kind is bool or how.choices:
        return how.metavar
    if how.size:
        return "BYTES"
    if how.duration:
        return "DURATION"
    base = next((k for k in (int, float) if k in typing.get_args(kind) or kind is k), str)
    if base is not str:
        return "N" if base is int else "SECONDS"
    return "DIR" if name.endswith("_dir") else "FILE" if name.endswith("_file") else "TEXT"


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors raised as one-line usage errors."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _add_crawl_options(p: argparse.ArgumentParser) -> None:
    """Every option of the table (settings.OPTIONS), in its order.  Only the
    type is checked here; the bounds are Settings.validate()'s, for the CLI
    and the Python API alike."""
    defaults = Settings()
    hints = OPTION_HINTS
    groups = {name: p.add_argument_group(title) for name, title in GROUPS.items()}
    groups["startup"].add_argument(
        "--config",
        metavar="FILE.toml",
        help="read options from this TOML file (by their names; the command line overrides)",
    )
    groups["startup"].add_argument(
        "--print-config",
        action="store_true",
        help="print the effective settings as TOML (secrets redacted) and exit",
    )
    for name, how in OPTIONS.items():
        kind, default = hints[name], getattr(defaults, name)
        extra: dict[str, Any] = {}
        if metavar := metavar_of(name):
            extra["metavar"] = metavar
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
        shown = how.help
        if "default" not in shown and default not in (None, False, [], ""):
            shown += " (default: %(default)s)"
        groups[how.group].add_argument(flag_of(name), dest=name, help=shown, **extra)


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
    """The parser of every command."""
    parser = _Parser(
        prog="mpcrawler",
        description="A multiprocess web crawler.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mpcrawler {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in (_crawling, _steering, _demo, _inspecting, _serving, _watching):
        add(sub)
    return parser


def _crawling(sub: Any) -> None:
    """crawl, and check-url (the same options)."""
    crawl = sub.add_parser(
        "crawl",
        help="crawl from seed URLs",
        usage="mpcrawler crawl [OPTION]... [SEED]...",
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


def _steering(sub: Any) -> None:
    """control."""
    control = sub.add_parser(
        "control",
        help="steer a running crawl: pause, resume, stop, set, add-seeds, exclude, pause-host",
        description="Steer a crawl through its job dir (control DIR COMMAND), or every node "
        "of a shared crawl (control --redis URL --crawl NAME COMMAND).  COMMAND is one of "
        "pause, resume, stop, set NAME=VALUE..., add-seeds URL..., exclude REGEX, "
        "pause-host HOST, resume-host HOST.",
    )
    control.add_argument(
        "words",
        nargs="+",
        metavar="[DIR] COMMAND [ARG ...]",
        help="set: NAME=VALUE with NAME delay, host-concurrency, max-pages, max-depth; "
        "add-seeds: URLs; exclude: a regular expression; pause-host, resume-host: a host name",
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


def _demo(sub: Any) -> None:
    demo = sub.add_parser("demo", help="serve the built-in demo site and crawl it")
    demo.add_argument("--pages", type=_positive_int, default=500)
    demo.add_argument("--workers", type=_positive_int, default=Settings().workers)
    demo.add_argument(
        "--job-dir",
        default="mpcrawler-demo",
        help="where the results go; emptied first (default %(default)s)",
    )
    demo.add_argument("--quiet", action="store_true")


def _inspecting(sub: Any) -> None:
    """status, report, verify and reset."""
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


def _watching(sub: Any) -> None:
    """web."""
    web = sub.add_parser(
        "web",
        help="serve a web page of a crawl (running or finished): figures, hosts, pages, buttons",
        description="Serve a page that shows a job dir's crawl as it runs, and steers it "
        "through its control commands (pause, resume, stop, set delay, pause a host); "
        "or a shared crawl's, with --redis URL --crawl NAME.  /api/status answers the "
        "same figures as JSON.",
    )
    web.add_argument("job_dir", metavar="DIR", nargs="?")
    web.add_argument("--redis", metavar="URL", help="a shared crawl's Redis ($REDIS_URL)")
    web.add_argument("--crawl", metavar="NAME", help="the shared crawl (with --redis)")
    web.add_argument(
        "--port", type=_port, default=8080, help="0 picks a free one (default %(default)s)"
    )
    web.add_argument(
        "--bind",
        metavar="ADDR",
        default="127.0.0.1",
        help="the address (default %(default)s; any other needs --token-file)",
    )
    web.add_argument(
        "--token-file",
        metavar="FILE",
        help="every request must carry the token this file holds: Authorization: "
        "Bearer TOKEN, or Basic with it as the password (a browser asks for it)",
    )
    web.add_argument("--fd", type=int, help=argparse.SUPPRESS)  # crawl --web-port's socket
    web.add_argument("--parent", type=int, help=argparse.SUPPRESS)  # ...and its pid


# serve-site's options: (flag, type, default, metavar, help); "(default: ...)" is added.
_SITE_OPTIONS: list[tuple[str, Any, Any, str, str]] = [
    (
        "--pages",
        _positive_int,
        500,
        "N",
        "pages of the site: / and /page/1 to /page/N-1, all reachable from /",
    ),
    ("--latency", _non_negative_float, 0.0, "SECONDS", "delay before each answer"),
    ("--size", _non_negative_int, 30_000, "BYTES", "bytes of a page, padded with words"),
    (
        "--port",
        _non_negative_int,
        8000,
        "N",
        "port to listen on; 0 picks a free one, printed at the start",
    ),
    (
        "--host",
        str,
        "127.0.0.1",
        "ADDRESS",
        "address to listen on; 0.0.0.0 takes every 127.X.Y.Z, each a host of its own to a crawler",
    ),
    (
        "--fanout",
        _non_negative_int,
        12,
        "N",
        "links from each page to pages chosen at random "
        "(seeded), beside its two children in a binary tree",
    ),
    ("--images", _positive_int, 10, "N", "--embeds: images the pages share in turn"),
]


def _serving(sub: Any) -> None:
    """serve-site."""
    site = sub.add_parser("serve-site", help="serve the built-in test site until stopped")
    for flag, kind, default, metavar, text in _SITE_OPTIONS:
        site.add_argument(
            flag, type=kind, default=default, metavar=metavar, help=f"{text} (default: %(default)s)"
        )
    site.add_argument(
        "--embeds",
        action="store_true",
        help="pages need requisites (stylesheets, a script, images, a logo on 127.0.0.2)",
    )
    site.add_argument(
        "--texts",
        choices=("pairs", "distinct", "alike"),  # testing.site.TEXTS (not imported at start)
        default="pairs",
        help="how pages' texts differ: pairs (4,096 distinct, then near copies), distinct "
        "(262,144), alike (one template, 1/20 of each page its own) (default: %(default)s)",
    )
