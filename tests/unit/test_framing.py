"""FrameReader: the messages of a real multiprocessing pipe, read in one system call."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
import struct
import threading
from typing import Any

import pytest

from mpcrawler import framing
from mpcrawler.framing import FrameReader
from mpcrawler.messages import Hello, PageResult, Stop


def pipe() -> tuple[multiprocessing.connection.Connection, multiprocessing.connection.Connection]:
    return multiprocessing.Pipe()


def test_every_message_waiting_comes_in_one_read_in_order() -> None:
    ours, theirs = pipe()
    reader = FrameReader(ours)
    assert reader.receive() == []  # nothing waits: no block
    sent = [Hello(0, 1, 8), {"n": 1}, Stop(), "x" * 100]
    for message in sent:
        theirs.send(message)
    assert reader.poll(1.0)
    assert reader.read() == sent
    assert reader.receive() == []


def test_a_message_larger_than_a_read_waits_for_its_rest() -> None:
    ours, theirs = pipe()
    reader = FrameReader(ours)
    big = {"body": os.urandom(3 << 20)}  # more than the pipe's buffer and a read
    writer = threading.Thread(target=lambda: (theirs.send(big), theirs.send("after")))
    writer.start()
    got: list[object] = []
    reads = 0
    while len(got) < 2:
        assert reader.poll(10.0)
        got += reader.read()
        reads += 1
    writer.join()
    assert got == [big, "after"]
    assert reads > 1


def test_a_frame_cut_anywhere_is_put_together() -> None:
    ours, theirs = pipe()
    reader = FrameReader(ours)
    payload = pickle.dumps(("a", 1))
    frame = struct.pack("!i", len(payload)) + payload
    for cut in (1, 3, 4, 5, len(frame) - 1):
        os.write(theirs.fileno(), frame[:cut])
        assert reader.read() == []
        os.write(theirs.fileno(), frame[cut:] + frame)
        assert reader.read() == [("a", 1), ("a", 1)]
    assert reader.buffer == bytearray()


def test_the_long_header_of_a_huge_frame_is_read() -> None:
    ours, theirs = pipe()
    reader = FrameReader(ours)
    payload = pickle.dumps(["long"])
    frame = struct.pack("!i", -1) + struct.pack("!Q", len(payload)) + payload
    os.write(theirs.fileno(), frame[:7])
    assert reader.read() == []
    os.write(theirs.fileno(), frame[7:])
    assert reader.read() == [["long"]]


def test_the_end_of_the_pipe_at_a_boundary_and_within_a_message() -> None:
    ours, theirs = pipe()
    reader = FrameReader(ours)
    theirs.send("last")
    theirs.close()
    assert reader.read() == ["last"]
    with pytest.raises(EOFError):
        reader.read()

    ours, theirs = pipe()
    reader = FrameReader(ours)
    os.write(theirs.fileno(), struct.pack("!i", 100) + b"short")
    theirs.close()
    assert reader.read() == []
    with pytest.raises(OSError, match="within a message"):
        reader.read()


def test_a_result_crosses_the_pipe_with_every_field() -> None:
    """A PageResult pickles as its fields in order (``__reduce__``): each
    field, set to a value of its own, comes back as it went."""
    values: dict[str, Any] = {}
    for k, f in enumerate(dataclasses.fields(PageResult)):
        values[f.name] = {"id": k, "transient": True, "outlinks": [("http://a.test/", 2)]}.get(
            f.name, f"value {k}" if f.type.startswith("str") else k
        )
    result = PageResult(**values)
    back = pickle.loads(pickle.dumps(result, pickle.HIGHEST_PROTOCOL))
    assert back == result and dataclasses.asdict(back) == values


def test_what_send_writes_is_read_by_a_frame_reader_and_by_recv() -> None:
    """``framing.send`` (plain pickle) frames as ``Connection.send`` does:
    a FrameReader reads it, and so does the other side's ``recv``."""
    ours, theirs = pipe()
    sent = [Hello(0, 1, 8), PageResult(3, "http://a.test/", outlinks=[("http://b.test/", 1)])]
    for message in sent:
        framing.send(theirs, message)
    reader = FrameReader(ours)
    assert reader.poll(1.0)
    assert reader.read() == sent
    framing.send(ours, sent[1])
    assert theirs.recv() == sent[1]
