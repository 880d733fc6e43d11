"""The HTTP client's CPU a request, in one process, against nginx.

    python benchmarks/bench_client.py [--pages 800] [--repeat 5]

Serves Debian's PostgreSQL 15 docs with nginx (``common.nginx_dir``) and
fetches ``--pages`` of them (every page in name order, round after round)
with each client, alternated ``--repeat`` times, in this process; prints the
median CPU (``time.process_time``) a request:

- ``requests``: ``requests.Session().get`` and ``.content``, as a plain
  script does;
- ``urllib3``: ``urllib3.PoolManager().request``;
- ``HttpDownloader``: mpcrawler's built-in downloader, as a worker's slot
  calls it (``download(url)``: streaming, the byte cap, decoding, the
  digest, the connected-address check), with and without WARC capture;
- ``CurlDownloader``: the same on libcurl (``--downloader curl``).

The crawl's other costs (parsing, the master) are not in these figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DOCS, machine, nginx_dir
from mpcrawler.settings import Settings
from mpcrawler.worker.curl import CurlDownloader
from mpcrawler.worker.http import HttpDownloader


def clients(base: str, warc: Path) -> dict[str, Callable[[str], int]]:
    import requests
    import urllib3

    session = requests.Session()
    pool = urllib3.PoolManager()
    plain = HttpDownloader(Settings(seeds=[base], allow_private_networks=True))
    archiving = HttpDownloader(
        Settings(seeds=[base], allow_private_networks=True, warc_dir=str(warc))
    )
    curl = CurlDownloader(Settings(seeds=[base], allow_private_networks=True))
    curl_archiving = CurlDownloader(
        Settings(seeds=[base], allow_private_networks=True, warc_dir=str(warc))
    )
    return {
        "requests": lambda url: len(session.get(url).content),
        "urllib3": lambda url: len(pool.request("GET", url).data),
        "HttpDownloader": lambda url: len(plain.download(url).body),
        "HttpDownloader, WARC capture": lambda url: len(archiving.download(url).body),
        "CurlDownloader": lambda url: len(curl.download(url).body),
        "CurlDownloader, WARC capture": lambda url: len(curl_archiving.download(url).body),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=800)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    names = sorted(p.name for p in DOCS.glob("*.html"))
    with nginx_dir(DOCS) as base, tempfile.TemporaryDirectory() as warc:
        urls = [f"{base}/{names[i % len(names)]}" for i in range(args.pages)]
        runs: dict[str, list[float]] = {}
        fetchers = clients(base + "/", Path(warc))
        for fetch in fetchers.values():  # warm: connections, imports
            fetch(urls[0])
        for _ in range(args.repeat):
            for name, fetch in fetchers.items():
                start = time.process_time()
                size = sum(fetch(url) for url in urls)
                runs.setdefault(name, []).append((time.process_time() - start) / len(urls))
        print(f"machine: {machine()}")
        print(
            f"{args.pages} PostgreSQL doc pages from nginx ({size / len(urls) / 1000:.1f} KB on "
            f"average); median CPU a request of {args.repeat} alternated runs\n"
        )
        for name, times in runs.items():
            print(f"{name:<30}{1000 * statistics.median(times):>8.3f} ms")


if __name__ == "__main__":
    main()
