"""The frontier: dedup plus per-host, priority-ordered queues, behind one protocol.

* :mod:`.base`       -- the :class:`Frontier` protocol, :class:`UrlInfo`, :class:`Revisit`
  and the ordering convention; :mod:`.hostblocks` -- the blocked hosts, for every backend
* :mod:`.local`      -- :class:`LocalFrontier`, files in the job directory (the default):
  :class:`UrlQueueManager` (``queue``, with ``segments``, ``blocks``, ``files``,
  ``journal``, ``storage``), :class:`SeenSet` (``seen``) and the revisit
  schedule (``revisits``)
* :mod:`.redis`      -- :class:`RedisFrontier`, the same protocol on Redis, shared by
  the nodes of a crawl (``frontier``, ``client``, ``status``, ``step.lua``)

The master holds one Frontier and is its only user.  A worker reads only
``UrlInfo`` (in its requests): the local frontier's modules are imported at
the first use of their names (``__getattr__``), so the workers' forkserver
does not import them (34 ms of each crawl's start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy
from ..errors import FrontierError
from .base import FOREVER, Frontier, Revisit, UrlInfo

if TYPE_CHECKING:
    from .local.frontier import LocalFrontier
    from .local.queue import FORMAT_VERSION, UrlQueueManager, inspect
    from .local.seen import SeenSet
    from .local.storage import frame_payload

__getattr__ = lazy.attributes(
    globals(),
    {  # name: the module that has it, imported at the name's first use
        "LocalFrontier": ".local.frontier",
        "FORMAT_VERSION": ".local.queue",
        "UrlQueueManager": ".local.queue",
        "inspect": ".local.queue",
        "SeenSet": ".local.seen",
        "frame_payload": ".local.storage",
    },
)


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
