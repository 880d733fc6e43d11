"""Settings: every setting of a crawl, in groups, one frozen dataclass a
section of the option table (one module each: ``startup_options``,
``limit_options``, ``filter_options``, ``request_options``,
``politeness_options``, ``output_options``, ``content_options``,
``archive_options``, ``revisit_options``, ``render_options``,
``shared_options``, ``watch_options``).

Each command-line option is written once, as a field made with
``option()``: its name, type (the annotation), default, bounds, help and
section.  The CLI builds its parser from that table (``OPTIONS``) and a
Settings from the parsed arguments; ``validate()`` checks the bounds for
the CLI and the Python API alike; ``--help`` lists the limits from it.

A part reads its group, ``settings.politeness.delay``; a group never
changes, and a setting changed (``control set``, the scope's defaults) is
a new group in its place (``settings.set``).  ``Settings(delay=2)`` and
``settings.delay`` (read or assigned) still take each setting by its own
name, for the Python API and the command line.  Workers receive what they
use of it (:class:`~mpcrawler.settings.worker.WorkerConfig`); the job
directory stores it as JSON (``to_dict``, flat: one key a setting) so
that a resumed crawl can check it runs with the same scope.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..web.redact import redact_url
from .archive_options import ArchiveOptions
from .content_options import ContentOptions
from .derived import Derived
from .filter_options import FilterOptions
from .limit_options import LimitOptions
from .options import (
    BROAD_CRAWL_DEFAULTS,
    MAX_SLOTS,
    POLITENESS_KEYS,
    PROXY_SCHEMES,
    RENDER_BLOCKABLE,
    SCOPES,
    SECRET_HEADERS,
    Option,
    _proxy_host,
    check_redis_url,
    comma_list,
    out_of_bounds,
)
from .output_options import OutputOptions
from .politeness_options import PolitenessOptions
from .render_options import RenderOptions
from .request_options import RequestOptions
from .revisit_options import RevisitOptions
from .shared_options import SharedOptions
from .startup_options import StartupOptions
from .watch_options import WatchOptions

__all__ = [
    "GROUPS",
    "GROUP_OF",
    "NUMBER_KINDS",
    "OPTIONS",
    "OPTION_FIELDS",
    "OPTION_HINTS",
    "SECRET_FIELDS",
    "UPPER_BOUNDS",
    "Settings",
    "flag_of",
    "setting_value",
]


# The groups, by their attribute on Settings, in the option table's order.
GROUPS: tuple[tuple[str, type], ...] = (
    ("startup", StartupOptions),
    ("limits", LimitOptions),
    ("filters", FilterOptions),
    ("requests", RequestOptions),
    ("politeness", PolitenessOptions),
    ("outputs", OutputOptions),
    ("content", ContentOptions),
    ("archive", ArchiveOptions),
    ("revisits", RevisitOptions),
    ("rendering", RenderOptions),
    ("shared", SharedOptions),
    ("watch", WatchOptions),
)
# Each option's field, and the group that holds it, in the table's order.
OPTION_FIELDS: dict[str, dataclasses.Field[Any]] = {
    f.name: f for _, kind in GROUPS for f in dataclasses.fields(kind) if "option" in f.metadata
}
GROUP_OF: dict[str, str] = {
    name: attr
    for attr, kind in GROUPS
    for name in (f.name for f in dataclasses.fields(kind))
    if name in OPTION_FIELDS
}
_KINDS = dict(GROUPS)


@dataclass(init=False)
class Settings(Derived):
    """Every setting of a crawl: the option table's groups (each frozen),
    and what comes from the seeds (priorities, credentials) or is for the
    Python API and tests.  Made from the settings by name:
    ``Settings(seeds=[...], delay=1.0)`` (or a whole group,
    ``Settings(politeness=PolitenessOptions(delay=1.0))``)."""

    startup: StartupOptions
    limits: LimitOptions
    filters: FilterOptions
    requests: RequestOptions
    politeness: PolitenessOptions
    outputs: OutputOptions
    content: ContentOptions
    archive: ArchiveOptions
    revisits: RevisitOptions
    rendering: RenderOptions
    shared: SharedOptions
    watch: WatchOptions
    seeds: list[str]
    seed_priorities: dict[str, int]
    checkpoint_interval: float
    # host (scheme://host[:port]) -> [user, password], sent as its Basic
    # Authorization header: from the seeds' own user:password@ and --http-user.
    # A secret: to_dict() writes the password as *** (only the workers get it).
    credentials: dict[str, list[str]]

    def __init__(
        self,
        seeds: list[str] | None = None,
        seed_priorities: dict[str, int] | None = None,
        checkpoint_interval: float = 2.0,
        credentials: dict[str, list[str]] | None = None,
        **values: Any,
    ) -> None:
        self.seeds = [] if seeds is None else seeds
        self.seed_priorities = {} if seed_priorities is None else seed_priorities
        self.checkpoint_interval = checkpoint_interval
        self.credentials = {} if credentials is None else credentials
        named: dict[str, dict[str, Any]] = {attr: {} for attr, _ in GROUPS}
        for name, value in values.items():
            if name in GROUP_OF:
                named[GROUP_OF[name]][name] = value
            elif name not in _KINDS:
                raise TypeError(f"Settings() got an unexpected keyword argument {name!r}")
        for attr, kind in GROUPS:
            if attr in values and named[attr]:
                raise TypeError(f"Settings() got both {attr}= and some of its settings")
            group = values[attr] if attr in values else kind(**named[attr])
            if not isinstance(group, kind):
                raise TypeError(f"Settings(): {attr} must be a {kind.__name__}")
            setattr(self, attr, group)

    def set(self, name: str, value: Any) -> None:
        """The setting ``name`` changed: its group replaced by a new one."""
        attr = GROUP_OF[name]
        setattr(self, attr, dataclasses.replace(getattr(self, attr), **{name: value}))

    def apply_scope_defaults(self) -> None:
        """The trap guards a crawl that follows links anywhere needs, where
        the user set none: BROAD_CRAWL_DEFAULTS."""
        if self.filters.scope == "any":
            for name, value in BROAD_CRAWL_DEFAULTS.items():
                if getattr(self, name) is None:
                    self.set(name, value)

    def output_path(self) -> Path | None:
        """The records file, the job's journal: the ``--out`` that is a plain
        ``.jsonl`` file, else pages.jsonl in the job dir, else ./pages.jsonl
        when no other sink is given (None: then the temporary job dir's)."""
        from ..output.sinks import journal_of

        if (journal := journal_of(self.out)) is not None:
            return Path(journal)
        if self.job_dir:
            return Path(self.job_dir) / "pages.jsonl"
        return None if self.out else Path("pages.jsonl")

    def to_dict(self, secrets: bool = False) -> dict[str, Any]:
        """The settings as plain data, as job.json keeps them: no secret
        (the Redis URL's and the hosts' passwords are ``***``) unless
        ``secrets`` (for the workers, over their pipes, never to a file)."""
        data: dict[str, Any] = {}
        for attr, _ in GROUPS:
            data.update(dataclasses.asdict(getattr(self, attr)))
        data.update(
            seeds=list(self.seeds),
            seed_priorities=dict(self.seed_priorities),
            checkpoint_interval=self.checkpoint_interval,
            credentials=copy.deepcopy(self.credentials),
        )
        if not secrets:
            data.update((name, self.public(name)) for name in SECRET_FIELDS)
        return data

    def public(self, name: str) -> Any:
        """The setting ``name`` as ``to_dict`` writes it: its secrets ``***``."""
        value = getattr(self, name)
        if name in ("redis", "proxy"):
            return redact_url(value) if value else value
        if name == "credentials":
            return {host: [user, "***"] for host, (user, _) in value.items()}
        if name == "headers":
            return [
                f"{header}: ***" if header.lower() in SECRET_HEADERS else f"{header}: {text}"
                for header, text in self.header_pairs()
            ]
        if name == "out":
            return [redact_url(spec) for spec in value]
        return value

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        names = {*OPTION_FIELDS, "seeds", "seed_priorities", "checkpoint_interval", "credentials"}
        return cls(**{k: v for k, v in data.items() if k in names})

    def validate(self) -> None:
        """Raise ValueError with one clear line for an impossible setting."""
        for name, how in OPTIONS.items():
            if (problem := out_of_bounds(how, getattr(self, name))) is not None:
                raise ValueError(f"{flag_of(name)} {problem}")
        if self.revisit_min > self.revisit_max:
            raise ValueError("--revisit-min must not be more than --revisit-max")
        if self.workers * self.threads > MAX_SLOTS:
            raise ValueError(f"--workers x --threads must be at most {MAX_SLOTS}")
        if self.scope not in SCOPES:
            raise ValueError(f"--scope must be one of {', '.join(SCOPES)}")
        if (self.cdxj or self.wacz) and not self.warc_dir:
            raise ValueError(f"{'--wacz' if self.wacz else '--cdxj'} needs --warc DIR")
        if self.follow_feeds:
            import importlib.util

            if importlib.util.find_spec("feedparser") is None:
                raise ValueError(
                    "--follow-feeds: the feedparser package is not installed "
                    "(pip install 'mpcrawler[feeds]')"
                )
        if (self.redis is None) != (self.crawl is None):
            raise ValueError("--redis and --crawl go together: --redis URL --crawl NAME")
        if self.redis is not None:
            check_redis_url(self.redis)
        if self.upload and not self.job_dir:
            raise ValueError("--upload needs --job-dir DIR (it keeps there what went up)")
        if self.retry_failed and (self.redis is not None or not self.job_dir):
            raise ValueError("--retry-failed takes a local job: --job-dir DIR, without --redis")
        if self.crawl is not None and not re.fullmatch(r"[\w.-]{1,100}", self.crawl):
            raise ValueError("--crawl must be 1-100 letters, digits, '.', '_' or '-'")
        self._validate_filters()
        self._validate_requests()
        self._validate_render()
        from ..output.sinks import check_outputs

        check_outputs(self.out, self.upload)  # ValueError: a sink unknown, or its extra missing
        if self.ca_bundle is not None and not os.path.isfile(self.ca_bundle):
            raise ValueError(f"--ca-bundle {self.ca_bundle}: no such file")
        if self.ca_bundle is not None:
            try:
                ssl.create_default_context().load_verify_locations(cafile=self.ca_bundle)
            except (ssl.SSLError, ValueError) as exc:
                reason = getattr(exc, "reason", None) or exc
                raise ValueError(
                    f"--ca-bundle {self.ca_bundle}: no PEM certificates in it ({reason})"
                ) from None

    def _validate_filters(self) -> None:
        from ..web.patterns import PatternSet

        for name in ("accept_regex", "reject_regex"):
            PatternSet(getattr(self, name), flag_of(name))  # ValueError: RE2 cannot take one
        if self.politeness_key not in POLITENESS_KEYS:
            raise ValueError(f"--politeness-key must be one of {', '.join(POLITENESS_KEYS)}")
        for kind in comma_list(self.accept_type or ""):
            if kind != "*" and not re.fullmatch(r"[\w.+-]+/[\w.+*-]+", kind):
                raise ValueError(f"--accept-type {kind!r}: not a content type like text/html")

    def _validate_render(self) -> None:
        for kind in self.render_blocked():
            if kind not in RENDER_BLOCKABLE:
                raise ValueError(
                    f"--render-block {kind!r}: not one of {', '.join(RENDER_BLOCKABLE)} (or none)"
                )
        if self.render == "never":
            return
        import importlib.util

        if importlib.util.find_spec("playwright") is None:
            raise ValueError(
                f"--render {self.render}: the playwright package is not installed "
                "(pip install 'mpcrawler[render]', and Chromium: apt-get install chromium)"
            )
        self.browser()  # ValueError if there is none

    def _validate_requests(self) -> None:
        for text in self.headers:
            name, colon, _ = text.partition(":")
            if not colon or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name.strip()):
                raise ValueError(f"--header {text!r}: not 'Name: value'")
            if "\r" in text or "\n" in text:
                raise ValueError("--header: a header may not hold a line break")
            try:
                text.encode("latin-1")
            except UnicodeEncodeError:
                raise ValueError(
                    f"--header {name.strip()!r}: its value is not Latin-1 (HTTP sends header "
                    "values as bytes: percent-encode or RFC 2047-encode it)"
                ) from None
        if self.cookies is not None:
            from ..web.cookies import read_cookies_file

            read_cookies_file(self.cookies)  # ValueError if it cannot be read
        if self.proxy is not None:
            scheme, sep, _ = self.proxy.partition("://")
            if not sep or scheme.lower() not in PROXY_SCHEMES or not _proxy_host(self.proxy):
                raise ValueError(
                    f"--proxy {redact_url(self.proxy)}: not a proxy URL "
                    "(http://, https://, socks5:// or socks5h://HOST:PORT)"
                )
            if scheme.lower().startswith("socks"):
                try:
                    import socks  # noqa: F401 - PySocks, requests[socks]
                except ImportError:
                    raise ValueError(
                        "--proxy socks5://: PySocks is not installed "
                        "(pip install 'requests[socks]')"
                    ) from None


# The settings that may hold a secret: ``Settings.public`` writes them without it.
SECRET_FIELDS = ("redis", "proxy", "credentials", "headers", "out")


# The option table: each command-line option's field name and how it is given.
OPTIONS: dict[str, Option] = {name: f.metadata["option"] for name, f in OPTION_FIELDS.items()}


def _flat(attr: str, name: str) -> property:
    """``settings.NAME``: the setting of that name in its group, read or set."""

    def get(self: Settings) -> Any:
        return getattr(getattr(self, attr), name)

    def put(self: Settings, value: Any) -> None:
        self.set(name, value)

    return property(get, put, doc=f"``{attr}.{name}``")


for _name, _attr in GROUP_OF.items():
    setattr(Settings, _name, _flat(_attr, _name))


# The most of each that a real machine can honour (checked before anything is
# written): processes and threads to fork, and times a person means.
UPPER_BOUNDS: dict[str, float] = {
    name: how.maximum for name, how in OPTIONS.items() if how.maximum is not None
}


def _option_hints() -> dict[str, Any]:
    """Each option's type, from its group's annotations (read once:
    ``get_type_hints`` takes milliseconds)."""
    import typing

    hints: dict[str, Any] = {}
    for _, kind in GROUPS:
        hints.update(typing.get_type_hints(kind))
    return {name: hints[name] for name in OPTION_FIELDS}


OPTION_HINTS = _option_hints()


def _number_kinds() -> dict[str, type]:
    """int or float: the number each numeric option takes (by its annotation)."""
    import typing

    kinds: dict[str, type] = {}
    for name in OPTIONS:
        kind = OPTION_HINTS[name]
        if kind is not bool:
            found = next((k for k in (int, float) if kind is k or k in typing.get_args(kind)), None)
            if found is not None:
                kinds[name] = found
    return kinds


NUMBER_KINDS = _number_kinds()


def setting_value(name: str, value: Any) -> int | float:
    """``value`` (text, or a number read from JSON) for the numeric setting
    ``name``, as the command line takes it: its type and its bounds in the
    option table (``control set``, and a resume's overrides).  ValueError
    with one line (the value too big or not a number says so)."""
    kind = NUMBER_KINDS[name]
    what = "an integer" if kind is int else "a number"
    number: Any = value
    if isinstance(value, str):
        try:
            number = kind(value.strip())
        except ValueError:
            raise ValueError(f"{value[:40]!r} is not {what}") from None
    elif isinstance(value, bool) or not isinstance(value, int if kind is int else (int, float)):
        raise ValueError(f"{str(value)[:40]!r} is not {what}")
    if (problem := out_of_bounds(OPTIONS[name], number)) is not None:
        raise ValueError(problem)
    return kind(number)


def flag_of(name: str) -> str:
    """The command-line flag of the setting ``name``."""
    return OPTIONS[name].flag or "--" + name.replace("_", "-")
