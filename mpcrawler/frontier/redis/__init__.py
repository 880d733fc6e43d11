"""The shared frontier: one crawl's queues, seen set and leases in Redis,
shared by many nodes, each step one Lua script (``step.lua``)."""

from .frontier import RedisFrontier, crawl_status, reset_crawl

__all__ = ["RedisFrontier", "crawl_status", "reset_crawl"]
