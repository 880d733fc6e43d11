"""The control commands of a running crawl: what each is, checked and described.

A command is ``{"id", "command", "args", "at"}`` in JSON; it reaches a
crawl through its job dir (:mod:`mpcrawler.control.inbox`) or, for a shared
crawl, through Redis (:mod:`mpcrawler.control.shared`).  The crawl's master
applies them (:mod:`mpcrawler.control.steering`).

The commands, checked here for the CLI and the crawl alike:

- ``pause``: no new request starts; in-flight ones finish; the crawl stays up;
- ``resume``;
- ``stop``: as SIGTERM (only to a running crawl);
- ``set NAME=VALUE...``: ``delay``, ``host-concurrency``, ``max-pages``,
  ``max-depth``; kept in the job for its resumes;
- ``add-seeds`` (``{"urls": [...], "priority": N}``): queued at once, at
  their priority, through the URL rules, robots.txt and the seen set; the
  scope grows to take their hosts; kept in the job for its resumes;
- ``exclude`` (``{"regex": R}``): links that R matches are refused (rule
  ``exclude``), the queued URLs it matches are dropped (the answer says how
  many), and one met later is dropped unfetched; kept in the job;
- ``pause-host`` and ``resume-host`` (``{"host": NAME}``): no new request to
  the host NAME (any scheme, any port) starts while it is paused; its URLs
  stay queued; kept in the job for its resumes.

Bounds: a command is read only if it is at most ``MAX_COMMAND_BYTES``;
``add-seeds`` carries at most
``MAX_SEEDS`` URLs, none with credentials; ``set`` takes what the command
line takes (:func:`mpcrawler.settings.setting_value`).  A command is
described (log, answers) with its URLs' credentials hidden and its URLs cut
to a few.

No pickle: JSON only.  Pure parsing, no I/O.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..settings import setting_value
from ..web.patterns import compile_pattern
from ..web.redact import hide_userinfo
from ..web.urls import InvalidURL, canonicalize, hostname_of

__all__ = [
    "COMMANDS",
    "MAX_COMMAND_BYTES",
    "MAX_SEEDS",
    "SETTABLE",
    "SHOWN_URLS",
    "Command",
    "command_json",
    "first_few",
    "new_command",
    "parse_command",
    "parse_exclude",
    "parse_host",
    "parse_seeds",
    "parse_set",
    "public",
    "read_command",
]

COMMANDS = ("pause", "resume", "stop", "set", "add-seeds", "exclude", "pause-host", "resume-host")
HOST_COMMANDS = ("pause-host", "resume-host")
# name -> setting; each takes what its command-line option takes
SETTABLE: dict[str, str] = {
    "delay": "delay",
    "host-concurrency": "host_concurrency",
    "max-pages": "max_pages",
    "max-depth": "max_depth",
}
MAX_COMMAND_BYTES = 1 << 20  # a command file (or a Redis entry) larger is refused unread
MAX_SEEDS = 10_000  # URLs one add-seeds may carry
MAX_SEED_LENGTH = 1 << 16  # characters of one of them (--max-url-length's own bound)
SHOWN_URLS = 3  # URLs a command's description names (the rest are counted)


@dataclass(frozen=True)
class Command:
    """One control command read from an inbox: its id, name and arguments."""

    id: str
    name: str
    args: dict[str, Any]  # set: {setting: value}

    def describe(self) -> str:
        """The command in one short line, no secret in it (log, answers)."""
        if self.name == "add-seeds":
            urls = self.args["urls"]
            return f"add-seeds {shown_urls(urls)} (priority {self.args['priority']})"
        if self.name == "set":
            return "set " + " ".join(f"{k}={v}" for k, v in self.args.items())
        if self.name == "exclude":
            return f"exclude {self.args['regex']}"
        if self.name in HOST_COMMANDS:
            return f"{self.name} {self.args['host']}"
        return self.name


def first_few(items: Sequence[Any], sep: str = " ", show: Callable[[Any], str] = str) -> str:
    """The first SHOWN_URLS of ``items`` (each as ``show`` writes it), and
    how many more there are: a command's URLs in one short line."""
    more = len(items) - SHOWN_URLS
    shown = sep.join(show(item) for item in items[:SHOWN_URLS])
    return shown + (f" and {more} more" if more > 0 else "")


def shown_urls(urls: list[str]) -> str:
    """The first SHOWN_URLS of ``urls``, credentials hidden, and how many more."""
    return first_few(urls, show=lambda url: hide_userinfo(url[:200]))


def _hidden(urls: list[Any]) -> list[Any]:
    """``urls`` cut to 200 characters, credentials hidden (non-strings as they are)."""
    return [hide_userinfo(u[:200]) if isinstance(u, str) else u for u in urls]


def parse_set(pairs: list[str]) -> dict[str, Any]:
    """``["delay=0.5", ...]`` as {setting: value}, each checked as its
    command-line option is (type and bounds); ValueError in one line."""
    if not pairs:
        raise ValueError("set needs NAME=VALUE (" + ", ".join(SETTABLE) + ")")
    values: dict[str, Any] = {}
    for pair in pairs:
        name, equals, text = pair.partition("=")
        if not equals or name not in SETTABLE:
            names = ", ".join(SETTABLE)
            raise ValueError(f"set {pair[:60]!r}: not NAME=VALUE with NAME one of {names}")
        try:
            values[SETTABLE[name]] = setting_value(SETTABLE[name], text)
        except ValueError as exc:
            raise ValueError(f"set {name}: {exc}") from None
    return values


def parse_exclude(regex: Any) -> str:
    """An ``exclude`` pattern, checked as --reject-regex is; ValueError in one line."""
    if not isinstance(regex, str) or not regex:
        raise ValueError("exclude needs a REGEX")
    compile_pattern(regex, "exclude")  # ValueError: what the matcher cannot take
    return regex


def parse_host(text: Any) -> str:
    """``pause-host``'s argument as the host name it pauses (lower case, no
    port: a host's every scheme and port), given a name, ``name:port`` or a
    URL; ValueError in one line."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("pause-host and resume-host need a HOST")
    given = text.strip()
    url = given if "://" in given else f"http://{given}/"
    try:
        name = hostname_of(canonicalize(url))
    except InvalidURL as exc:
        raise ValueError(f"{given[:100]!r} is not a host: {exc.reason}") from None
    if not name or hide_userinfo(url) != url:
        raise ValueError(f"{hide_userinfo(given)[:100]!r} is not a host")
    return name


def parse_seeds(urls: Any, priority: Any = 0) -> dict[str, Any]:
    """``add-seeds``' arguments, checked: at most MAX_SEEDS URLs, none with
    credentials (a command is kept on disk and in logs; credentials go to the
    crawl when it starts); ValueError in one line."""
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        raise ValueError("add-seeds needs urls, a list of URLs")
    if len(urls) > MAX_SEEDS:
        raise ValueError(f"add-seeds takes at most {MAX_SEEDS} URLs a command, not {len(urls)}")
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ValueError("add-seeds: priority must be an integer")
    for url in urls:
        if len(url) > MAX_SEED_LENGTH:
            raise ValueError(f"add-seeds: a URL of {len(url)} characters ({url[:60]!r}...)")
        if hide_userinfo(url) != url:
            raise ValueError(
                f"add-seeds {hide_userinfo(url)[:200]}: credentials are not taken here; give "
                "them to the crawl (a seed's user:password@, or --http-user) when it starts"
            )
    return {"urls": urls, "priority": priority}


def public(data: dict[str, Any]) -> dict[str, Any]:
    """A command's JSON as its answer keeps it: its URLs' credentials
    hidden, and the first SHOWN_URLS of them (``more``: how many others)."""
    args = data.get("args")
    if isinstance(args, dict) and isinstance(args.get("urls"), list):
        given = args["urls"]
        kept = {**args, "urls": _hidden(given[:SHOWN_URLS])}
        if len(given) > SHOWN_URLS:
            kept["more"] = len(given) - SHOWN_URLS
        return {**data, "args": kept}
    return data


def new_command(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A command's JSON, with a new id (time-ordered)."""
    ident = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    return {"id": ident, "command": name, "args": args, "at": round(time.time(), 3)}


def read_command(text: str | bytes, what: str = "command") -> tuple[dict[str, Any], Command | str]:
    """A ``what``'s JSON text: (its data, the Command or why it is refused)."""
    try:
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        return {}, f"not a {what}: {exc}"
    try:
        return data, parse_command(data)
    except ValueError as exc:
        return (data if isinstance(data, dict) else {}), str(exc)


def parse_command(data: Any) -> Command:
    """A command file's JSON as a Command; ValueError (one line) if it is not one."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    name, args = data.get("command"), data.get("args", {})
    if name not in COMMANDS:
        raise ValueError(f"unknown command {name!r} (one of {', '.join(COMMANDS)})")
    if not isinstance(args, dict):
        raise ValueError("args must be an object")
    if name == "set":  # {"delay": 0.5}: the names as on the command line
        args = parse_set([f"{k}={v}" for k, v in args.items()])
    elif name == "add-seeds":
        args = parse_seeds(args.get("urls"), args.get("priority", 0))
    elif name == "exclude":
        args = {"regex": parse_exclude(args.get("regex"))}
    elif name in HOST_COMMANDS:
        args = {"host": parse_host(args.get("host"))}
    elif args:
        raise ValueError(f"{name} takes no arguments")
    return Command(str(data.get("id") or ""), name, args)


def command_json(name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A new command (``new_command``) and its JSON text; ValueError for
    one larger than a crawl reads (MAX_COMMAND_BYTES), job dir or Redis."""
    data = new_command(name, args)
    text = json.dumps(data)
    if len(text.encode("utf-8")) > MAX_COMMAND_BYTES:
        raise ValueError(f"{name}: the command is larger than {MAX_COMMAND_BYTES} bytes")
    return data, text
