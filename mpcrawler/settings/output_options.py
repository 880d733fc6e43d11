"""The options of ``crawl --help``'s "outputs" section.

Where the records go: sinks, upload, the finish hook. A group of
:class:`mpcrawler.settings.Settings` (``settings.outputs``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .options import option

__all__ = ["OutputOptions"]


@dataclass(frozen=True)
class OutputOptions:
    """Options: where the records go: sinks, upload, the finish hook."""

    out: list[str] = option(
        default_factory=list,
        metavar="SINK",
        help="where the records go (repeatable): PATH.jsonl (or any other path: JSON "
        "Lines, appended to; the job's journal), PATH.jsonl.gz or PATH.jsonl.zst, "
        "PATH.parquet or parquet:DIR (a Parquet dataset, pip install "
        "'mpcrawler[parquet]'), postgresql://USER@HOST/DB?table=pages (pip install "
        "'mpcrawler[postgres]'); default: pages.jsonl in the job dir, or ./pages.jsonl",
        group="outputs",
    )
    upload: str | None = option(
        None,
        metavar="s3://BUCKET/PREFIX",
        help="upload the Parquet parts, WARC files, WACZ and the other outputs to this S3 "
        "prefix as each is complete, then a manifest.json (pip install 'mpcrawler[s3]')",
        group="outputs",
    )
    s3_endpoint_url: str | None = option(
        None,
        metavar="URL",
        help="--upload to this S3-compatible store (MinIO, Ceph...) instead of AWS",
        group="outputs",
    )
    sink_batch: int = option(
        10_000,
        minimum=1,
        metavar="N",
        help="a Parquet part, and a PostgreSQL transaction at most, every N records "
        "(default %(default)s; and at every checkpoint for PostgreSQL, at the end for both)",
        group="outputs",
    )
    on_finish: str | None = option(
        None,
        metavar="CMD",
        help="run CMD with /bin/sh once a run has ended and its outputs are closed, with "
        "MPCRAWLER_EXIT_STATUS, MPCRAWLER_OUTCOME, MPCRAWLER_JOB_DIR, MPCRAWLER_OUT, "
        "MPCRAWLER_PAGES and MPCRAWLER_ERRORS in its environment; its failure is reported and "
        "leaves the crawl's exit status as it was",
        group="outputs",
    )
    record_links: bool = option(
        False,
        help="list each page's links in its record (out-of-scope ones marked), for the link graph",
        group="outputs",
    )

    def __post_init__(self) -> None:
        if isinstance(self.out, (str, os.PathLike)):  # one sink, as --out once was
            object.__setattr__(self, "out", [os.fspath(self.out)])
