"""The frontier: dedup plus per-host, priority-ordered queues, behind one protocol.

* :mod:`.base`       -- the :class:`Frontier` protocol, :class:`UrlInfo`, :class:`Revisit`
  and the ordering convention; :mod:`.hostblocks` -- the blocked hosts, for every backend
* :mod:`.local`      -- :class:`LocalFrontier`, files in the job directory (the default):
  :class:`UrlQueueManager` (``queue``, with ``segments``, ``blocks``, ``files``,
  ``journal``, ``storage``), :class:`SeenSet` (``seen``) and the revisit
  schedule (``revisits``)
* :mod:`.redis`      -- :class:`RedisFrontier`, the same protocol on Redis, shared by
  the nodes of a crawl (``frontier``, ``client``, ``status``, ``step.lua``)

The master holds one Frontier and is its only user.
"""

from __future__ import annotations

from ..errors import FrontierError
from .base import FOREVER, Frontier, Revisit, UrlInfo
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
    "Revisit",
    "SeenSet",
    "UrlInfo",
    "UrlQueueManager",
    "frame_payload",
    "inspect",
]
