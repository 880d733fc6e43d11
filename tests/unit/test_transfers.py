"""CurlTransfers: the libcurl downloader's slots driven from one thread (the
worker's event loop, :mod:`mpcrawler.worker.loop`), on a real loopback server."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest
from hostile import Reply, html, serve

from mpcrawler.settings import Settings
from mpcrawler.worker.curl import CurlDownloader, CurlTransfers
from mpcrawler.worker.downloader import (
    BlockedAddress,
    DownloadError,
    Response,
    TimedOut,
)


def transfers_of(settings: Settings, slots: int) -> CurlTransfers:
    downloaders = CurlDownloader.for_slots(settings, slots)
    return CurlDownloader.transfers(downloaders)


def wait_all(
    transfers: CurlTransfers, count: int, timeout: float = 30
) -> list[tuple[int, Response | Exception]]:
    """Wait (bounded) until ``count`` downloads have ended; in the order they ended."""
    read, write = os.pipe()
    ended: list[tuple[int, Response | Exception]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(ended) < count:
            assert time.monotonic() < deadline, f"{len(ended)} of {count} ended"
            ended += transfers.wait(0.5, read)
    finally:
        os.close(read)
        os.close(write)
    return ended


def test_every_slot_downloads_at_once_from_one_thread() -> None:
    """8 slots, 24 pages: the server holds each request until 8 are in, so
    downloads made one after another fail; each answer is its own page's."""
    barrier = threading.Barrier(8, timeout=10)

    def together(handler: Any, n: int) -> Reply:
        barrier.wait()  # BrokenBarrierError (an error answer) unless 8 are open at once
        return html(f"<title>{handler.path}</title>")

    with serve({}, default=together) as server:
        transfers = transfers_of(Settings(allow_private_networks=True), 8)
        ended: list[tuple[int, Response | Exception]] = []
        for round_ in range(3):
            for slot in range(8):
                transfers.start(slot, f"{server.url}/{round_}/{slot}")
            assert transfers.active == 8
            ended += wait_all(transfers, 8)
        transfers.close()
    assert len(ended) == 24 and transfers.active == 0
    for slot, outcome in ended:
        assert isinstance(outcome, Response), outcome
        assert outcome.status == 200
        assert outcome.url.endswith(f"/{slot}")
        assert outcome.body == f"<title>{outcome.url[len(server.url) :]}</title>".encode()
    assert server.log.max_open >= 8
    counts = [d.summary() for d in transfers.downloaders]
    assert all(c["called"] == c["completed"] == 3 and c["handling"] == 0 for c in counts)


def test_a_stalled_download_times_out_while_the_others_end() -> None:
    release = threading.Event()

    def silent(handler: Any, n: int) -> Reply:
        release.wait(30)
        return html("late")

    with serve({"/stall": silent, "/quick": lambda h, n: html("quick")}) as server:
        transfers = transfers_of(Settings(timeout=0.5, allow_private_networks=True), 2)
        try:
            transfers.start(0, server.url + "/stall")
            transfers.start(1, server.url + "/quick")
            first, second = wait_all(transfers, 2)
        finally:
            release.set()
        transfers.close()
    assert first[0] == 1 and isinstance(first[1], Response) and first[1].body == b"quick"
    assert second[0] == 0 and isinstance(second[1], TimedOut), second
    summary = transfers.downloaders[0].summary()
    assert summary["called"] == 1 and summary["completed"] == 0 and summary["handling"] == 0


@pytest.mark.parametrize("proxied", [False, True])
def test_a_refused_address_never_gets_the_request(proxied: bool) -> None:
    """The private-network rule: after the connection (curl's pre-request
    callback) or, through a proxy, before anything starts."""
    with serve({}, default=lambda h, n: html("private")) as server:
        settings = Settings(proxy=server.url if proxied else None)
        transfers = transfers_of(settings, 1)
        transfers.start(0, server.url + "/secret")
        [(slot, outcome)] = wait_all(transfers, 1)
        transfers.close()
    assert slot == 0 and isinstance(outcome, BlockedAddress), outcome
    assert isinstance(outcome, DownloadError) and "blocked address" in str(outcome)
    assert server.log.paths() == []
