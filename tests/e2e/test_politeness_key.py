"""The politeness unit (issue 25): one delay for a host's http and https, and
for the names of one address with --politeness-key ip, checked from the
servers' request logs."""

from __future__ import annotations

import itertools
import ssl
from pathlib import Path

import trustme
from hostile import links, serve
from support import assert_paced, crawl_records

DELAY = 0.5


def gaps(starts: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(sorted(starts))]


def seeds_file(tmp_path: Path, *seeds: str) -> str:
    path = tmp_path / "seeds.txt"
    path.write_text("".join(f"{seed}\n" for seed in seeds), encoding="utf-8")
    return str(path)


def test_http_and_https_of_one_host_share_a_delay(tmp_path: Path) -> None:
    ca = trustme.CA()
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    pages = [f"/p{i}" for i in range(3)]
    with (
        serve({"/": lambda h, n: links(*pages)}, default=lambda h, n: links(), tls=context) as tls,
        serve({"/": lambda h, n: links(*pages)}, default=lambda h, n: links()) as plain,
    ):
        crawl_records(
            tls.url + "/",
            tmp_path / "job",
            "--seeds-file",
            seeds_file(tmp_path, plain.url + "/"),
            "--ca-bundle",
            str(bundle),
            "--delay",
            str(DELAY),
            "--no-robots",
        )
        starts = [h.start for h in tls.log.hits + plain.log.hits]
    assert len(starts) == 8
    # The TLS server logs a request once its handshake is over, later than
    # the crawler started it when the connection is new, and a loaded machine
    # (the whole suite on 2 cores) makes a handshake slower still: a gap one
    # handshake short of the delay (0.31 s seen) is not a shared delay broken.
    # Two delays not shared would start both hosts' requests at once (gaps near 0).
    assert min(gaps(starts)) >= DELAY - 0.25, gaps(starts)


def test_two_names_of_one_address_share_a_delay_by_ip(tmp_path: Path) -> None:
    pages = [f"/p{i}" for i in range(3)]
    with serve({"/": lambda h, n: links(*pages)}, default=lambda h, n: links()) as server:
        port = server.server_address[1]
        crawl_records(
            f"http://localhost:{port}/",
            tmp_path / "job",
            "--seeds-file",
            seeds_file(tmp_path, f"http://127.0.0.1:{port}/"),
            "--politeness-key",
            "ip",
            "--allow-private-networks",
            "--delay",
            str(DELAY),
            "--no-robots",
        )
        hits = server.log.hits
    names = {h.headers["host"].split(":")[0] for h in hits}
    assert names == {"localhost", "127.0.0.1"} and len(hits) == 8
    assert_paced([h.start for h in hits], DELAY)
