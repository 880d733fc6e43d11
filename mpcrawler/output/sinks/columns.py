"""The one table a record becomes in Parquet and PostgreSQL.

A record's keys vary with the options (``--extract``, ``--record-links``,
``--warc``...), but a dataset must keep one schema from its first part to
its last, and a table its columns.  So the fields every crawl has, and the
common ones of text and archives, are typed columns; every other field
goes, as a JSON object, in ``extra``.  A value whose type is not its
column's (a plug-in pipeline's, say) goes to ``extra`` too, so no record is
refused for its shape.  ``fetched_at`` is a timestamp (UTC), the others as
in pages.jsonl.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["COLUMNS", "FETCHED_AT", "split"]

# name -> the Python type its values have ("timestamp": seconds, a float)
COLUMNS: dict[str, str] = {
    "url": "str",
    "final_url": "str",
    "status": "int",
    "depth": "int",
    "priority": "int",
    "content_type": "str",
    "bytes": "int",
    "title": "str",
    "links": "int",
    "new_links": "int",
    "elapsed_ms": "float",
    "worker": "str",
    "error": "str",
    "error_kind": "str",
    "redirects": "int",
    "attempts": "int",
    "fetched_at": "timestamp",
    "kind": "str",
    "change": "str",
    "digest": "str",
    "encoding": "str",
    "canonical": "str",
    "duplicate_of": "str",
    "near_duplicate_of": "str",
    "warc_file": "str",
    "warc_offset": "int",
    "node": "str",
    "lang": "str",
    "text": "str",
    "markdown": "str",
}

FETCHED_AT = list(COLUMNS).index("fetched_at")  # its place in ``split``'s values

_FITS: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (float, int),
    "timestamp": (float, int),
}
_INT64 = (-(2**63), 2**63 - 1)


def _fits(value: Any, kind: str) -> bool:
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, _FITS[kind]):
        return False
    if kind == "str":
        return "\x00" not in value  # (PostgreSQL's text cannot hold NUL)
    return kind != "int" or _INT64[0] <= value <= _INT64[1]


def split(record: dict[str, Any]) -> tuple[list[Any], str | None]:
    """The record's values in COLUMNS' order (None where it has none) and
    the JSON of the rest (None if nothing is left)."""
    values: list[Any] = []
    rest: dict[str, Any] = {}
    for name, kind in COLUMNS.items():
        value = record.get(name)
        if _fits(value, kind):
            values.append(value)
        else:
            values.append(None)
            rest[name] = value
    for name, value in record.items():
        if name not in COLUMNS:
            rest[name] = value
    return values, (json.dumps(rest, ensure_ascii=False) if rest else None)
