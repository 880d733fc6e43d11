"""``control``: a command sent to a running crawl (its job dir's inbox, or
the shared crawl's in Redis) and its answer waited for."""

from __future__ import annotations

import argparse
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import FrontierError, UsageError
from ..web.redact import hide_userinfo, redact_url
from ..web.urls import InvalidURL, split_credentials
from .parser import EXIT_ERROR, EXIT_OK


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
    from ..control.commands import (
        COMMANDS,
        HOST_COMMANDS,
        parse_exclude,
        parse_host,
        parse_seeds,
        parse_set,
    )

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
        elif action in HOST_COMMANDS:
            if len(args.values) != 1:
                raise ValueError(f"{action} takes one HOST")
            values = {"host": parse_host(args.values[0])}
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
    from ..control.inbox import answer_of, send_to_job
    from ..output.jobdir import JobDir

    job_dir, action, values = _control_command(args)
    if job_dir is None:
        return run_shared_control(args, action, values)
    job = JobDir(job_dir)
    if not job.exists() and not job.started():
        raise UsageError(f"{job_dir} is not a job directory (no job.json)")
    try:
        ident, now = send_to_job(job_dir, action, values, job.running_pid() is not None)
    except ValueError as exc:  # not running, or larger than the crawl reads
        raise UsageError(str(exc)) from None
    if now is not None:
        print(f"{action}: {now}")
        return EXIT_OK
    found = _wait_for(lambda: answer_of(job_dir, ident), args.wait)
    if found is None:  # it waits in the inbox: the crawl answers it when it reads it
        print(f"{action}: sent; no answer within {args.wait:g} s (see status)")
        return EXIT_ERROR
    print(f"{action}: {found}")
    return EXIT_OK if found.startswith("applied") else EXIT_ERROR


def run_shared_control(args: argparse.Namespace, action: str, values: dict[str, Any]) -> int:
    """``control --redis URL --crawl NAME``: a command for every node; each
    live node's answer.  A node not running applies it when it starts."""
    import redis

    from ..control.shared import answers_of, live_nodes, send
    from ..frontier.redis.client import connect, key_prefix

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
