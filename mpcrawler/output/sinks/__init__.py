"""Sinks: where the records go besides the job's journal (``--out``, repeatable).

Every record is first appended to the job's JSON Lines journal (the
``--out`` that is a plain ``.jsonl`` file, or ``pages.jsonl`` in the job
dir); each other sink is a :class:`~mpcrawler.output.pipelines.Pipeline`
after it, fed the same records in the same order, and keeps a cursor: the
journal's byte offset up to which the sink holds everything
(:mod:`.base`).  A run that starts (after a kill, a failure, or with a sink
new to the job) first hands each sink the journal's lines past its cursor,
so every sink ends up with every record exactly once::

    record --> journal (pages.jsonl) --> sink 1 (cursor: offset it holds) ...
                    |                        ^
                    +-- at open: lines past each sink's cursor

The kinds, by how ``--out`` names them:

==========================================  ====================  ============
``PATH.jsonl`` (any other path)              the journal           (built in)
``PATH.jsonl.gz``, ``PATH.jsonl.zst``        :mod:`.compressed`    ``[zstd]``
``PATH.parquet``, ``parquet:DIR``            :mod:`.parquet`       ``[parquet]``
``postgresql://USER@HOST/DB?table=T``        :mod:`.postgres`      ``[postgres]``
==========================================  ====================  ============

and ``--upload s3://BUCKET/PREFIX`` (:mod:`.s3`, ``[s3]``) copies the
files the crawl completes to an object store.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from ...web.redact import redact_url

if TYPE_CHECKING:
    from .base import Sink

__all__ = ["check_outputs", "journal_of", "kind_of", "make_sink"]

# What each kind needs installed: (module to find, the extra that installs it).
NEEDS: dict[str, tuple[str, str]] = {
    "jsonl.zst": ("zstandard", "zstd"),
    "parquet": ("pyarrow", "parquet"),
    "postgresql": ("psycopg", "postgres"),
    "s3": ("boto3", "s3"),
}


def kind_of(spec: str) -> str:
    """The sink an ``--out`` value names; ValueError (one line) if none."""
    lower = spec.lower()
    if lower.startswith(("postgresql://", "postgres://")):
        return "postgresql"
    if lower.startswith("parquet:"):
        return "parquet"
    if "://" in spec:
        raise ValueError(
            f"--out {redact_url(spec)}: not a sink; a URL must be postgresql:// "
            "(files go to an object store with --upload s3://BUCKET/PREFIX)"
        )
    for suffix in ("jsonl.gz", "jsonl.zst", "parquet"):
        if lower.endswith("." + suffix):
            return suffix
    return "jsonl"  # any other path (a .jsonl, /dev/stdout): JSON Lines, as always


def journal_of(specs: list[str]) -> str | None:
    """The ``--out`` that is the job's journal: the plain ``.jsonl`` one."""
    return next((spec for spec in specs if kind_of(spec) == "jsonl"), None)


def check_outputs(specs: list[str], upload: str | None) -> None:
    """ValueError, one line, for an ``--out`` or ``--upload`` that cannot
    be used: not a sink, two journals, the same sink twice, or the extra it
    needs not installed."""
    kinds = [kind_of(spec) for spec in specs]
    if kinds.count("jsonl") > 1:
        raise ValueError("--out: one plain .jsonl file at most (it is the job's journal)")
    if len(set(specs)) < len(specs):
        raise ValueError("--out: the same sink is given twice")
    if upload is not None:
        if not upload.startswith("s3://") or not upload[5:].split("/", 1)[0]:
            raise ValueError(f"--upload {upload}: not s3://BUCKET/PREFIX")
        kinds.append("s3")
    for spec in specs:
        if kind_of(spec) == "postgresql":
            from .postgres import split_url

            try:
                split_url(spec)
            except ValueError as exc:
                raise ValueError(f"--out {redact_url(spec)}: {exc}") from None
    for kind in kinds:
        if kind in NEEDS and importlib.util.find_spec(NEEDS[kind][0]) is None:
            module, extra = NEEDS[kind]
            flag = "--upload" if kind == "s3" else "--out"
            raise ValueError(
                f"{flag} {kind}: needs {module}, which is not installed: "
                f"pip install 'mpcrawler[{extra}]'"
            )


def make_sink(spec: str, state_dir: Path, job_id: str, batch: int) -> Sink:
    """The sink ``spec`` names (not the journal), its cursor kept in
    ``state_dir``; ``job_id`` tells this job's rows from another's."""
    kind = kind_of(spec)
    if kind in ("jsonl.gz", "jsonl.zst"):
        from .compressed import CompressedJsonLines

        return CompressedJsonLines(spec, state_dir)
    if kind == "parquet":
        from .parquet import ParquetSink

        return ParquetSink(spec, state_dir, batch)
    if kind == "postgresql":
        from .postgres import PostgresSink

        return PostgresSink(spec, state_dir, job_id, batch)
    raise ValueError(f"--out {spec}: the journal is not a sink")
