"""HTTPS against real loopback servers whose certificates come from a local CA
made by the test (trustme): verified by default, a failure is final and says
why, --ca-bundle adds trust, --insecure turns verification off."""

from __future__ import annotations

import contextlib
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from hostile import Server, links, serve
from support import crawl_records, run_cli

ROUTES = {
    "/robots.txt": lambda h, n: (200, {"Content-Type": "text/plain"}, b"User-agent: *\n"),
    "/": lambda h, n: links("/a", "/b"),
}


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


def https(context: ssl.SSLContext) -> contextlib.AbstractContextManager[Server]:
    return serve(ROUTES, default=lambda h, n: links(), tls=context)


def server_context(ca: trustme.CA, via_intermediate: bool = False) -> ssl.SSLContext:
    """A server context whose certificate for 127.0.0.1 chains up to ``ca``."""
    issuer = ca.create_child_ca() if via_intermediate else ca
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    issuer.issue_cert("127.0.0.1").configure_cert(context)  # leaf + chain
    return context


@pytest.fixture
def self_signed() -> Iterator[Server]:
    """A host whose certificate no one trusts (its CA is nowhere)."""
    with https(server_context(trustme.CA())) as server:
        yield server


def test_a_valid_chain_is_crawled_with_its_ca_added(ca: trustme.CA, tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    with https(server_context(ca, via_intermediate=True)) as server:
        records = crawl_records(server.url + "/", tmp_path / "job", "--ca-bundle", str(bundle))
        counts = server.log.counts()
    assert {r["url"].rsplit("/", 1)[1]: r["status"] for r in records} == {
        "": 200,
        "a": 200,
        "b": 200,
    }
    assert all(r["error"] is None for r in records)
    assert counts["/robots.txt"] == 1 and counts["/a"] == 1


def test_an_untrusted_certificate_fails_at_once_and_says_why(
    self_signed: Server, tmp_path: Path
) -> None:
    started = time.monotonic()
    [record] = crawl_records(self_signed.url + "/", tmp_path / "job", code=4)  # no answer
    took = time.monotonic() - started
    assert record["error_kind"] == "tls"
    assert record["error"].startswith("robots.txt unavailable: tls: certificate verify failed")
    assert "self-signed" in record["error"] or "unable to get local issuer" in record["error"]
    assert took < 30, took  # not the 90 s of robots.txt retries it once was
    assert self_signed.log.counts()["/"] == 0  # the handshake failed: no request was read


def test_without_robots_the_page_fails_once_as_tls(self_signed: Server, tmp_path: Path) -> None:
    [record] = crawl_records(self_signed.url + "/", tmp_path / "job", "--no-robots", code=4)
    assert record["error_kind"] == "tls" and record["attempts"] == 1
    assert record["error"].startswith("tls: certificate verify failed")


def test_insecure_skips_verification_and_says_so(self_signed: Server, tmp_path: Path) -> None:
    proc = run_cli("crawl", self_signed.url + "/", "--job-dir", str(tmp_path / "job"), "--insecure")
    assert proc.returncode == 0, proc.stderr
    assert "not verified (--insecure)" in proc.stderr
    assert "certificates NOT verified (--insecure)" in proc.stdout
    assert "InsecureRequestWarning" not in proc.stderr
    counts = self_signed.log.counts()
    assert counts["/"] == 1 and counts["/a"] == 1 and counts["/b"] == 1


def test_a_missing_ca_bundle_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli("crawl", "https://127.0.0.1:1/", "--ca-bundle", str(tmp_path / "nope.pem"))
    assert proc.returncode == 2 and "--ca-bundle" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
