"""The command line: ``python -m mpcrawler COMMAND``, COMMAND one of crawl,
check-url, control, demo, status, verify, report, reset, serve-site, web.

Parses and checks everything before anything is crawled: a usage error
prints one line on stderr and exits 2.  ``main`` parses (``parser.py``: the
options, the crawl's made from the option table) and hands the arguments to
the command's body, by ``COMMANDS``: ``crawl.py`` (crawl, its settings and
summary), ``control.py``, ``status.py`` (status, verify, reset, report),
``site.py`` (serve-site, demo), ``web.py`` (web); check-url is :mod:`mpcrawler.checkurl`.

Exit codes: 0 the crawl completed (failed pages are data, not a failure of
the job); 2 usage or configuration error; 130 interrupted; 1 internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from .. import stopsignals
from ..configfile import apply_config
from ..errors import MpcrawlerError, UsageError
from ..settings import check_redis_url
from .control import run_control
from .crawl import (
    effective_settings,
    format_summary,
    run_crawl,
    run_print_config,
    settings_from_args,
)
from .parser import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, build_parser
from .site import run_demo, run_site, site_process
from .status import run_report, run_reset, run_status, run_verify
from .values import _duration
from .web import run_web

__all__ = [
    "_duration",
    "build_parser",
    "format_summary",
    "main",
    "settings_from_args",
    "site_process",
]


def _check_url(args: argparse.Namespace) -> int:
    from ..checkurl import run_check_url

    return run_check_url(args, effective_settings)


def _crawl(args: argparse.Namespace) -> int:
    if args.print_config:
        return run_print_config(args)
    return run_crawl(settings_from_args(args))


# Each command's body, by its name on the command line.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "crawl": _crawl,
    "check-url": _check_url,
    "control": run_control,
    "demo": run_demo,
    "report": run_report,
    "reset": run_reset,
    "serve-site": run_site,
    "status": run_status,
    "verify": run_verify,
    "web": run_web,
}


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments, with a --config file's values and $REDIS_URL taken in;
    UsageError for anything wrong."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if getattr(args, "config", None):
        sub = parser._subparsers._group_actions[0].choices[args.command]  # type: ignore[union-attr]
        args = apply_config(argv, parser, sub, args.config)
    if getattr(args, "crawl", None) and not getattr(args, "redis", None):
        args.redis = os.environ.get("REDIS_URL") or None  # a password off the command line
    if args.command in ("status", "reset", "control", "web") and args.redis:
        try:
            check_redis_url(args.redis)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return args


def main(argv: Sequence[str] | None = None) -> int:
    stopsignals.install()  # (python -m mpcrawler did it already)
    try:
        args = parse(argv)
        return COMMANDS[args.command](args)
    except UsageError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except KeyboardInterrupt:
        print("mpcrawler: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `status DIR | head`: the reader went away, as it may
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more to flush at exit
        return EXIT_OK
    except MpcrawlerError as exc:  # the crawl cannot go on; the job stays resumable
        return _fail(str(exc), EXIT_ERROR)
    except Exception as exc:
        from ..master.crawler import is_disk_full

        if not is_disk_full(exc):
            raise
        return _fail(f"out of disk space ({exc}); free some and rerun the same command to resume")


def _fail(message: str, code: int = EXIT_ERROR) -> int:
    """Say ``message`` on one line of stderr; the exit code."""
    print(f"mpcrawler: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
