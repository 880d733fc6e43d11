"""What a worker imports: only its crawl's downloader's client, preloaded by the forkserver."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mpcrawler.master.forkserver import PRELOAD, named_downloader, preload
from mpcrawler.modules import load_object


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["http://a/"], None),
        (["http://a/", "--downloader", "curl"], "curl"),
        (["--downloader=curl", "http://a/"], "curl"),
        (["--downloader", "http", "--downloader", "curl"], "curl"),  # the last wins
        (["--downloader"], None),  # (argparse says what is wrong)
        (["--", "--downloader", "curl"], None),  # a seed, not an option
    ],
)
def test_the_downloader_is_read_from_the_command_line(args: list[str], named: str | None) -> None:
    assert named_downloader(args) == named


def test_the_forkserver_preloads_the_crawls_downloader_only() -> None:
    assert preload("curl") == [*PRELOAD, "mpcrawler.worker.curl"]
    assert preload(None) == [*PRELOAD, "mpcrawler.worker.http"]
    assert preload("http") == preload("mpcrawler.worker.http:HttpDownloader")
    assert preload("mypkg.fetch:Fetcher") == PRELOAD  # a plug-in imports in the worker


def imported(code: str) -> set[str]:
    """The top-level modules a new interpreter has imported after ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {name.partition(".")[0] for name in out.split()}


def test_a_curl_worker_imports_neither_requests_nor_urllib3() -> None:
    modules = imported("import mpcrawler.worker.process, mpcrawler.worker.curl")
    assert not modules & {"requests", "urllib3"}
    assert {"requests", "urllib3"} <= imported("import mpcrawler.worker.http")


def test_the_http_downloader_loads_from_where_it_was() -> None:
    from mpcrawler import HttpDownloader
    from mpcrawler.worker.http import HttpDownloader as current

    assert HttpDownloader is current
    assert load_object("mpcrawler.worker.downloader:HttpDownloader") is current
    assert load_object("mpcrawler.downloader:HttpDownloader") is current
    with pytest.raises(ValueError, match="has no attribute"):
        load_object("mpcrawler.worker.downloader:NoSuchDownloader")


def test_soupsieve_loads_only_when_a_plugin_selects() -> None:
    code = """
import sys
import mpcrawler.worker.process
from bs4 import BeautifulSoup
before = type(sys.modules["soupsieve"]).__name__
soup = BeautifulSoup('<p class="a">x</p><p>y</p>', "lxml")
found = [p.text for p in soup.select("p.a")] + [soup.select_one("p:not(.a)").text]
print(before, type(sys.modules["soupsieve"]).__name__, *found)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.split() == ["_Deferred", "module", "x", "y"]
