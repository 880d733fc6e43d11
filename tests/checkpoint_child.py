"""A process that admits URLs into a LocalFrontier and checkpoints until it
is killed (for crash tests of the seen set's batches).

Each round admits ROUND new URLs (some leased and acked), checkpoints, prints
"CHECKPOINT n" once the checkpoint has returned, then takes a few turns of
the master's loop (``tick``), each moving part of the batch into diskcache:
a kill most often lands with a batch part moved.  The queue's journal is
emptied at every checkpoint (a long crawl's), so the batch file alone keeps
those URLs seen.
"""

from __future__ import annotations

import sys

from mpcrawler.frontier import LocalFrontier
from mpcrawler.frontier.local import queue

ROUND = 300


def url(n: int) -> str:
    return f"http://h{n % 7}.test/{n}"


def main() -> None:
    # Each checkpoint's flush rewrites the queue and empties its journal, as a
    # long crawl's does: its puts are no longer there to be replayed after a
    # kill.  (Here, not on import: the test imports ROUND and url.)
    queue._JOURNAL_LIMIT = 1
    frontier = LocalFrontier(sys.argv[1], cache_size=50, fsync=False)
    n = 0
    for rounds in range(1, 10**9):
        for _ in range(ROUND):
            frontier.admit(url(n))
            n += 1
            if n % 3 == 0 and (info := frontier.lease()) is not None:
                frontier.ack(info)
        frontier.checkpoint()
        print(f"CHECKPOINT {rounds}", flush=True)
        for _ in range(2):
            frontier.tick()


if __name__ == "__main__":
    main()
