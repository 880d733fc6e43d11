"""The shared frontier: one crawl's queues, seen set and leases in Redis,
shared by many nodes, each step one Lua script (``step.lua``).

``frontier.py`` is :class:`RedisFrontier`; ``client.py`` reaches Redis;
``status.py`` reads and resets a crawl from outside its nodes.
"""

from .frontier import RedisFrontier
from .status import crawl_status, reset_crawl

__all__ = ["RedisFrontier", "crawl_status", "reset_crawl"]
