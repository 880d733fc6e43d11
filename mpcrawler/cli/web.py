"""``web``: serve the page of a job dir (running or finished) or of a shared
crawl (:mod:`mpcrawler.watch.server`), until a stop signal; and the child
that ``crawl --web-port`` starts to do the same for its own job."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

from ..errors import UsageError
from ..web.redact import redact_url
from .parser import EXIT_OK

__all__ = ["run_web", "start_web_child"]


def _need_aiohttp() -> None:
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        raise UsageError("the web page needs aiohttp: pip install 'mpcrawler[web]'") from None


def check_bind(bind: str, token_file: str | None, option: str = "--bind") -> None:
    """Only loopback may be bound without a token; UsageError in one line."""
    from ..watch.server import is_loopback

    if not token_file and not is_loopback(bind):
        raise UsageError(
            f"{option} {bind}: any address but loopback needs a token "
            f"({'--token-file' if option == '--bind' else '--web-token-file'} FILE)"
        )


def run_web(args: argparse.Namespace) -> int:
    """``web DIR`` or ``web --redis URL --crawl NAME``: serve until stopped."""
    _need_aiohttp()
    from ..watch.reader import JobSource, SharedSource
    from ..watch.server import listening_socket, read_token, serve

    shared = bool(args.redis or args.crawl)
    if (shared and not (args.redis and args.crawl)) or shared == bool(args.job_dir):
        raise UsageError("web takes a job directory, or --redis URL --crawl NAME")
    check_bind(args.bind, args.token_file)
    token = None
    if args.token_file:
        try:
            token = read_token(args.token_file)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.fd is not None:  # crawl --web-port's child: the crawl listened for it
        sock = socket.socket(fileno=args.fd)
    else:
        try:
            sock = listening_socket(args.bind, args.port)
        except OSError as exc:
            raise UsageError(f"cannot listen on {args.bind}:{args.port}: {exc.strerror}") from None
    source: JobSource | SharedSource
    if shared:
        source = SharedSource(args.redis, args.crawl)  # FrontierError: exit 1
        what = f"crawl {args.crawl!r} on {redact_url(args.redis)}"
    else:
        if args.fd is None and not Path(args.job_dir).is_dir():  # (a crawl's child: being made)
            raise UsageError(f"{args.job_dir} is not a job directory")
        source = JobSource(args.job_dir)
        what = args.job_dir

    def ready(url: str) -> None:
        print(f"serving {what} on {url}", flush=True)

    serve(source, sock, token, ready, parent=args.parent)
    return EXIT_OK


def start_web_child(
    state_dir: Path, bind: str, port: int, token_file: str | None
) -> subprocess.Popen[bytes]:
    """``crawl --web-port``: listen here (a port in use is a usage error,
    before anything is written), and serve from a child process of its own
    (``web DIR --fd N --parent PID``), so no view costs the master a turn;
    the child goes when this process does."""
    _need_aiohttp()
    from ..watch.server import listening_socket, read_token

    check_bind(bind, token_file, "--web-bind")
    if token_file:
        try:
            read_token(token_file)
        except ValueError as exc:
            raise UsageError(f"--web-token-file: {exc}") from None
    try:
        sock = listening_socket(bind, port)
    except OSError as exc:
        raise UsageError(f"--web-port: cannot listen on {bind}:{port}: {exc.strerror}") from None
    command = [
        sys.executable, "-m", "mpcrawler", "web", str(state_dir),
        "--fd", str(sock.fileno()), "--parent", str(os.getpid()), "--bind", bind,
    ]  # fmt: skip
    if token_file:
        command += ["--token-file", token_file]
    try:
        return subprocess.Popen(command, pass_fds=(sock.fileno(),), stdin=subprocess.DEVNULL)
    finally:
        sock.close()  # the child's now
