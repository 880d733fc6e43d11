"""The shared frontier: one crawl's queues, seen set and leases in Redis,
shared by many nodes, each step one Lua script (``step.lua``).

``frontier.py`` is :class:`RedisFrontier` (one partition of keys);
``partitions.py`` is :class:`PartitionedFrontier`, a crawl over many of
them (``--redis-partitions``), and ``open_shared``, which picks; ``client.py``
reaches Redis; ``status.py`` reads and resets a crawl from outside its nodes.
"""

from .frontier import RedisFrontier
from .partitions import PartitionedFrontier, open_shared
from .status import crawl_status, reset_crawl

__all__ = ["PartitionedFrontier", "RedisFrontier", "crawl_status", "open_shared", "reset_crawl"]
