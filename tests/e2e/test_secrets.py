"""No secret reaches an output: a seed's user:password@ is taken out of the
URL at the door, sent as its host's Authorization header (and to no other
host), kept in the WARC request record as sent, and written nowhere else."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

from hostile import Handler, Reply, html, links, serve
from support import crawl_args, read_records, run_cli

SECRET = "PASSW0RD-x"


def test_seed_credentials_become_the_hosts_authorization_and_nothing_else(
    tmp_path: Path,
) -> None:
    expected = "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()

    def guarded(handler: Handler, n: int) -> Reply:
        if handler.headers.get("Authorization") != expected:
            return html("who are you?", status=401)
        return links("/a", "/b", f"{other.url}/elsewhere", title="inside")

    with (
        serve({}, host="127.0.0.3", default=lambda h, n: links()) as other,
        serve({}, default=guarded) as site,
    ):
        seed = site.url.replace("http://", f"http://alice:{SECRET}@") + "/"
        job, log = tmp_path / "job", tmp_path / "crawl.log"
        args = crawl_args(seed, job, "--allow-domain", "127.0.0.3", "--record-links")
        done = run_cli(
            *args,
            "--warc",
            str(tmp_path / "warc"),
            "--log-file",
            str(log),
            "--allow-private-networks",
        )
        assert done.returncode == 0, done.stderr
        site_hits, other_hits = list(site.log.hits), list(other.log.hits)
    records = read_records(job / "pages.jsonl")
    assert {r["status"] for r in records} == {200}, records  # every page let in
    assert len(records) == 4
    assert site_hits and all(h.authorization == expected for h in site_hits)
    assert other_hits and not any(h.authorization for h in other_hits)  # no other host
    report = run_cli("report", str(job))
    status = run_cli("status", str(job))
    texts = [done.stdout, done.stderr, status.stdout, report.stdout, log.read_text()]
    texts += [p.read_bytes().decode("latin-1") for p in job.rglob("*") if p.is_file()]
    leaks = [t[:300] for t in texts if SECRET in t]
    assert not leaks, leaks
    warc = b"".join(p.read_bytes() for p in (tmp_path / "warc").rglob("*.warc.gz"))
    assert warc  # the request records keep the header as sent: that is what WARC is for
    unpacked = b""
    while warc:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        unpacked += d.decompress(warc)
        warc = d.unused_data
    assert f"Authorization: {expected}".encode() in unpacked


def test_http_user_with_a_password_file(tmp_path: Path) -> None:
    expected = "Basic " + base64.b64encode(f"bob:{SECRET}".encode()).decode()
    seen: list[str] = []

    def guarded(handler: Handler, n: int) -> Reply:
        seen.append(handler.headers.get("Authorization", ""))
        return links("/a") if seen[-1] == expected else html("no", status=401)

    secret_file = tmp_path / "password"
    secret_file.write_text(SECRET + "\n")
    with serve({}, default=guarded) as site:
        job = tmp_path / "job"
        args = crawl_args(site.url + "/", job, "--http-user", "bob")
        done = run_cli(*args, "--http-password-file", str(secret_file))
    assert done.returncode == 0, done.stderr
    assert seen and set(seen) == {expected}
    assert {r["status"] for r in read_records(job / "pages.jsonl")} == {200}
    assert SECRET not in (job / "job.json").read_text()
