"""The --out sinks and --upload against real stores: a Parquet dataset read
by pyarrow and DuckDB, this machine's PostgreSQL, moto's S3 server on
loopback.  A crawl killed between any two of its steps (the fault points
of ``mpcrawler.testing.faults``), then run again with the same command,
leaves every page in every sink exactly once; a sink that refuses stops
the crawl with one line and exit 1, and the rerun delivers the rest."""

from __future__ import annotations

import gzip
import io
import json
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stores import pg_database, s3_server
from support import DOWNLOADER, read_records, run_cli, small_disk, start_cli

from mpcrawler.testing.site import SiteServer, TestSite, serve_site

pytest.importorskip("pyarrow")
import duckdb
import psycopg
import pyarrow.dataset as pads
import zstandard

PAGES = 300


@pytest.fixture
def site() -> Iterator[SiteServer]:
    with serve_site(TestSite(pages=PAGES, size=2_000), latency=0.01) as server:
        yield server


@pytest.fixture
def db() -> Iterator[str]:
    with pg_database() as url:
        yield url


def crawl_args(url: str, job: Path, *extra: str) -> list[str]:
    return [
        *("crawl", url, "--job-dir", str(job), "--workers", "2", "--threads", "2", "--quiet"),
        *DOWNLOADER,
        *extra,
    ]


def file_sinks(out: Path) -> list[str]:
    return [str(out / "pages.parquet"), str(out / "p.jsonl.gz"), str(out / "p.jsonl.zst")]


def pg_urls(db: str, table: str = "pages") -> Counter[str]:
    with psycopg.connect(db) as conn:
        return Counter(url for (url,) in conn.execute(f"SELECT url FROM {table}"))


def sink_urls(out: Path) -> dict[str, Counter[str]]:
    """The URLs each file sink holds, by sink, each as often as it holds it."""
    dataset = pads.dataset(out / "pages.parquet", format="parquet")
    zst = zstandard.ZstdDecompressor().stream_reader(open(out / "p.jsonl.zst", "rb"))  # noqa: SIM115
    with zst:
        zst_lines = io.TextIOWrapper(zst, encoding="utf-8").read().splitlines()
    return {
        "parquet": Counter(dataset.to_table(columns=["url"]).column("url").to_pylist()),
        "gz": Counter(json.loads(line)["url"] for line in gzip.open(out / "p.jsonl.gz")),
        "zst": Counter(json.loads(line)["url"] for line in zst_lines),
    }


def assert_each_once(counts: Counter[str], server: SiteServer, where: str) -> None:
    expected = {server.url.rstrip("/") + p for p in server.site.paths()}
    twice = {u: n for u, n in counts.items() if n > 1}
    assert not twice, (where, list(twice.items())[:5])
    assert set(counts) == expected, (where, len(counts), len(expected))


# Where the first run dies: a record in the journal and not acked (early, and
# once Parquet parts have closed); a batch each kind of sink made durable
# with its cursor not saved (a Parquet part renamed into place, rows
# committed, a gzip member written); a cursor saved; a checkpoint with the
# pipelines flushed and the frontier not.
KILL_POINTS = [
    "record-written:45",
    "record-written:170",
    "parquet-delivered:2",
    "postgresql-delivered:1",
    "jsonl-compressed-delivered:1",
    "postgresql-advanced:1",
    "checkpoint:1",
]


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_kill_at_any_point_leaves_every_page_in_every_sink_once(
    site: SiteServer, db: str, tmp_path: Path, point: str
) -> None:
    job, out = tmp_path / "job", tmp_path / "out"
    args = crawl_args(
        site.url, job, *(f"--out={spec}" for spec in [*file_sinks(out), f"{db}?table=pages"])
    )
    proc = start_cli(*args, "--sink-batch", "40", env={"MPCRAWLER_FAULT": point})
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, err)
    if (job / "job.json").exists():  # (none yet when the first checkpoint is cut short)
        assert json.loads((job / "job.json").read_text())["job"]["state"] == "running"
    # Parts of another size now: a part the kill left past the cursor is
    # not overwritten by one of the same name, and must be gone.
    again = run_cli(*args, "--sink-batch", "50")
    assert again.returncode == 0, again.stderr
    journal = Counter(r["url"] for r in read_records(job / "pages.jsonl"))
    assert_each_once(journal, site, "journal")
    for name, counts in sink_urls(out).items():
        assert_each_once(counts, site, name)
    assert_each_once(pg_urls(db), site, "postgresql")
    stats = json.loads((job / "stats.json").read_text())
    assert stats["pages"] == PAGES and stats["state"] == "finished"


def test_the_sinks_hold_the_records_as_the_journal_does(
    site: SiteServer, db: str, tmp_path: Path
) -> None:
    """One schema in every part, read as one table without options by
    pyarrow and DuckDB; PostgreSQL's rows keyed by job and journal offset;
    the compressed files line for line the journal."""
    job, out = tmp_path / "job", tmp_path / "out"
    specs = [*file_sinks(out), f"{db}?table=crawl.pages"]
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA crawl")
    done = run_cli(
        *crawl_args(site.url, job, "--record-links", *(f"--out={s}" for s in specs)),
        "--sink-batch",
        "100",
    )
    assert done.returncode == 0, done.stderr
    journal = (job / "pages.jsonl").read_bytes()
    assert gzip.decompress((out / "p.jsonl.gz").read_bytes()) == journal
    assert _zst_all(out / "p.jsonl.zst") == journal
    parts = sorted((out / "pages.parquet").iterdir())
    assert [p.name for p in parts][:2] == ["part-0000000000000000.parquet", parts[1].name]
    assert len(parts) == 3 and not any(p.name.endswith(".tmp") for p in parts)
    records = read_records(job / "pages.jsonl")
    table = pads.dataset(out / "pages.parquet").to_table().to_pylist()
    by_url = {row["url"]: row for row in table}
    for record in records[:50]:
        row = by_url[record["url"]]
        assert row["status"] == record["status"] and row["title"] == record["title"]
        assert row["fetched_at"].timestamp() == pytest.approx(record["fetched_at"], abs=0.001)
        assert json.loads(row["extra"])["outlinks"] == record["outlinks"]
    rows = duckdb.sql(
        f"SELECT count(*), count(DISTINCT url), max(depth) FROM '{out}/pages.parquet/*.parquet'"
    ).fetchall()[0]
    assert rows == (PAGES, PAGES, max(r["depth"] for r in records))
    with psycopg.connect(db) as conn:
        got = conn.execute(
            "SELECT journal_offset, url, status, extra->'outlinks' FROM crawl.pages "
            "ORDER BY journal_offset"
        ).fetchall()
    offsets = [0]
    for line in journal.splitlines(keepends=True)[:-1]:
        offsets.append(offsets[-1] + len(line))
    assert [row[0] for row in got] == offsets
    assert [(row[1], row[2], row[3]) for row in got] == [
        (r["url"], r["status"], r["outlinks"]) for r in records
    ]


def _zst_all(path: Path) -> bytes:
    with zstandard.ZstdDecompressor().stream_reader(open(path, "rb")) as reader:
        return reader.read()


def test_a_refusing_database_stops_the_crawl_and_the_rerun_delivers(
    site: SiteServer, db: str, tmp_path: Path
) -> None:
    """The table refuses rows (a trigger raises) from the first batch on:
    exit 1 with one line that names the sink and not its password, the job
    resumable; once it takes them, the same command delivers every record
    once."""
    from mpcrawler.output.sinks.postgres import PostgresSink

    job = tmp_path / "job"
    PostgresSink(f"{db}?table=pages", tmp_path / "elsewhere", "none", 1).restore({})  # the table
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$BEGIN RAISE EXCEPTION 'the archive is read-only today'; END$$"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON pages FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
    secret = db.replace("postgres@", "postgres:s3cret@")
    args = crawl_args(site.url, job, f"--out={secret}?table=pages", "--sink-batch", "50")
    refused = run_cli(*args)
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "read-only today" in lines[0], refused.stderr
    assert "s3cret" not in refused.stderr and "postgres:***@" in lines[0]
    assert json.loads((job / "job.json").read_text())["job"]["state"] == "failed"
    assert pg_urls(db) == Counter()
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("DROP TRIGGER refuse ON pages")
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr
    assert_each_once(pg_urls(db), site, "postgresql")
    assert "s3cret" not in (job / "job.json").read_text()


def test_a_sink_given_to_a_finished_job_gets_every_record(
    site: SiteServer, db: str, tmp_path: Path
) -> None:
    job, out = tmp_path / "job", tmp_path / "out"
    done = run_cli(*crawl_args(site.url, job))
    assert done.returncode == 0, done.stderr
    hits = sum(site.hits.values())
    later = run_cli(
        *crawl_args(site.url, job, f"--out={out / 'later.parquet'}", f"--out={db}?table=later")
    )
    assert later.returncode == 0, later.stderr
    assert "already finished" in later.stderr + later.stdout
    assert sum(site.hits.values()) == hits  # nothing fetched
    dataset = pads.dataset(out / "later.parquet")
    assert_each_once(Counter(dataset.to_table().column("url").to_pylist()), site, "parquet")
    assert_each_once(pg_urls(db, "later"), site, "postgresql")


def test_upload_sends_every_file_then_the_manifest(site: SiteServer, tmp_path: Path) -> None:
    """Parts as each closes, then the journal, WARCs, WACZ and stats, and a
    manifest last whose sizes and SHA-256s are the objects'; an unknown
    bucket is one line and exit 1, and once it exists the same command
    uploads what the finished job lacks."""
    import hashlib

    import boto3

    job, out, warcs = tmp_path / "job", tmp_path / "out", tmp_path / "warcs"
    with s3_server() as endpoint:
        s3 = boto3.client("s3", endpoint_url=endpoint)
        args = crawl_args(
            site.url,
            job,
            f"--out={out / 'pages.parquet'}",
            "--sink-batch",
            "100",
            "--warc",
            str(warcs),
            "--wacz",
            str(out / "site.wacz"),
            "--upload",
            "s3://crawls/nightly/2026-12-06",
            "--s3-endpoint-url",
            endpoint,
        )
        refused = run_cli(*args)  # no bucket yet: the first part cannot go up
        assert refused.returncode == 1
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "--upload s3://crawls/nightly/2026-12-06" in lines[0], lines
        assert "NoSuchBucket" in lines[0] or "does not exist" in lines[0], lines
        s3.create_bucket(Bucket="crawls")
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
        listed = s3.list_objects_v2(Bucket="crawls", Prefix="nightly/2026-12-06/")
        keys = {o["Key"].removeprefix("nightly/2026-12-06/"): o for o in listed["Contents"]}
        parts = {f"pages.parquet/{p.name}" for p in (out / "pages.parquet").iterdir()}
        assert len(parts) == 3 and parts <= set(keys)
        assert {"pages.jsonl", "stats.json", "site.wacz", "manifest.json"} <= set(keys)
        assert any(k.startswith("warc/") and k.endswith(".warc.gz") for k in keys)
        body = s3.get_object(Bucket="crawls", Key="nightly/2026-12-06/manifest.json")["Body"]
        manifest: dict[str, Any] = json.loads(body.read())
        assert manifest["pages"] == PAGES
        named = {f["key"]: f for f in manifest["files"]}
        assert set(named) == {f"nightly/2026-12-06/{k}" for k in keys if k != "manifest.json"}
        for key, entry in named.items():
            data = s3.get_object(Bucket="crawls", Key=key)["Body"].read()
            assert (
                len(data) == entry["size"] and hashlib.sha256(data).hexdigest() == entry["sha256"]
            ), key
        local = (job / "pages.jsonl").read_bytes()
        assert (
            s3.get_object(Bucket="crawls", Key="nightly/2026-12-06/pages.jsonl")["Body"].read()
            == local
        )


def test_usage_errors_of_the_outputs_say_so_in_one_line(tmp_path: Path) -> None:
    for args, said in [
        (["--out", "mysql://root@127.0.0.1/db"], "not a sink"),
        (["--out", str(tmp_path / "a.jsonl"), "--out", str(tmp_path / "b.jsonl")], "one plain"),
        (["--upload", "gs://bucket/x"], "not s3://BUCKET/PREFIX"),
        (["--out", "postgresql://u@h/db?table=bad-name"], "not a table name"),
    ]:
        done = run_cli("crawl", "http://127.0.0.1:9/", "--job-dir", str(tmp_path / "j"), *args)
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0], (args, lines)
        assert not (tmp_path / "j").exists()


def test_a_sink_whose_cursor_is_removed_is_written_again_whole(
    site: SiteServer, tmp_path: Path
) -> None:
    """What the errors advise for a damaged cursor: remove it, and the sink
    is written again from the journal, its old parts replaced, not kept
    beside the new ones (here of another size)."""
    job, out = tmp_path / "job", tmp_path / "out"
    args = crawl_args(site.url, job, f"--out={out / 'pages.parquet'}")
    done = run_cli(*args, "--sink-batch", "40")
    assert done.returncode == 0, done.stderr
    assert len(list((out / "pages.parquet").iterdir())) == 8
    (cursor,) = (job / "sinks").iterdir()
    cursor.write_text("{not json")
    damaged = run_cli(*args)
    assert damaged.returncode == 1
    lines = damaged.stderr.strip().splitlines()
    assert len(lines) == 1 and "remove it" in lines[0] and str(cursor) in lines[0], lines
    cursor.unlink()
    again = run_cli(*args, "--sink-batch", "70")
    assert again.returncode == 0, again.stderr
    assert len(list((out / "pages.parquet").iterdir())) == 5
    dataset = pads.dataset(out / "pages.parquet")
    assert_each_once(Counter(dataset.to_table().column("url").to_pylist()), site, "parquet")


def test_a_full_disk_under_a_dataset_stops_the_crawl_and_the_rerun_delivers(
    site: SiteServer, tmp_path: Path
) -> None:
    job = tmp_path / "job"
    with small_disk(tmp_path / "small", "64k") as small:
        args = crawl_args(site.url, job, f"--out={small / 'pages.parquet'}", "--sink-batch", "50")
        full = run_cli(*args)
        assert full.returncode == 1
        lines = full.stderr.strip().splitlines()
        assert len(lines) == 1 and "No space left" in lines[0], full.stderr
        assert f"--out {small / 'pages.parquet'}" in lines[0]
        subprocess.run(["mount", "-o", "remount,size=16m", str(small)], check=True)
        again = run_cli(*args)
        assert again.returncode == 0, again.stderr
        dataset = pads.dataset(small / "pages.parquet")
        assert_each_once(Counter(dataset.to_table().column("url").to_pylist()), site, "parquet")
        assert not list((small / "pages.parquet").glob("*.tmp"))


def test_a_database_that_cannot_be_reached_stops_the_crawl_before_it_starts(
    site: SiteServer, tmp_path: Path
) -> None:
    from mpcrawler.testing.redis import free_port

    job = tmp_path / "job"
    url = f"postgresql://postgres:pw@127.0.0.1:{free_port()}/db?connect_timeout=2"
    done = run_cli(*crawl_args(site.url, job, f"--out={url}"))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--out postgresql://postgres:***@127.0.0.1" in lines[0], lines
    assert "pw@" not in done.stderr
    assert sum(site.hits.values()) == 0  # nothing crawled
