"""Stop signals: SIGINT, SIGTERM and SIGHUP, and who acts on them.

Only the master does.  ``python -m mpcrawler`` calls :func:`install` as its
first step, before the heavy imports, so a signal that arrives while the
crawl is still starting is recorded, not fatal; the crawler then
:func:`listen`\\ s and is told about it at once.  A signal delivered to the
whole process group (Ctrl-C, ``kill -TERM -PGID``, systemd, SLURM) reaches the
workers too: they, and the forkserver that starts them, ignore all three from
their first instruction, because :func:`ignored_in_children` starts the
forkserver with them ignored, and an ignored disposition survives fork and
exec.

SIGHUP (the terminal went away) stops the crawl like SIGTERM, unless the
process started with SIGHUP ignored (``nohup``): then it stays ignored.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from multiprocessing import resource_tracker
from types import FrameType

__all__ = ["STOP_SIGNALS", "ignored_in_children", "install", "listen", "say", "uninstall"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_received: list[int] = []
_listener: list[Callable[[int], None]] = []
_previous: dict[int, object] = {}  # the handlers install() replaced


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    for listener in _listener:
        listener(signum)


def install() -> bool:
    """Record stop signals from now on (main thread only).  True if this call
    installed the handlers, False if they were in place or cannot be."""
    if _previous or threading.current_thread() is not threading.main_thread():
        return False
    for signum in STOP_SIGNALS:
        if signum == signal.SIGHUP and signal.getsignal(signum) == signal.SIG_IGN:
            continue  # started under nohup: keep it so
        _previous[signum] = signal.signal(signum, _on_signal)
    return True


def uninstall() -> None:
    """Put back the handlers that :func:`install` replaced."""
    for signum, handler in _previous.items():
        signal.signal(signum, handler)  # type: ignore[arg-type]
    _previous.clear()


def listen(listener: Callable[[int], None] | None) -> None:
    """Call ``listener(signum)`` for each stop signal: first for those that
    already arrived, then as they come.  ``None`` stops listening and forgets
    what arrived."""
    _listener.clear()
    if listener is None:
        _received.clear()
        return
    for signum in list(_received):
        listener(signum)
    _listener.append(listener)


def say(message: str) -> None:
    """Write ``message`` and a newline to stderr from a listener, that is from
    a signal handler: straight to its file descriptor.  A handler runs
    between two bytecodes of whatever the main thread was doing, a write to
    ``sys.stderr`` included (a first handler's, when a second signal comes
    quickly): a ``print`` there takes the stream's lock again and fails,
    ``RuntimeError: reentrant call``.  A terminal that is gone (SIGHUP) is
    no error."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by one without a descriptor
        fd = 2
    data = (message + "\n").encode(errors="replace")
    with contextlib.suppress(OSError):
        while data:
            data = data[os.write(fd, data) :]


@contextlib.contextmanager
def ignored_in_children() -> Iterator[None]:
    """Processes started inside this block ignore the stop signals.

    The signals are blocked meanwhile, so one that arrives waits for the
    master's own handler instead of being lost.  multiprocessing's resource
    tracker unblocks SIGINT and SIGTERM once it has started, which would drop
    such a waiting signal, so it is started first.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    resource_tracker.ensure_running()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOP_SIGNALS}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
