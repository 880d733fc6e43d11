"""A worker process: download, parse, archive.

``process`` is the worker's loop and its messages to the master; ``links``
resolves and filters what a page links to; ``downloader`` is the
downloaders' contract, ``http`` (requests) and ``curl`` (libcurl) fetch,
``analyzer`` parses (BeautifulSoup or lxml), ``warc`` archives.  The
master never imports these modules but to check a plug-in.

soupsieve, BeautifulSoup's CSS selectors, is imported when first used: bs4
imports it as it loads, and it cost more than the rest of bs4 (0.035 s of
every worker's start, in the forkserver), while the built-in analyzers
select nothing.  Until then ``sys.modules`` holds a ``_Deferred`` module in
its place; a plug-in's ``soup.select()`` loads it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any


class _Deferred(types.ModuleType):
    """A module imported at the first use of one of its names (its
    ``__spec__`` stays None: an ``import`` of it only finds it).  Then it
    holds the module's names, and ``sys.modules`` the module itself."""

    _lock = threading.Lock()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        with self._lock:
            if sys.modules.get(self.__name__) is self:
                del sys.modules[self.__name__]
                try:
                    module = importlib.import_module(self.__name__)
                except BaseException:
                    sys.modules[self.__name__] = self
                    raise
                self.__dict__.update(
                    (k, v) for k, v in vars(module).items() if not k.startswith("__")
                )
            module = sys.modules[self.__name__]
        return getattr(module, attr)


def _import_when_used(name: str) -> None:
    """A ``_Deferred`` ``name`` in sys.modules (nothing if it is imported
    already or not installed: its importer then sees what it would)."""
    if name not in sys.modules and importlib.util.find_spec(name) is not None:
        sys.modules[name] = _Deferred(name)


_import_when_used("soupsieve")
