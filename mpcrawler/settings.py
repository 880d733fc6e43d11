"""Every option of a crawl, as one plain dataclass.

The CLI builds it from arguments, the Python API takes it directly, workers
receive it as a dict (``to_dict``), and the job directory stores it as JSON so
that a resumed crawl can check it runs with the same scope.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .__version__ import __version__
from .web.redact import redact_url

__all__ = ["BROAD_CRAWL_DEFAULTS", "DEFAULT_USER_AGENT", "SCOPES", "Settings"]

DEFAULT_USER_AGENT = f"mpcrawler/{__version__} (+https://pypi.org/project/mpcrawler/)"
MIB = 1 << 20


SCOPES = ("hosts", "domains", "any")
# With --scope any: a per-host budget (URLs queued per host, seeds included),
# a depth limit (wget's default for -r), and a cap on the hosts whose state
# the scheduler keeps in memory (idle ones beyond it are forgotten, robots.txt
# included, and fetched again if they come back).
# The most of each that a real machine can honour (checked before anything is
# written): processes and threads to fork, and times a person means.
UPPER_BOUNDS: dict[str, float] = {
    "workers": 256,
    "threads": 256,
    "host_concurrency": 1024,
    "max_redirects": 100,
    "max_url_length": 1 << 16,
    "delay": 3600,
    "timeout": 3600,
    "grace": 3600,
    "retry_delay": 3600,
    "max_retry_after": 86400,
    "robots_retry_delay": 86400,
    "hang_timeout": 86400,
    "lease_timeout": 86400,
    "redis_timeout": 7 * 86400,
}
MAX_SLOTS = 4096  # workers x threads


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


BROAD_CRAWL_DEFAULTS: dict[str, int] = {
    "max_pages_per_host": 10_000,
    "max_depth": 5,
    "max_active_hosts": 10_000,
}


@dataclass
class Settings:
    seeds: list[str] = field(default_factory=list)
    workers: int = field(default_factory=lambda: min(os.cpu_count() or 1, 256))
    threads: int = 4
    out: str | None = None
    job_dir: str | None = None
    max_pages: int | None = None
    max_depth: int | None = None
    depth_priority: int = 0
    seed_priorities: dict[str, int] = field(default_factory=dict)
    allow_domains: list[str] = field(default_factory=list)
    user_agent: str = DEFAULT_USER_AGENT
    quiet: bool = False
    cache_size: int = 10_000
    downloader: str = "mpcrawler.worker.downloader:HttpDownloader"
    analyzer: str = "mpcrawler.worker.analyzer:HtmlAnalyzer"
    pipelines: list[str] = field(default_factory=list)
    robots: bool = True
    host_concurrency: int = 8
    delay: float = 0.0
    max_redirects: int = 5
    timeout: float = 30.0
    retries: int = 2
    retry_delay: float = 1.0
    max_retry_after: float = 60.0
    max_bytes: int = 10 * MIB
    sitemaps: bool = True
    warc_dir: str | None = None
    warc_size: int = 1024 * MIB
    max_url_length: int = 2048
    max_pages_per_host: int | None = None
    grace: float = 10.0
    hang_timeout: float | None = None  # default: 4 x timeout + 10 s
    log_file: str | None = None
    repair: bool = False  # go on from a damaged job dir with what can be trusted
    checkpoint_interval: float = 2.0
    robots_retry_delay: float = 30.0
    scope: str = "hosts"  # hosts | domains | any (see urls.Scope)
    deny_domains: list[str] = field(default_factory=list)
    allow_private_networks: bool = False
    ca_bundle: str | None = None  # more CA certificates to trust
    insecure: bool = False  # no TLS verification
    max_active_hosts: int | None = None  # hosts the scheduler keeps in memory
    record_links: bool = False  # each record lists the page's links
    redis: str | None = None  # redis://HOST:PORT/DB: share the crawl through it
    crawl: str | None = None  # the shared crawl's name (with --redis)
    node: str | None = None  # this node's id (default: hostname-pid)
    lease_timeout: float = 30.0  # a dead node's work goes back after this
    redis_timeout: float = 300.0  # give up after Redis is unreachable this long
    # host (scheme://host[:port]) -> [user, password], sent as its Basic
    # Authorization header: from the seeds' own user:password@ and --http-user.
    # A secret: to_dict() writes the password as *** (only the workers get it).
    credentials: dict[str, list[str]] = field(default_factory=dict)

    def apply_scope_defaults(self) -> None:
        """The trap guards a crawl that follows links anywhere needs, where
        the user set none: BROAD_CRAWL_DEFAULTS."""
        if self.scope == "any":
            for name, value in BROAD_CRAWL_DEFAULTS.items():
                if getattr(self, name) is None:
                    setattr(self, name, value)

    def output_path(self) -> Path:
        """The records file: ``out``, else pages.jsonl in the job dir, else ./pages.jsonl."""
        if self.out:
            return Path(self.out)
        return Path(self.job_dir) / "pages.jsonl" if self.job_dir else Path("pages.jsonl")

    def to_dict(self, secrets: bool = False) -> dict[str, Any]:
        """The settings as plain data, as job.json keeps them: no secret
        (the Redis URL's and the hosts' passwords are ``***``) unless
        ``secrets`` (for the workers, over their pipes, never to a file)."""
        data = dataclasses.asdict(self)
        if secrets:
            return data
        if self.redis:
            data["redis"] = redact_url(self.redis)
        data["credentials"] = {host: [user, "***"] for host, (user, _) in self.credentials.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def validate(self) -> None:
        """Raise ValueError with one clear line for an impossible setting."""
        positive = {
            "workers": self.workers,
            "threads": self.threads,
            "cache_size": self.cache_size,
            "host_concurrency": self.host_concurrency,
            "max_redirects": self.max_redirects + 1,
            "max_bytes": self.max_bytes,
            "max_url_length": self.max_url_length,
        }
        for name, value in positive.items():
            if value < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
        for name in ("max_pages", "max_pages_per_host"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
        if self.max_depth is not None and self.max_depth < 0:
            raise ValueError("--max-depth must be 0 or more")
        for name in ("delay", "timeout", "grace", "retries"):
            if getattr(self, name) < 0:
                raise ValueError(f"--{name} must not be negative")
        if self.timeout == 0:
            raise ValueError("--timeout must be more than 0")
        for name, most in UPPER_BOUNDS.items():
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value <= most):
                raise ValueError(f"--{name.replace('_', '-')} must be at most {most:g}")
        if self.workers * self.threads > MAX_SLOTS:
            raise ValueError(f"--workers x --threads must be at most {MAX_SLOTS}")
        if self.hang_timeout is not None and self.hang_timeout <= 0:
            raise ValueError("--hang-timeout must be more than 0")
        if self.scope not in SCOPES:
            raise ValueError(f"--scope must be one of {', '.join(SCOPES)}")
        if self.max_active_hosts is not None and self.max_active_hosts < 1:
            raise ValueError("--max-active-hosts must be at least 1")
        if (self.redis is None) != (self.crawl is None):
            raise ValueError("--redis and --crawl go together: --redis URL --crawl NAME")
        if self.redis is not None:
            check_redis_url(self.redis)
        if self.crawl is not None and not re.fullmatch(r"[\w.-]{1,100}", self.crawl):
            raise ValueError("--crawl must be 1-100 letters, digits, '.', '_' or '-'")
        for name in ("lease_timeout", "redis_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"--{name.replace('_', '-')} must be more than 0")
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
