"""FrameReader: the messages a pipe holds, read in one system call.

The master and the workers talk over ``multiprocessing`` pipes
(:mod:`mpcrawler.messages`).  ``Connection.recv`` costs two reads a
message (its 4-byte header, then its body), after a poll to know that one
waits, and ``Connection.poll`` builds a new selector at every call.  With
many workers at a high latency each message carries about one page, so
those calls were a share of a page's cost on both sides.

A ``FrameReader`` reads what the pipe holds in one ``os.read`` and cuts it
into its messages, unpickled as ``Connection.recv`` does; a message cut by
the read waits in the buffer for the rest (the next read asks for all of
it at once).  It reads only the pipe's bytes, so a side that reads a pipe
through one reads it only through it.  Its poll object lives as long as it
does.

The writer's side is :func:`send`: the frame ``Connection.send`` writes (a
4-byte big-endian signed size, or -1 and an 8-byte size, then the pickle),
pickled by plain ``pickle``: the messages hold plain data, and
``Connection.send``'s ``ForkingPickler`` copies its reducers' table at
every call (5% of the master's CPU, sampled, in a crawl of 8,000 pages).
"""

from __future__ import annotations

import os
import pickle
import select
import struct
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["FrameReader", "send"]

_SIZE = struct.Struct("!i")
_LONG_SIZE = struct.Struct("!Q")
_READ = 1 << 16  # bytes asked for in one read, at least


def send(conn: Connection, message: Any) -> None:
    """``message`` down ``conn``'s pipe, as ``Connection.send`` frames it."""
    conn.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))


class FrameReader:
    """The messages of ``conn``'s pipe (see the module)."""

    def __init__(self, conn: Connection) -> None:
        self.fd = conn.fileno()
        self.buffer = bytearray()
        self._missing = 0  # bytes the message cut in the buffer still lacks
        self._poll = select.poll()
        self._poll.register(self.fd, select.POLLIN)

    def poll(self, timeout: float = 0.0) -> bool:
        """Whether the pipe holds bytes, or has ended, within ``timeout`` seconds."""
        return bool(self._poll.poll(max(0, int(timeout * 1000))))

    def receive(self) -> list[Any]:
        """The messages the pipe holds now, without waiting (none: an empty list)."""
        return self.read() if self.poll() else []

    def read(self) -> list[Any]:
        """One read of the pipe, which must hold bytes or have ended (or it
        blocks), and the messages that completes.  EOFError: the writer has
        closed its end at a message's boundary; OSError: within one."""
        data = os.read(self.fd, max(_READ, self._missing))
        if not data:
            if self.buffer:
                raise OSError("the pipe ended within a message")
            raise EOFError
        self.buffer += data
        return self._messages()

    def _messages(self) -> list[Any]:
        buffer = self.buffer
        size = len(buffer)
        messages = []
        at = 0
        with memoryview(buffer) as view:
            while size - at >= _SIZE.size:
                (length,) = _SIZE.unpack_from(buffer, at)
                start = at + _SIZE.size
                if length == -1:
                    if size - start < _LONG_SIZE.size:
                        break
                    (length,) = _LONG_SIZE.unpack_from(buffer, start)
                    start += _LONG_SIZE.size
                end = start + length
                if end > size:
                    break
                messages.append(pickle.loads(view[start:end]))
                at = end
        del buffer[:at]
        self._missing = self._frame_end() - len(buffer)
        return messages

    def _frame_end(self) -> int:
        """The length of the message the buffer starts (0 if it holds none)."""
        if len(self.buffer) < _SIZE.size:
            return 0
        (length,) = _SIZE.unpack_from(self.buffer)
        if length == -1:
            if len(self.buffer) < _SIZE.size + _LONG_SIZE.size:
                return 0
            return _SIZE.size + _LONG_SIZE.size + _LONG_SIZE.unpack_from(self.buffer, 4)[0]
        return _SIZE.size + length
