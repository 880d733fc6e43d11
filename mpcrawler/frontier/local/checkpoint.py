"""Checkpoints: the local queue's state written whole, and read back on reopening.

Owned by :class:`~mpcrawler.frontier.local.queue.UrlQueueManager`
(durability is described there).  ``write`` puts the URLs in memory and
the taken ones in a snapshot file, fsyncs every file written since the
last checkpoint, and atomically replaces ``state.json`` (the log's
segments, each host's blocks, the frozen hosts' generation, the
tombstones, a new empty journal).  ``load`` reads ``state.json`` back:
deletes the files it does not reference, puts the snapshot's URLs back in
their places, replays the journal's puts, drops what it acked (acked URLs
still on disk become tombstones), and writes a checkpoint.

A ``state.json`` of another format, unreadable or malformed, or a frozen
hosts' file that does not hold what the checkpoint counted, is a
:class:`~mpcrawler.errors.FrontierError`: the job's state is never
resumed as if whole.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from ...errors import FrontierError
from ..base import UrlInfo
from .blocks import BlockStore, urls_in
from .cold import ColdHosts
from .files import QueueFiles
from .journal import (
    ACK,
    FORMAT_VERSION,
    PUT,
    READ_VERSIONS,
    STATE_FILE,
    JournalWriter,
    parse_journal,
)
from .lanes import Lanes
from .segments import SegmentLog
from .spill import Spiller
from .storage import atomic_write, decode_items, encode_item, log, read_frames

__all__ = ["Checkpoints"]


class Checkpoints:
    """The checkpoints of one queue's parts (``journal``: the queue's, started afresh by each)."""

    def __init__(
        self,
        files: QueueFiles,
        lanes: Lanes,
        spiller: Spiller,
        journal: JournalWriter,
    ) -> None:
        self.files, self.lanes, self.spiller, self.journal = files, lanes, spiller, journal
        self.log: SegmentLog = spiller.log
        self.store: BlockStore = spiller.store
        self.cold: ColdHosts = spiller.cold
        self.snapshot: str | None = None

    # ---------------------------------------------------------------- write
    def write(self, next_seq: int, taken: dict[int, UrlInfo]) -> None:
        """Write the whole state afresh and start an empty journal."""
        back: list[UrlInfo] = []
        front: list[UrlInfo] = []
        runs: dict[str, list[list[Any]]] = {}
        for host in self.lanes.hosts.values():
            for priority, lane in host.lanes.items():
                if lane.front:
                    front.extend(lane.front)
                if lane.back:
                    back.extend(lane.back)
                if lane.blocks:
                    runs.setdefault(host.key, []).append([priority, lane.blocks.tolist()])
        unacked = sorted(taken.values(), key=lambda i: i.seq)
        files = self.files
        old_snapshot, old_journal = self.snapshot, self.journal.name
        self.snapshot = None
        if back or front or unacked:
            name = files.new_name("snapshot", "seg")
            files.write(name, b"".join(map(encode_item, back + front + unacked)))
            self.snapshot = name
        self.log.sync_writers()
        files.sync_dirty()
        journal_name = files.new_name("journal", "log")
        state = {
            "format": FORMAT_VERSION,
            "next_seq": next_seq,
            "next_segment": files.number,
            "spilled": self.spiller.spilled_total,
            "snapshot": self.snapshot,
            "snapshot_counts": [len(back), len(front), len(unacked)],
            "journal": journal_name,
            "segments": self.log.to_json(),
            "runs": runs,
            "blocks_max": self.store.max,
            "tombstones": sorted(self.lanes.tombstones),
        }
        state["cold"] = {"gen": self.cold.commit(), "urls": self.cold.urls}
        (files.directory / journal_name).touch()  # before the state that names it
        atomic_write(files.directory / STATE_FILE, json.dumps(state).encode(), files.fsync)
        self.cold.committed()
        self.journal.start(files.path(journal_name))
        files.garbage += [n for n in (old_snapshot, old_journal) if n]
        files.sweep()

    # ----------------------------------------------------------------- load
    def load(self, taken: dict[int, UrlInfo]) -> tuple[int, list[UrlInfo]]:
        """Reopen the queue from its directory (a new one: empty), and write
        a checkpoint; the next seq, and the puts queued again from the journal."""
        state_path = self.files.directory / STATE_FILE
        if not state_path.exists():
            self.files.remove_unreferenced(set())
            self.cold.open(-1)  # no checkpoint names any of its rows
            self.write(0, taken)
            return 0, []
        state = self._read_state()
        try:
            next_seq, referenced = self._load_state(state)
            snapshot, counts = state.get("snapshot"), state.get("snapshot_counts", [0, 0, 0])
            back, front, counted = int(counts[0]), int(counts[1]), sum(map(int, counts))
            journal = state.get("journal")
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise FrontierError(f"malformed frontier state {state_path}: {exc}") from exc
        referenced.update(n for n in (snapshot, journal) if n)
        self.files.remove_unreferenced(referenced)
        puts, acked = self._read_journal(journal) if journal else ([], set())
        lanes = self.lanes
        if snapshot:
            self._restore_snapshot(snapshot, back, front, counted, acked)
        recovered: list[UrlInfo] = []
        for item in puts:
            if item.seq != next_seq:
                log.error(
                    "frontier: journal %s does not follow its checkpoint; replay stopped", journal
                )
                break
            next_seq += 1
            recovered.append(item)
            if item.seq in acked:
                acked.discard(item.seq)
            else:
                self.spiller.place(item)
        lanes.tombstones.update(acked)  # acked, and still on disk
        lanes.touch_all()
        if lanes.mem > self.spiller.cache_size:
            self.spiller.overflow()
        self.write(next_seq, taken)
        return next_seq, recovered

    def _restore_snapshot(
        self, snapshot: str, back: int, front: int, counted: int, acked: set[int]
    ) -> None:
        """The snapshot's URLs back in the lanes, those ``acked`` since left
        out (and out of ``acked``): the first ``back`` in memory, the next
        ``front`` given back to their lanes' fronts, then those taken."""
        lanes, back_taken = self.lanes, []
        saved = self._read_whole(snapshot)
        if len(saved) < counted:
            log.error(
                "frontier: snapshot %s holds %d of the %d URLs its checkpoint counted; "
                "the rest are lost",
                snapshot,
                len(saved),
                counted,
            )
        for n, item in enumerate(saved):
            if item.seq in acked:
                acked.discard(item.seq)
            elif n < back:
                lanes.to_memory(item)
            elif n < back + front:
                lanes.give_back(item)
            else:
                back_taken.append(item)
        for item in back_taken:  # before the puts: they sort before them
            lanes.give_back(item)

    def _read_state(self) -> dict[str, Any]:
        state_path = self.files.directory / STATE_FILE
        try:
            state = json.loads(state_path.read_text("utf-8"))
            version = state["format"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise FrontierError(f"unreadable frontier state {state_path}: {exc}") from exc
        if version not in READ_VERSIONS:
            raise FrontierError(
                f"frontier in {self.files.directory} has format {version}; this version of "
                f"mpcrawler reads formats {', '.join(map(str, READ_VERSIONS))}"
            )
        return state  # type: ignore[no-any-return]

    def _load_state(self, state: dict[str, Any]) -> tuple[int, set[str]]:
        """The checkpoint's log and blocks; the next seq, and the files they use."""
        next_seq = int(state["next_seq"])
        self.files.number = int(state["next_segment"])
        self.spiller.spilled_total = int(state.get("spilled", 0))
        referenced = self.log.load(state["segments"])
        store, lanes = self.store, self.lanes
        for key, runs in store.load(state["runs"]).items():
            host = lanes.host(key)
            for priority, blocks in runs:
                lanes.add_blocks(host, priority, blocks)
        cold = state.get("cold", {})
        rows = self.cold.open(int(cold.get("gen", 0)))
        frozen, counted = sum(urls_in(b) for _, _, b in rows), int(cold.get("urls", 0))
        if frozen != counted:
            raise FrontierError(
                f"{self.cold.path} lists {frozen} URLs of waiting hosts, where the "
                f"checkpoint counted {counted}: it was lost, replaced or damaged"
            )
        for key, priority, blocks in rows:
            lanes.add_blocks(lanes.host(key), priority, blocks)
            store.adopt(blocks)
        referenced |= store.files_used()
        blocks_max = state.get("blocks_max")
        store.max = tuple(blocks_max) if blocks_max else None  # type: ignore[assignment]
        lanes.tombstones = set(map(int, state.get("tombstones", [])))
        return next_seq, referenced

    def _read_whole(self, name: str) -> list[UrlInfo]:
        self.files.garbage.append(name)
        return decode_items(read_frames(self.files.directory / name, name), name)

    def _read_journal(self, name: str) -> tuple[list[UrlInfo], set[int]]:
        """The journal's puts, and the seqs it acked (leases and releases do
        not matter: everything not acked is queued again)."""
        self.files.garbage.append(name)
        puts: list[UrlInfo] = []
        acked: set[int] = set()
        try:
            for op, value in parse_journal(read_frames(self.files.directory / name, name), name):
                if op == PUT:
                    puts.append(value)
                elif op == ACK:
                    acked.add(value)
        except (FrontierError, struct.error, UnicodeDecodeError) as exc:
            log.error("frontier: journal %s: %s; replay stopped there", name, exc)
        return puts, acked
