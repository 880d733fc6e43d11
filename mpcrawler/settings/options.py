"""The option table's pieces: how an option is declared (``Option``,
``option()``), how a value is checked against it (``out_of_bounds``), and
the constants the options' declarations and checks share.

Each section of options is a module of this package (``*_options.py``);
:class:`mpcrawler.settings.crawl_settings.Settings` joins them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..__version__ import __version__
from ..web.redact import redact_url

__all__ = [
    "BROAD_CRAWL_DEFAULTS",
    "DEFAULT_USER_AGENT",
    "MAX_SLOTS",
    "SCOPES",
    "Option",
    "check_redis_url",
    "comma_list",
    "option",
    "out_of_bounds",
]

DEFAULT_USER_AGENT = f"mpcrawler/{__version__} (+https://pypi.org/project/mpcrawler/)"

MIB = 1 << 20


SCOPES = ("hosts", "domains", "any")
POLITENESS_KEYS = ("host", "domain", "ip")
HTML_TYPES = ("text/html", "application/xhtml+xml")
PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")
RENDER_MODES = ("never", "auto", "always")
# The browser's resource types (Playwright's request.resource_type) that --render-block takes.
RENDER_BLOCKABLE = ("image", "font", "media", "stylesheet", "script", "xhr", "fetch", "other")
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MAX_SLOTS = 4096  # workers x threads
EMBED_HOPS_LIMIT = 8  # --max-embed-hops at most (the embed band of priorities in the frontier)


def comma_list(*texts: str) -> list[str]:
    """The comma-separated items of ``texts``, stripped, lower-case, none empty."""
    return [item.strip().lower() for text in texts for item in text.split(",") if item.strip()]


def check_redis_url(url: str) -> None:
    """ValueError (one line, the password hidden) unless ``url`` is a
    redis://, rediss:// or unix:// URL whose database, if given, is a number."""
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"--redis {redact_url(url)}: not a redis:// URL")
    if url.startswith("unix://"):
        return
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise ValueError(f"--redis {redact_url(url)}: {exc}") from None
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ValueError(f"--redis {redact_url(url)}: the database must be a number, not {db!r}")


# With --scope any: a per-host budget (URLs queued per host, seeds included)
# and a depth limit (wget's default for -r).
BROAD_CRAWL_DEFAULTS: dict[str, int] = {
    "max_pages_per_host": 10_000,
    "max_depth": 5,
}


@dataclass(frozen=True)
class Option:
    """How a setting is given on the command line and what values it takes:
    the table every option is written in once (``option()``); argparse, the
    checks, ``--help`` and its limits all come from it."""

    help: str = ""
    flag: str | None = None  # default: --name-with-dashes
    metavar: str | None = None
    minimum: float | None = None  # the least value allowed
    above: float | None = None  # values must be more than this
    maximum: float | None = None  # the most a real machine can honour
    choices: tuple[str, ...] | None = None
    size: bool = False  # bytes, with K, M or G
    duration: bool = False  # seconds, with s, m, h or d
    group: str = ""  # its section of crawl --help: one of cli.parser.GROUPS


def option(default: Any = dataclasses.MISSING, **how: Any) -> Any:
    """A field of Settings given by a command-line option (see Option);
    ``default_factory`` as for ``dataclasses.field``."""
    factory = how.pop("default_factory", dataclasses.MISSING)
    return field(default=default, default_factory=factory, metadata={"option": Option(**how)})


def out_of_bounds(how: Option, value: Any) -> str | None:
    """Why ``value`` is not allowed for the option ``how`` (None: it is)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        if how.choices is not None and value not in how.choices:
            return f"must be one of {', '.join(how.choices)}"
        return None
    if how.minimum is not None and not value >= how.minimum:  # NaN is not
        return "must be at least 1" if how.minimum == 1 else "must not be negative"
    if how.above is not None and not value > how.above:
        return f"must be more than {how.above:g}"
    if how.maximum is not None and not (math.isfinite(value) and value <= how.maximum):
        return f"must be at most {how.maximum:g}"
    return None


def _type_of(extension: str) -> str | None:
    """The content type a file name with ``extension`` usually has."""
    import mimetypes

    return mimetypes.guess_type(f"x.{extension}", strict=False)[0]


def _proxy_host(url: str) -> bool:
    """``url`` names a host (and, if any, a port from 1 to 65535) as
    urllib3 parses a proxy URL."""
    import urllib3.util

    try:
        parsed = urllib3.util.parse_url(url)
    except (ValueError, urllib3.exceptions.LocationParseError):
        return False
    return bool(parsed.host) and (parsed.port is None or 0 < parsed.port < 65536)


# Headers whose values are secrets: job.json, --print-config and the log show ***.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key"})
