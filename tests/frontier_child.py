"""A process that works a UrlQueueManager until it is killed (for crash tests).

The operations are a pure function of the seed, so the test can replay them
in memory up to any flush.  "FLUSHED n" is printed after the n-th flush()
returned.
"""

from __future__ import annotations

import random
import sys

from mpcrawler.frontier import UrlQueueManager


def operations(seed: int):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    n = 0
    while True:
        roll = rng.random()
        if roll < 0.5:
            yield ("put", f"http://h.test/{n}", rng.randrange(4), rng.randrange(-1, 2))
            n += 1
        elif roll < 0.75:
            yield ("get",)
        elif roll < 0.97:
            yield ("ack", rng.random())
        else:
            yield ("flush",)


def main() -> None:
    directory, seed, cache_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    q = UrlQueueManager(directory, cache_size=cache_size)
    gotten = []
    flushes = 0
    for op in operations(seed):
        if op[0] == "put":
            q.put(op[1], depth=op[2], priority=op[3])
        elif op[0] == "get":
            item = q.lease()
            if item is not None:
                gotten.append(item)
        elif op[0] == "ack":
            if gotten:
                q.ack(gotten.pop(int(op[1] * len(gotten))))
        else:
            q.flush()
            flushes += 1
            print(f"FLUSHED {flushes}", flush=True)


if __name__ == "__main__":
    main()
