"""Pacing: how fast a politeness group may be asked, from how it answers.

A 429 or a 503, or timeouts in a row, slow the whole group down; a
Retry-After holds it back until then; good answers bring it back to its
own pace.  ``next_pace`` is the pure decision; :class:`Pacing` applies it
to a group (:class:`mpcrawler.master.hosttable.Group`), counts the changes
(stats.json's ``pace_changes``) and names the groups slowed last (the web
view's list).  The scheduler (:mod:`mpcrawler.master.scheduler`) feeds it
each answer and wakes the group after.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict

from ..messages import PageResult
from .hosttable import Group
from .outcome import parse_retry_after

__all__ = ["FIRST_PACE", "GOOD_RUN", "RATE_STEP", "SLOWED_KEPT", "Pacing", "next_pace"]

log = logging.getLogger(__name__)

SLOWED_KEPT = 256  # groups slowed by their answers that ``slowed`` names (the latest)

# Pacing a struggling host (429, 503, timeouts in a row): its request rate is
# halved (its spacing doubled, from FIRST_PACE, capped), and after each run of
# GOOD_RUN answers it grows back by RATE_STEP requests a second until the
# host is at its own pace again: additive increase, multiplicative decrease.
# As TCP cuts its window once per loss event, not once per lost packet, only
# the answer to a request sent after the last cut may cut again: the answers
# to the requests in flight at one moment of overload are one event.  And at
# a spacing over a second one good answer is a run: it took that long to get.
FIRST_PACE = 0.5
GOOD_RUN = 3
RATE_STEP = 2.0
TIMEOUTS_IN_A_ROW = 2


def next_pace(pace: float, good_run: int, throttled: bool, cap: float) -> tuple[float, int]:
    """A host's spacing (0: its own pace) and run of good answers, after one
    more answer.  Pure: the scheduler's pacing decision."""
    if throttled:
        return min(cap, max(FIRST_PACE, 2 * pace)), 0
    if not pace:
        return 0.0, 0
    good_run += 1
    if good_run < (1 if pace > 1.0 else GOOD_RUN):
        return pace, good_run
    faster = 1 / (1 / pace + RATE_STEP)
    return (0.0 if faster < FIRST_PACE / 2 else faster), 0


class Pacing:
    """The groups' pace, from their answers, capped at ``max_pace`` seconds."""

    def __init__(self, max_pace: float) -> None:
        self.max_pace = max_pace
        self.changes = 0
        # groups slowed down by their answers, the last SLOWED_KEPT (the web view's list)
        self.slowed: OrderedDict[str, None] = OrderedDict()

    def answered(self, group: Group, sent_at: float, result: PageResult, now: float) -> bool:
        """How ``group`` answered a request sent at ``sent_at``: a 429 or a
        503, or TIMEOUTS_IN_A_ROW timeouts, slows it down (``next_pace``);
        Retry-After also holds it back until then.  Other answers are good
        ones.  False: the answer says nothing of its load (a connection
        failure), and nothing changed."""
        status, timed_out = result.status, result.error_kind == "timeout"
        retry_after = parse_retry_after(result.retry_after, time.time())
        group.timeouts = group.timeouts + 1 if timed_out else 0
        throttled = status in (429, 503) or group.timeouts >= TIMEOUTS_IN_A_ROW
        if status is None and not timed_out:
            return False
        before = group.pace
        echo = throttled and sent_at <= group.cut_at  # sent before the last cut
        if not echo:
            group.pace, group.good_run = next_pace(
                group.pace, group.good_run, throttled, self.max_pace
            )
        if throttled:  # the next request waits from now, not from the last start
            group.timeouts = 0
            group.hold_until = max(group.hold_until, now + group.pace)
            if not echo:
                group.cut_at = now
        if retry_after:
            group.hold_until = max(group.hold_until, now + min(retry_after, self.max_pace))
        group.next_start = max(group.next_start, group.hold_until)
        self._name_slowed(group, now)
        if group.pace != before:
            self.changes += 1
            why = f"HTTP {status}" if status in (429, 503) else "timeouts" if throttled else "ok"
            if group.pace:
                log.info("pace of %s: a request every %.2f s (%s)", group.key, group.pace, why)
            else:
                log.info("pace of %s: back to its own", group.key)
        return True

    def _name_slowed(self, group: Group, now: float) -> None:
        if group.pace or group.hold_until > now:
            self.slowed[group.key] = None
            self.slowed.move_to_end(group.key)
            if len(self.slowed) > SLOWED_KEPT:
                self.slowed.popitem(last=False)
        else:
            self.slowed.pop(group.key, None)
