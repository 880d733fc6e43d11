"""A shared crawl's control commands, through Redis: ``control --redis``.

The job-dir inbox (:mod:`mpcrawler.control.inbox`) reaches one node; a shared
crawl's commands go to every node.  Two keys under the crawl's prefix::

    control   LIST of the commands, oldest first (the JSON of
              mpcrawler.control.commands.new_command); never trimmed while the
              crawl lives: a node that joins later reads them all
    answers   HASH "ID|NODE" -> that node's answer (JSON: answer, at)

Each node keeps how many it has read (``JobState.control_read``, in its job
dir).  At its start it applies those it has not read to its state, as a
job dir's inbox does for a crawl that was not running (a ``stop`` sent
before is refused: the node was not running); while it runs, its steering
reads the new ones about twice a second.  So every node applies every
command once, a node that joins later gets the crawl's settings, pauses,
seeds and exclusions, and a restarted node does not apply a command twice.

``send`` (the CLI) pushes a command; ``answers_of`` reads each node's
answer.  Nothing here is pickle: JSON only.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..errors import FrontierUnavailable
from .commands import MAX_COMMAND_BYTES, Command, command_json, read_command

__all__ = ["SharedInbox", "answers_of", "live_nodes", "recent", "send"]


def send(client: Any, prefix: str, name: str, args: dict[str, Any]) -> str:
    """Push a command for every node; its id.  ValueError for one larger
    than the nodes read (MAX_COMMAND_BYTES)."""
    data, text = command_json(name, args)
    client.rpush(prefix + "control", text)
    return str(data["id"])


def answers_of(client: Any, prefix: str, ident: str) -> dict[str, str]:
    """Each node's answer to command ``ident``, by node."""
    found: dict[str, str] = {}
    for field, raw in client.hscan_iter(prefix + "answers", match=f"{ident}|*", count=1000):
        node = field.decode().split("|", 1)[1]
        found[node] = json.loads(raw)["answer"]
    return found


def live_nodes(client: Any, prefix: str) -> list[str]:
    """The nodes whose heartbeat has not run out (Redis's clock)."""
    seconds, micros = client.time()
    now_ms = int(seconds) * 1000 + int(micros) // 1000
    return sorted(n.decode() for n in client.zrangebyscore(prefix + "alive", now_ms, "+inf"))


def recent(client: Any, prefix: str, last: int = 5) -> list[dict[str, Any]]:
    """The last commands, oldest first, each with its nodes' answers (for ``status``)."""
    shown = []
    for raw in client.lrange(prefix + "control", -last, -1):
        data, _ = read_command(raw)
        ident = str(data.get("id", ""))
        shown.append({**data, "answers": answers_of(client, prefix, ident) if ident else {}})
    return shown


class SharedInbox:
    """A node's side: the commands it has not read (from
    ``state.control_read`` on), and its answers.  Raises
    FrontierUnavailable when Redis does not answer (the steering tries
    again at its next poll; a command is read once answered)."""

    def __init__(self, client: Any, prefix: str, node: str, state: Any) -> None:
        import redis

        self.client, self.prefix, self.node, self.state = client, prefix, node, state
        self.faults = (redis.RedisError, OSError)

    def take(self) -> list[tuple[int, dict[str, Any], Command | str]]:
        """Each command not read yet: (its index, its data, the Command or
        why it is refused)."""
        start = self.state.control_read
        try:
            raws = self.client.lrange(self.prefix + "control", start, -1)
        except self.faults as exc:
            raise FrontierUnavailable(f"control commands: {exc}") from None
        taken: list[tuple[int, dict[str, Any], Command | str]] = []
        for n, raw in enumerate(raws):
            if len(raw) > MAX_COMMAND_BYTES:
                taken.append((start + n, {}, f"larger than {MAX_COMMAND_BYTES} bytes"))
            else:
                taken.append((start + n, *read_command(raw)))
        return taken

    def answer(self, index: int, data: dict[str, Any], answer: str) -> None:
        """Record this node's answer, unless it answered before (a command
        applied again after a kill keeps its first answer); the command
        counts as read."""
        ident = str(data.get("id") or f"#{index}")
        record = json.dumps({"answer": answer, "at": round(time.time(), 3)})
        try:
            self.client.hsetnx(self.prefix + "answers", f"{ident}|{self.node}", record)
        except self.faults as exc:
            raise FrontierUnavailable(f"control commands: {exc}") from None
        self.state.control_read = max(self.state.control_read, index + 1)
