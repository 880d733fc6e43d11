"""The frontier: dedup plus per-host, priority-ordered queues, behind one protocol.

* :mod:`.base`    -- the :class:`Frontier` protocol, :class:`UrlInfo` and the ordering convention
* :mod:`.local`   -- :class:`LocalFrontier`, files in the job directory (the default)
* :mod:`.queue`   -- :class:`UrlQueueManager`, the per-host disk-backed queues
* :mod:`.seen`    -- :class:`SeenSet`, every URL ever admitted
* :mod:`.storage` -- the framed records all frontier files are made of
* :mod:`.journal` -- the state and journal format, and `inspect` (counts without opening)
* :mod:`.redis_frontier` -- :class:`RedisFrontier`, the same protocol on Redis

The master holds one Frontier and is its only user.
"""

from __future__ import annotations

from ..errors import FrontierError
from .base import FOREVER, Frontier, UrlInfo
from .local.frontier import LocalFrontier
from .local.queue import FORMAT_VERSION, UrlQueueManager, inspect
from .local.seen import SeenSet
from .local.storage import frame_payload

__all__ = [
    "FOREVER",
    "FORMAT_VERSION",
    "Frontier",
    "FrontierError",
    "LocalFrontier",
    "SeenSet",
    "UrlInfo",
    "UrlQueueManager",
    "frame_payload",
    "inspect",
]
