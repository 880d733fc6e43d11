"""The sinks' decisions and mechanism, without a crawl: which sink an --out
names, the usage errors, the one schema of a record, the cursor and the
catching up from a journal, and the rule that knows a record written
before a kill."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from mpcrawler.errors import SinkError
from mpcrawler.master.outcome import recorded_before
from mpcrawler.master.request import Request
from mpcrawler.output.pipelines import JsonLinesPipeline
from mpcrawler.output.sinks import check_outputs, journal_of, kind_of
from mpcrawler.output.sinks.columns import COLUMNS, split
from mpcrawler.output.sinks.compressed import CompressedJsonLines
from mpcrawler.output.sinks.postgres import split_url
from mpcrawler.settings import Settings


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("out/pages.jsonl", "jsonl"),
        ("/dev/stdout", "jsonl"),
        ("out/PAGES.JSONL.GZ", "jsonl.gz"),
        ("out/p.jsonl.zst", "jsonl.zst"),
        ("out/p.parquet", "parquet"),
        ("parquet:/data/pages", "parquet"),
        ("postgresql://u@h/db?table=t", "postgresql"),
        ("postgres://u:pw@h:5433/db", "postgresql"),
    ],
)
def test_an_out_names_its_sink_by_its_form(spec: str, kind: str) -> None:
    assert kind_of(spec) == kind


def test_the_journal_is_the_plain_jsonl_out() -> None:
    assert journal_of(["a.parquet", "b.jsonl", "c.jsonl.gz"]) == "b.jsonl"
    assert journal_of(["a.parquet"]) is None
    assert Settings(out=["a.parquet"], job_dir="J").output_path() == Path("J/pages.jsonl")
    assert Settings(out=["a.parquet"]).output_path() is None  # the temporary job dir's
    assert Settings().output_path() == Path("pages.jsonl")
    assert Settings(out="x.jsonl").out == ["x.jsonl"]  # one, as the Python API once took it


@pytest.mark.parametrize(
    ("specs", "upload", "said"),
    [
        (["s3://b/k.parquet"], None, "not a sink"),
        (["a.jsonl", "b.jsonl"], None, "one plain .jsonl"),
        (["a.parquet", "a.parquet"], None, "the same sink is given twice"),
        ([], "s3://", "not s3://BUCKET/PREFIX"),
        ([], "https://bucket/x", "not s3://BUCKET/PREFIX"),
        (["postgresql://u:secret@h/db?table=a;drop"], None, "not a table name"),
    ],
)
def test_outputs_that_cannot_be_used_are_one_line(
    specs: list[str], upload: str | None, said: str
) -> None:
    with pytest.raises(ValueError, match=said) as caught:
        check_outputs(specs, upload)
    assert "\n" not in str(caught.value) and "secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("specs", "upload", "extra", "module"),
    [
        (["p.parquet"], None, "parquet", "pyarrow"),
        (["postgresql://u@h/db"], None, "postgres", "psycopg"),
        (["p.jsonl.zst"], None, "zstd", "zstandard"),
        ([], "s3://bucket/prefix", "s3", "boto3"),
    ],
)
def test_a_sink_whose_extra_is_missing_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, specs: list[str], upload: str | None, extra: str, module: str
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a)
    )
    with pytest.raises(ValueError) as caught:
        check_outputs(specs, upload)
    assert f"pip install 'mpcrawler[{extra}]'" in str(caught.value)
    assert f"needs {module}" in str(caught.value)
    with pytest.raises(ValueError, match=extra):
        Settings(out=specs, upload=upload, job_dir="J").validate()


def test_an_upload_needs_a_job_dir() -> None:
    with pytest.raises(ValueError, match="--upload needs --job-dir"):
        Settings(upload="s3://b/p").validate()


def test_the_settings_never_keep_a_sinks_password() -> None:
    s = Settings(out=["postgresql://crawler:hunter2@db.example/crawls?table=pages"])
    assert s.to_dict()["out"] == ["postgresql://crawler:***@db.example/crawls?table=pages"]
    assert "hunter2" in s.to_dict(secrets=True)["out"][0]  # (for the master only)


def test_split_url_takes_the_table_out_of_libpqs_parameters() -> None:
    url, table = split_url("postgresql://u@h/db?sslmode=disable&table=crawl.pages")
    assert url == "postgresql://u@h/db?sslmode=disable" and table == ["crawl", "pages"]
    assert split_url("postgresql://u@h/db")[1] == ["pages"]


def test_a_record_has_one_shape_whatever_its_fields() -> None:
    """Typed columns in one order; what a column cannot hold (a bool for an
    int, a huge int, a NUL in text, a plug-in's list) and every other field
    go to extra, so that no record is refused for its shape."""
    plain: dict[str, Any] = {"url": "http://a/", "status": 200, "fetched_at": 1.5}
    values, extra = split(plain)
    assert len(values) == len(COLUMNS) and extra is None
    assert values[list(COLUMNS).index("status")] == 200
    odd = {"url": "http://a/", "status": True, "bytes": 2**70, "title": "a\x00b", "tags": [1]}
    values, extra = split(odd)
    assert values[list(COLUMNS).index("status")] is None
    assert json.loads(extra or "{}") == {
        "status": True,
        "bytes": 2**70,
        "title": "a\x00b",
        "tags": [1],
    }


def test_a_record_written_before_the_kill_is_not_written_again() -> None:
    first = Request(1, "http://a/p", "http://a")
    assert recorded_before(first, {"http://a/p"})
    assert not recorded_before(first, {"http://a/q"})
    first.known = object()  # type: ignore[assignment]  # a revisit: a new record
    assert not recorded_before(first, {"http://a/p"})


def journal_with(path: Path, n: int) -> JsonLinesPipeline:
    journal = JsonLinesPipeline(path)
    journal.open()
    for k in range(n):
        journal.process({"url": f"http://a/{k}", "n": k})
    return journal


def test_a_compressed_sink_catches_up_and_cuts_off_what_is_past_its_cursor(
    tmp_path: Path,
) -> None:
    journal = journal_with(tmp_path / "pages.jsonl", 5)
    sink = CompressedJsonLines(str(tmp_path / "out.jsonl.gz"), tmp_path / "job")
    sink.bind(journal)
    sink.open()  # the five records so far
    for k in range(5, 8):
        sink.process(journal.process({"url": f"http://a/{k}", "n": k}) or {})
    sink.flush()
    size = (tmp_path / "out.jsonl.gz").stat().st_size
    sink.process(journal.process({"url": "http://a/8", "n": 8}) or {})
    sink.deliver()  # delivered, the cursor not moved: as a kill would leave it
    assert (tmp_path / "out.jsonl.gz").stat().st_size > size
    journal.close()
    again = CompressedJsonLines(str(tmp_path / "out.jsonl.gz"), tmp_path / "job")
    journal = JsonLinesPipeline(tmp_path / "pages.jsonl")
    journal.open()
    again.bind(journal)
    again.open()
    again.close()
    lines = gzip.decompress((tmp_path / "out.jsonl.gz").read_bytes()).splitlines()
    assert [json.loads(line)["n"] for line in lines] == list(range(9))


def test_a_cursor_past_the_journal_is_refused_with_what_to_do(tmp_path: Path) -> None:
    journal = journal_with(tmp_path / "pages.jsonl", 3)
    sink = CompressedJsonLines(str(tmp_path / "out.jsonl.gz"), tmp_path / "job")
    sink.bind(journal)
    sink.open()
    sink.close()
    journal.close()
    (tmp_path / "pages.jsonl").write_text("")  # replaced by an empty one
    journal = JsonLinesPipeline(tmp_path / "pages.jsonl")
    journal.open()
    sink = CompressedJsonLines(str(tmp_path / "out.jsonl.gz"), tmp_path / "job")
    sink.bind(journal)
    with pytest.raises(SinkError, match=r"cut or replaced; remove .*sinks"):
        sink.open()
