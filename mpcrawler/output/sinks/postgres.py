"""A PostgreSQL table: ``--out postgresql://USER@HOST/DB?table=pages``.

Rows go in with COPY, a batch a transaction: at every checkpoint, and
whenever ``--sink-batch`` records are held.  The table (``pages`` unless
``?table=`` names another, ``schema.name`` allowed) is created when
missing, with the columns of :mod:`.columns` (``extra`` as jsonb) and a
primary key of ``(job, journal_offset)``: this job's id and the record's
place in its journal.  The rows a kill may have delivered past the
cursor, given again at open (:mod:`.base`), are copied into a temporary
table and inserted from there ``ON CONFLICT DO NOTHING``, so none is added
twice; every other batch is copied straight into the table.  A table
made here stores its long texts with lz4 where the server has it.  The
URL's other parameters (``sslmode``, ``connect_timeout``...) and
``PGPASSWORD`` are libpq's.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .base import Sink
from .columns import COLUMNS, FETCHED_AT, split

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresSink", "split_url"]

_SQL_TYPES = {
    "str": "text",
    "int": "bigint",
    "float": "double precision",
    "timestamp": "timestamptz",
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def split_url(spec: str) -> tuple[str, list[str]]:
    """The libpq URL (without ``table``) and the table's name parts."""
    parts = urlsplit(spec)
    query = parse_qsl(parts.query, keep_blank_values=True)
    table = [v for k, v in query if k == "table"]
    name = (table[-1] if table else "pages").split(".")
    if len(name) > 2 or not all(_NAME.fullmatch(part) for part in name):
        raise ValueError(f"table={'.'.join(name)!r}: not a table name (letters, digits, _)")
    rest = urlencode([(k, v) for k, v in query if k != "table"])
    return urlunsplit(parts._replace(query=rest)), name


def _no_nul(value: Any) -> Any:
    """jsonb holds no NUL character: each becomes U+FFFD."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_no_nul(v) for v in value]
    if isinstance(value, dict):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}
    return value


class PostgresSink(Sink):
    """Records as rows of a PostgreSQL table, copied in batches."""

    kind = "postgresql"

    def __init__(self, spec: str, state_dir: Path, job_id: str, batch: int) -> None:
        from psycopg import sql

        super().__init__(spec, state_dir)
        self.url, name = split_url(spec)
        self.table = sql.Identifier(*name)
        self.job_id = job_id
        self.batch = batch
        self.held: list[tuple[Any, ...]] = []
        self.conn: psycopg.Connection[Any] | None = None

    def restore(self, cursor: dict[str, Any]) -> None:
        """Connect, and make the table if it is missing."""
        import psycopg
        from psycopg import sql

        conn = self._connect()
        with contextlib.suppress(psycopg.errors.DatabaseError), conn.transaction():
            # lz4 takes a quarter of pglz's time to store a page's text (and
            # a third more room); a server built without it keeps pglz.
            conn.execute("SET default_toast_compression = 'lz4'")
        columns = [
            sql.SQL("{} {}").format(sql.Identifier(name), sql.SQL(_SQL_TYPES[kind]))
            for name, kind in COLUMNS.items()
        ]
        with conn.transaction():
            conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} (job text NOT NULL, journal_offset bigint "
                    "NOT NULL, {}, extra jsonb, PRIMARY KEY (job, journal_offset))"
                ).format(self.table, sql.SQL(", ").join(columns))
            )

    def _connect(self) -> psycopg.Connection[Any]:
        import psycopg

        if self.conn is None or self.conn.closed:
            self.conn = psycopg.connect(self.url, connect_timeout=10, application_name="mpcrawler")
        return self.conn

    def take(self, record: dict[str, Any], line: bytes, end: int) -> None:
        values, extra = split(record)
        if (fetched := values[FETCHED_AT]) is not None:
            values[FETCHED_AT] = datetime.datetime.fromtimestamp(fetched, datetime.UTC)
        if extra is not None and "\\u0000" in extra:
            extra = json.dumps(_no_nul(json.loads(extra)), ensure_ascii=False)
        self.held.append((self.job_id, end - len(line), *values, extra))

    def deliver(self) -> dict[str, Any] | None:
        """What is held, ``--sink-batch`` rows a transaction: copied into
        the table, or, for the rows a kill may have delivered already (the
        journal's lines past the cursor, at open), through a temporary
        table, ``ON CONFLICT DO NOTHING``."""
        if not self.held:
            return None
        from psycopg import sql

        conn = self._connect()
        names = ["job", "journal_offset", *COLUMNS, "extra"]
        fields = sql.SQL(", ").join(sql.Identifier(n) for n in names)
        into = sql.Identifier("mpcrawler_batch") if self.replaying else self.table
        copy_sql = sql.SQL("COPY {} ({}) FROM STDIN").format(into, fields)
        for start in range(0, len(self.held), self.batch):
            with conn.transaction(), conn.cursor() as cur:
                if self.replaying:
                    cur.execute(
                        sql.SQL(
                            "CREATE TEMP TABLE IF NOT EXISTS mpcrawler_batch "
                            "(LIKE {} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
                        ).format(self.table)
                    )
                with cur.copy(copy_sql) as copy:
                    for row in self.held[start : start + self.batch]:
                        copy.write_row(row)
                if self.replaying:
                    cur.execute(
                        sql.SQL(
                            "INSERT INTO {} ({}) SELECT {} FROM mpcrawler_batch "
                            "ON CONFLICT DO NOTHING"
                        ).format(self.table, fields, fields)
                    )
        self.held = []
        return {}

    def release(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
