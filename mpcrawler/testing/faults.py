"""Fault points: where a test kills a crawl between two of its steps.

A kill from outside lands where it lands; the rare moments (a record
written and not yet acked, a sink's batch delivered and its cursor not yet
saved) need to be reached on purpose.  ``reach(NAME)`` marks such a moment;
with ``MPCRAWLER_FAULT=NAME:N`` in the environment, the Nth arrival there
kills the crawl at once with SIGKILL: its whole process group when the
crawl leads one (the tests start it so), else the process alone.  Unset,
as always outside tests, a point costs one string comparison.

The points: ``record-written`` (a record is in the journal; the sinks, the
ack and the journal's sync come after), ``KIND-delivered`` (a sink of that
kind, ``parquet``, ``postgresql`` or ``jsonl-compressed``, made a batch
durable; its cursor is not saved), ``KIND-advanced`` (its cursor is saved),
``checkpoint`` (the pipelines are flushed; the frontier and
job.json are not).
"""

from __future__ import annotations

import os
import signal

__all__ = ["reach"]

_NAME, _, _AT = os.environ.get("MPCRAWLER_FAULT", "").partition(":")
_arrivals = 0


def reach(name: str) -> None:
    """The crawl is at the point ``name``: killed here if the test said so."""
    global _arrivals
    if name != _NAME:
        return
    _arrivals += 1
    if _arrivals == int(_AT or 1):
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
