"""Identity and load counters shared by every processing module.

A module is a Downloader (type letter ``D``), an Analyzer (``A``) or a
Pipeline (``P``).  Each instance gets an ID made of its type letter, a serial
number and its address, e.g. ``D3|pid-4711``, and counts its calls: called,
accepted (every call: no built-in module refuses one), completed (did
not raise), and handling right now.  Workers send their modules' summaries to the master
as plain dicts; the master puts them in the final stats.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import resource
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

__all__ = [
    "BUILTIN_ANALYZERS",
    "BUILTIN_DOWNLOADERS",
    "BUILTIN_MODULES",
    "MOVED_MODULES",
    "MOVED_OBJECTS",
    "Module",
    "SerialGenerator",
    "load_object",
    "object_path",
    "process_usage",
]

# Short names for --analyzer.
BUILTIN_ANALYZERS = {
    "bs4": "mpcrawler.worker.analyzer:HtmlAnalyzer",
    "lxml": "mpcrawler.worker.analyzer:LxmlAnalyzer",
}
# Short names for --downloader.
BUILTIN_DOWNLOADERS = {
    "http": "mpcrawler.worker.http:HttpDownloader",
    "curl": "mpcrawler.worker.curl:CurlDownloader",  # pip install 'mpcrawler[curl]'
}
# The built-in modules: known to load, so the master need not import them
# (and bs4 or requests with them) to check a crawl's settings.
# Where the plug-in base classes and built-in modules lived before the
# packages worker/ and output/: a path written so (in a script, a command or
# a job dir) still loads.
MOVED_MODULES = {
    "mpcrawler.analyzer": "mpcrawler.worker.analyzer",
    "mpcrawler.downloader": "mpcrawler.worker.downloader",
    "mpcrawler.pipelines": "mpcrawler.output.pipelines",
}
# Objects that moved within a module's package: the whole path, old -> new.
MOVED_OBJECTS = {
    "mpcrawler.worker.downloader:HttpDownloader": "mpcrawler.worker.http:HttpDownloader",
    "mpcrawler.downloader:HttpDownloader": "mpcrawler.worker.http:HttpDownloader",
}
BUILTIN_MODULES = frozenset(
    {
        *BUILTIN_ANALYZERS.values(),
        BUILTIN_DOWNLOADERS["http"],
        "mpcrawler.worker.downloader:HttpDownloader",  # where it was (a job dir may say so)
    }
)


class SerialGenerator:
    """Serial numbers from ``start`` to ``maximum``, then around again.

    Thread-safe.
    """

    def __init__(self, start: int = 1, maximum: int = 2**63 - 1) -> None:
        if maximum < start:
            raise ValueError("maximum must be >= start")
        self.start, self.maximum = start, maximum
        self._next = start
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            value = self._next
            if value >= self.maximum:
                self._next = self.start
            else:
                self._next = value + 1
            return value


class Module:
    """Base of Downloader, Analyzer and Pipeline: an ID and four counters."""

    type_letter: ClassVar[str] = "M"
    _generators: ClassVar[dict[str, SerialGenerator]] = {}
    _generators_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        with Module._generators_lock:
            generator = Module._generators.setdefault(self.type_letter, SerialGenerator())
        self.serial = generator.next()
        self.address = f"pid-{os.getpid()}"
        self.id = f"{self.type_letter}{self.serial}|{self.address}"
        self.called = self.accepted = self.completed = self.handling = 0
        self._counter_lock = threading.Lock()

    @contextlib.contextmanager
    def track(self) -> Iterator[None]:
        """Count one call around the body: accepted (a module refuses no
        call), completed unless it raises."""
        self.call_started()
        completed = False
        try:
            yield
            completed = True
        finally:
            self.call_ended(completed)

    def call_started(self) -> None:
        """Count a call that started (``track``'s first half, for a call
        that ends in another turn of an event loop)."""
        with self._counter_lock:
            self.called += 1
            self.handling += 1

    def call_ended(self, completed: bool) -> None:
        """Count the end of a call ``call_started`` counted."""
        with self._counter_lock:
            self.handling -= 1
            self.accepted += 1
            self.completed += completed

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": type(self).__name__,
            "called": self.called,
            "accepted": self.accepted,
            "completed": self.completed,
            "handling": self.handling,
        }


def object_path(obj: type | str) -> str:
    """``pkg.mod:Name`` for a class, so that it can cross a process boundary."""
    if isinstance(obj, str):
        return obj
    return f"{obj.__module__}:{obj.__qualname__}"


def load_object(path: str) -> Any:
    """Import ``pkg.mod:Name`` (where it is now, if it moved: MOVED_OBJECTS,
    MOVED_MODULES); raises ValueError with a clear message."""
    path = MOVED_OBJECTS.get(path, path)
    module_name, sep, name = path.partition(":")
    if not sep or not module_name or not name:
        raise ValueError(f"expected pkg.module:Name, got {path!r}")
    module_name = MOVED_MODULES.get(module_name, module_name)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from exc
    for part in name.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ValueError(f"{module_name!r} has no attribute {name!r}") from exc
    return obj


def process_usage() -> dict[str, float]:
    """CPU seconds and memory (current and peak RSS, MB) of this process.

    The peak is the kernel's high-water mark of this process's own memory
    (``VmHWM``): ``ru_maxrss`` keeps, across ``exec``, the peak of the
    process that forked it (a benchmark's 111 MB showed as a crawl's)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    rss_mb, peak_mb = 0.0, usage.ru_maxrss / 1024
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    mb = int(line.split()[1]) / 1024
                    if line.startswith("VmRSS:"):
                        rss_mb = mb
                    else:
                        peak_mb = mb
    except (OSError, ValueError, IndexError):
        pass
    return {
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "rss_mb": round(rss_mb, 1),
        "max_rss_mb": round(peak_mb, 1),
    }
