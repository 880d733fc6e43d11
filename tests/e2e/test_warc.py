"""--warc: WARC/1.1 files read back with warcio's own reader and `warcio check`,
bodies byte for byte as served, offsets that point at their record, and a
SIGKILL that leaves every file readable once the job resumes."""

from __future__ import annotations

import collections
import gzip
import http.client
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hostile import html, links, serve
from support import (
    Lines,
    crawl_args,
    crawl_records,
    read_records,
    run_cli,
    start_cli,
    wait_group_gone,
)
from warcio.archiveiterator import ArchiveIterator

from mpcrawler.archive.warc import _readable_length
from mpcrawler.testing.site import SiteServer, TestSite


def warc_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.warc.gz"))


def warcio_check(path: Path) -> subprocess.CompletedProcess[str]:
    """``warcio check -v FILE``: every record parses and its digests match."""
    return subprocess.run(
        [sys.executable, "-c", "from warcio.cli import main; main()", "check", "-v", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def records_of(path: Path) -> list[dict[str, Any]]:
    out = []
    with open(path, "rb") as f:
        records = ArchiveIterator(f)
        for record in records:
            out.append(
                {
                    "type": record.rec_type,
                    "uri": record.rec_headers.get_header("WARC-Target-URI"),
                    "headers": record.rec_headers,
                    "http": record.http_headers,
                    "payload": record.raw_stream.read(),  # as sent: no coding undone
                    "offset": records.get_record_offset(),
                }
            )
    return out


def raw_get(url: str) -> bytes:
    """The body exactly as the server sends it, with the crawler's Accept-Encoding."""
    host = url.split("/")[2]
    conn = http.client.HTTPConnection(host, timeout=10)
    conn.request("GET", "/" + url.split("/", 3)[3], headers={"Accept-Encoding": "gzip, deflate"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return body


def test_a_crawl_archived_and_read_back(make_site: Any, tmp_path: Path) -> None:
    server: SiteServer = make_site(TestSite(pages=40, size=3_000))
    job = tmp_path / "job"
    records = crawl_records(server.url, job, "--warc", str(job / "warc"))
    files = warc_files(job / "warc")
    assert 1 <= len(files) <= 2  # one per worker that fetched something
    for path in files:
        check = warcio_check(path)
        assert check.returncode == 0 and "digest pass" in check.stdout, check.stdout + check.stderr
    archived = [r for path in files for r in records_of(path)]
    counts = collections.Counter(r["type"] for r in archived)
    assert counts == {
        "warcinfo": len(files),
        "response": 41,  # 40 pages and robots.txt
        "request": 41,
        "metadata": 40,
    }, counts
    responses = [r for r in archived if r["type"] == "response"]
    for response in responses:
        assert response["payload"] == raw_get(response["uri"]), response["uri"]
        assert response["headers"].get_header("WARC-Payload-Digest").startswith("sha1:")
    [request] = [r for r in archived if r["type"] == "request" and r["uri"].endswith("/page/3")]
    http = request["http"]
    assert (http.protocol, http.statusline) == ("GET", "/page/3 HTTP/1.1")  # warcio's split
    assert http.get_header("Host") == server.url.split("/")[2]
    [metadata] = [r for r in archived if r["type"] == "metadata" and r["uri"] == server.url]
    outlinks = metadata["payload"].decode().splitlines()
    assert outlinks and all(line.startswith("outlink: http://") for line in outlinks)
    # Each page's record points at its response record.
    assert len(records) == 40
    for record in records:
        with open(job / "warc" / record["warc_file"], "rb") as f:
            f.seek(record["warc_offset"])
            found = next(iter(ArchiveIterator(f)))
            assert found.rec_type == "response"
            assert found.rec_headers.get_header("WARC-Target-URI") == record["final_url"]


def test_a_compressed_body_is_archived_as_sent(tmp_path: Path) -> None:
    page = links("/a", "/b")[2]
    assert isinstance(page, bytes)
    packed = gzip.compress(page)
    routes = {
        "/": lambda h, n: (200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, packed),
    }
    with serve(routes, default=lambda h, n: html("<title>leaf</title>")) as server:
        job = tmp_path / "job"
        records = crawl_records(server.url + "/", job, "--warc", str(job / "warc"))
    [root] = [r for r in records if r["url"] == server.url + "/"]
    assert root["links"] == 2 and root["new_links"] == 2  # decoded to be parsed
    [response] = [
        r
        for path in warc_files(job / "warc")
        for r in records_of(path)
        if r["type"] == "response" and r["uri"] == server.url + "/"
    ]
    assert response["payload"] == packed  # still gzip, as the server sent it
    assert response["http"].get_header("Content-Encoding") == "gzip"


def test_a_body_over_max_bytes_is_archived_truncated(tmp_path: Path) -> None:
    big = b"<html><title>big</title>" + b"x" * 100_000 + b"</html>"
    routes = {"/": lambda h, n: (200, {"Content-Type": "text/html"}, big)}
    with serve(routes) as server:
        job = tmp_path / "job"
        records = crawl_records(
            server.url + "/", job, "--warc", str(job / "warc"), "--max-bytes", "20000"
        )
    [record] = records
    assert record["error_kind"] == "too_large" or "larger than" in record["error"]
    [response] = [
        r
        for path in warc_files(job / "warc")
        for r in records_of(path)
        if r["type"] == "response" and r["uri"] == server.url + "/"
    ]
    assert response["headers"].get_header("WARC-Truncated") == "length"
    assert big.startswith(response["payload"]) and 20_000 <= len(response["payload"]) < len(big)
    assert record["warc_offset"] == response["offset"]


def test_files_rotate_at_the_size_given(make_site: Any, tmp_path: Path) -> None:
    server: SiteServer = make_site(TestSite(pages=30, size=3_000))
    job = tmp_path / "job"
    crawl_records(server.url, job, "--warc", str(job / "warc"), "--warc-size", "8K")
    files = warc_files(job / "warc")
    assert len(files) >= 4
    responses = 0
    for path in files:
        archived = records_of(path)
        assert archived[0]["type"] == "warcinfo"
        responses += sum(r["type"] == "response" for r in archived)
        assert warcio_check(path).returncode == 0
    assert responses == 31


def test_sigkill_then_resume_leaves_every_file_readable(make_site: Any, tmp_path: Path) -> None:
    server: SiteServer = make_site(TestSite(pages=200, size=2_000), latency=0.05)
    job = tmp_path / "job"
    args = crawl_args(server.url, job, "--warc", str(job / "warc"))
    proc = start_cli(*args)
    lines = Lines(proc)
    out = job / "pages.jsonl"
    deadline = time.monotonic() + 60
    # The quiet crawl prints nothing to wake Lines.wait_for: watch the records
    # themselves, or the crawl may end before the kill (then nothing is repaired).
    while not (out.exists() and _lines(out) >= 60):
        assert time.monotonic() < deadline and proc.poll() is None, lines.err
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    lines.finish(timeout=30)
    assert proc.returncode == -signal.SIGKILL  # killed mid-crawl, not finished
    wait_group_gone(proc.pid)  # no worker's last write lands after the file is read
    # A kill rarely tears a record; make sure one file ends in a torn one
    # (after the whole records: the kill may have torn this one already).
    victim = warc_files(job / "warc")[0]
    whole = victim.read_bytes()[: _readable_length(victim)]
    victim.write_bytes(whole + whole[-300:-100])
    again = run_cli(*args, timeout=120)
    assert again.returncode == 0, again.stderr
    assert victim.read_bytes() == whole  # the torn tail was cut off, nothing more
    for path in warc_files(job / "warc"):
        check = warcio_check(path)
        assert check.returncode == 0, (path.name, check.stdout, check.stderr)
    records = read_records(job / "pages.jsonl")
    base = server.url.rstrip("/")
    assert {r["url"] for r in records} == {base + p for p in server.site.paths()}
    for record in records:
        with open(job / "warc" / record["warc_file"], "rb") as f:
            f.seek(record["warc_offset"])
            found = next(iter(ArchiveIterator(f)))
            assert found.rec_headers.get_header("WARC-Target-URI") == record["final_url"]


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")
