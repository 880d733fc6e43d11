"""Private networks are off limits: the address classifier and the guard
(unit tests that open no connection), then the rule end to end on loopback
hosts that are not seeds."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import links, redirect, serve
from support import crawl_records

from mpcrawler.web.addresses import AddressGuard, blocked_network


@pytest.mark.parametrize(
    "address, network",
    [
        ("127.0.0.1", "127.0.0.0/8"),
        ("127.255.0.9", "127.0.0.0/8"),
        ("10.1.2.3", "10.0.0.0/8"),
        ("172.16.0.1", "172.16.0.0/12"),
        ("172.31.255.255", "172.16.0.0/12"),
        ("192.168.1.1", "192.168.0.0/16"),
        ("100.64.0.1", "100.64.0.0/10"),
        ("169.254.169.254", "169.254.0.0/16"),  # cloud metadata
        ("0.0.0.0", "0.0.0.0/8"),
        ("224.0.0.1", "224.0.0.0/4"),
        ("255.255.255.255", "240.0.0.0/4"),
        ("::1", "::1/128"),
        ("::", "::/128"),
        ("fd12:3456::1", "fc00::/7"),
        ("fe80::1%eth0", "fe80::/10"),
        ("ff02::1", "ff00::/8"),
        ("::ffff:127.0.0.1", "127.0.0.0/8 (in ::ffff:7f00:1)"),
        ("::ffff:169.254.169.254", "169.254.0.0/16 (in ::ffff:a9fe:a9fe)"),
        ("64:ff9b::a00:1", "10.0.0.0/8 (in 64:ff9b::a00:1)"),  # NAT64 of 10.0.0.1
        ("2002:c0a8:101::1", "192.168.0.0/16 (in 2002:c0a8:101::1)"),  # 6to4 of 192.168.1.1
        ("not an address", "unparsable address"),
    ],
)
def test_blocked_networks(address: str, network: str) -> None:
    assert blocked_network(address) == network


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111"]
)
def test_public_addresses_pass(address: str) -> None:
    assert blocked_network(address) is None


def test_guard_exceptions() -> None:
    # Seeds that resolve without asking DNS (an address, /etc/hosts): no traffic.
    guard = AddressGuard(["127.0.0.1", "localhost"])
    assert guard.refusal("example.test", "93.184.216.34") is None
    assert guard.refusal("localhost", "10.0.0.7") is None  # a seed's own host
    assert guard.refusal("127.0.0.1", "127.0.0.1") is None
    assert guard.refusal("other.test", "127.0.0.1") is None  # a seed host's address
    refusal = guard.refusal("other.test", "169.254.169.254")
    assert refusal is not None and "169.254.0.0/16" in refusal
    assert AddressGuard([], allow_private=True).refusal("x.test", "10.0.0.1") is None


def test_a_non_seed_private_host_is_never_fetched(tmp_path: Path) -> None:
    with serve({}, host="127.0.0.2", default=lambda h, n: links()) as private:
        routes = {
            "/": lambda h, n: links(private.url + "/page", "/hop"),
            "/hop": lambda h, n: redirect(private.url + "/target"),
        }
        with serve(routes) as seed:
            records = crawl_records(seed.url + "/", tmp_path / "job", "--scope", "any")
        assert private.log.hits == []
    by_url = {r["url"]: r for r in records}
    page = by_url[private.url + "/page"]
    assert page["error_kind"] == "blocked_address" and "127.0.0.0/8" in page["error"]
    hop = by_url[seed.url + "/hop"]
    assert hop["error_kind"] == "blocked_address" and hop["final_url"] == private.url + "/target"
    assert by_url[seed.url + "/"]["status"] == 200


def test_the_address_counts_not_the_name(tmp_path: Path) -> None:
    """``localhost`` names 127.0.0.1, which is no seed's address here."""
    with serve({}, default=lambda h, n: links()) as named:
        port = named.server_address[1]
        with serve(
            {"/": lambda h, n: links(f"http://localhost:{port}/")}, host="127.0.0.2"
        ) as seed:
            records = crawl_records(seed.url + "/", tmp_path / "job", "--scope", "any")
        assert named.log.hits == []
    [blocked] = [r for r in records if r["url"].startswith("http://localhost")]
    assert blocked["error_kind"] == "blocked_address"


def test_allow_private_networks(tmp_path: Path) -> None:
    with serve({}, host="127.0.0.2", default=lambda h, n: links()) as private:
        with serve({"/": lambda h, n: links(private.url + "/page")}) as seed:
            records = crawl_records(
                seed.url + "/", tmp_path / "job", "--scope", "any", "--allow-private-networks"
            )
        assert private.log.counts()["/page"] == 1
    assert all(r["error"] is None for r in records)


class FakeSocket:
    """What a resolver plus connect would give: a socket 'connected' to ``peer``."""

    def __init__(self, peer: str) -> None:
        self.peer, self.closed = peer, False

    def getpeername(self) -> tuple[str, int]:
        return (self.peer, 80)

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    "peer, refused", [("10.0.0.8", True), ("169.254.169.254", True), ("93.184.216.34", False)]
)
def test_the_connection_checks_where_the_name_led(
    monkeypatch: pytest.MonkeyPatch, peer: str, refused: bool
) -> None:
    """A public-looking name whose lookup gives a private address is refused
    at connect time, before a byte is sent; no connection is opened here."""
    import urllib3.util.connection

    from mpcrawler.settings import Settings
    from mpcrawler.worker.downloader import BlockedAddress
    from mpcrawler.worker.http import HttpDownloader

    sock = FakeSocket(peer)
    monkeypatch.setattr(urllib3.util.connection, "create_connection", lambda *a, **k: sock)
    # An address as the seed, so that its own addresses need no DNS lookup.
    downloader = HttpDownloader(Settings(seeds=["http://198.51.100.7/"]))
    if refused:
        with pytest.raises(BlockedAddress, match="private or reserved network"):
            downloader.download("http://public.example/")
        assert sock.closed
    else:
        with pytest.raises(Exception) as other:  # the fake socket cannot carry HTTP
            downloader.download("http://public.example/")
        assert not isinstance(other.value, BlockedAddress)


def test_a_name_that_does_not_resolve_is_final() -> None:
    """The chain requests raises for NXDOMAIN, built here without a lookup."""
    import socket

    import requests
    import urllib3

    from mpcrawler.worker.http import _name_not_found

    def chain(errno: int) -> requests.ConnectionError:
        gai = socket.gaierror(errno, "lookup failed")
        resolution = urllib3.exceptions.NameResolutionError("x.test", None, gai)  # type: ignore[arg-type]
        resolution.__cause__ = gai
        return requests.ConnectionError(urllib3.exceptions.MaxRetryError(None, "/", resolution))  # type: ignore[arg-type]

    assert _name_not_found(chain(socket.EAI_NONAME))
    assert not _name_not_found(chain(socket.EAI_AGAIN))  # a resolver hiccup: retried
