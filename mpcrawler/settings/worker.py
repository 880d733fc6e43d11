"""WorkerConfig: what a worker process uses of a crawl's settings, and
nothing else.

The master sends it to each worker it starts (``to_dict``, over the
worker's pipe, never to a file) instead of the whole of
:class:`mpcrawler.settings.Settings`: a worker needs the fetching, the URL
rules, the analysis, the archive and the browser, and not the crawl's
outputs, budgets, shared crawl or web page, whose secrets (the Redis
URL's password, a PostgreSQL sink's, the S3 endpoint) so never reach it.
The hosts' credentials (``--http-user``, a seed's ``user:password@``) and
the headers do: the worker sends them.

A plug-in (``--downloader``, ``--analyzer``) is built from this, as the
worker's own parts are.  ``WORKER_FIELDS`` names the fields; a test checks
that the worker's modules read no other.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .derived import Derived

if TYPE_CHECKING:
    from .crawl_settings import Settings

__all__ = ["WORKER_FIELDS", "WorkerConfig"]


@dataclass(frozen=True)
class WorkerConfig(Derived):
    """The settings a worker reads: fetching, URL rules, analysis, archive, browser."""

    # running
    threads: int
    downloader: str
    analyzer: str
    log_file: str | None
    # fetching
    user_agent: str
    timeout: float
    max_bytes: int
    proxy: str | None
    insecure: bool
    ca_bundle: str | None
    cookies: str | None
    headers: list[str]
    credentials: dict[str, list[str]]
    allow_private_networks: bool
    seeds: list[str]  # their hosts may be private addresses (the connection guard)
    robots: bool  # the WARC's warcinfo says whether robots.txt was obeyed
    # URL rules
    accept_regex: list[str]
    reject_regex: list[str]
    reject_ext: str | None
    accept_type: str | None
    max_url_length: int
    max_path_repeats: int | None
    max_path_segments: int | None
    strip_query: list[str]
    sort_query: bool
    keep_session_ids: bool
    ignore_nofollow: bool
    follow_feeds: bool
    record_links: bool
    # content
    dedup: bool
    near_duplicates: bool  # (ContentOptions.finds_near)
    extract: bool
    max_text: int
    pdf_timeout: float
    # archive
    warc_dir: str | None
    warc_size: int
    cdxj: bool
    wacz: str | None
    page_requisites: bool
    filter_embeds: bool
    # browser
    render: str
    browser_path: str | None
    render_block: str
    render_tabs: int
    render_timeout: float
    render_restart: int
    render_memory: int

    @classmethod
    def of(cls, settings: Settings) -> WorkerConfig:
        """The worker's part of ``settings``."""
        fields = {name: getattr(settings, name) for name in WORKER_FIELDS}
        fields["near_duplicates"] = settings.content.finds_near
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        """As plain data, for the worker's pipe (the credentials in it:
        never written to a file)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerConfig:
        return cls(**{name: data[name] for name in WORKER_FIELDS})


WORKER_FIELDS = tuple(f.name for f in dataclasses.fields(WorkerConfig))
