"""What the pages' fingerprints cost the crawl that keeps them: bytes a page
and time a page of the content index, local (SQLite) and in Redis.

    python benchmarks/bench_content.py [--pages 100000] [--batch 50]

Checks ``--pages`` pages (a URL of about 60 bytes, a random digest and
simhash, 100 hosts) in batches of ``--batch``, as the settling does, into a
LocalContentIndex in a temporary directory and into a RedisContentIndex on
a redis-server of its own (no persistence).  Prints the bytes a page
(content.sqlite after its checkpoint; Redis's used_memory growth) and the
microseconds a page a check takes, seen from the master.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import redis

from mpcrawler.content.index import Page
from mpcrawler.frontier.local.content import LocalContentIndex
from mpcrawler.frontier.redis.frontier import RedisFrontier
from mpcrawler.testing.redis import RedisServer


def pages(n: int, seed: int = 1) -> list[Page]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        host = f"http://www.site-{i % 100:03d}.example"
        url = f"{host}/section/{rng.randrange(1000)}/article-{i}.html"
        out.append(Page(url, host, f"{rng.getrandbits(128):032x}", rng.getrandbits(64)))
    return out


def run(index: object, batch: list[Page], size: int) -> float:
    """Seconds to check every page, ``size`` at a time."""
    start = time.perf_counter()
    for at in range(0, len(batch), size):
        index.check(batch[at : at + size])  # type: ignore[attr-defined]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()
    batch = pages(args.pages)
    with tempfile.TemporaryDirectory() as tmp:
        local = LocalContentIndex(Path(tmp))
        seconds = run(local, batch, args.batch)
        local.checkpoint()
        size = (Path(tmp) / "content.sqlite").stat().st_size
        local.close()
    print(
        f"local  {args.pages:,} pages: {size / args.pages:.0f} bytes a page, "
        f"{seconds / args.pages * 1e6:.1f} us a page"
    )
    server = RedisServer(persist=False)
    try:
        client = redis.Redis.from_url(server.url)
        before = int(client.info("memory")["used_memory"])
        frontier = RedisFrontier(server.url, "bench", "n1")
        shared = frontier.content_index()
        seconds = run(shared, batch, args.batch)
        after = int(client.info("memory")["used_memory"])
        frontier.close()
        client.close()
    finally:
        server.close()
    print(
        f"redis  {args.pages:,} pages: {(after - before) / args.pages:.0f} bytes a page, "
        f"{seconds / args.pages * 1e6:.1f} us a page"
    )


if __name__ == "__main__":
    main()
