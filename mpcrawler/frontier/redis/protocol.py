"""The protocol between a node and ``step.lua``: named operations, one call's
arguments and its reply, as small types of plain data.

A node (:class:`~mpcrawler.frontier.redis.frontier.RedisFrontier`) keeps
the operations it owes Redis in an outbox, each one of the types of ``Op``
below, and sends them with one call's admissions, seen checks, lease and
heartbeat: ``encode`` lays them out as the script's ARGV, and ``decode``
turns its reply into a ``Reply``.  ``parse`` reads ARGV back as the script
does (the protocol test round-trips every operation through it, with no
Redis).  The script's side is its table of handlers, one per code.

ARGV: prefix, node, epoch, crawl id, new id, force; then five sections,
each starting with its count: the ops (each its code, then its fields),
the admissions (count and the per-host budget, then per URL: seen bucket,
seen field, host, url, depth, priority, kind, lastmod), the checks (seen
bucket and field), the lease (want, per_host, max_pages, lag_ms,
before_ms, others, kept) and the heartbeat (0, or 1 with its timeout, the
node's figures and whether to list the hosts held).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from ..base import KINDS, Admission

__all__ = [
    "CODES",
    "Ack",
    "AdmitArgs",
    "Beat",
    "BeatReply",
    "Block",
    "Counts",
    "Drop",
    "Expedite",
    "GiveUp",
    "GiveUpAll",
    "Header",
    "LeaseArgs",
    "Leave",
    "MarkSeen",
    "Op",
    "Release",
    "Reply",
    "ReturnPermits",
    "Schedule",
    "SpendPermits",
    "TakePermits",
    "Unblock",
    "decode",
    "encode",
    "parse",
]

SeenSlot = tuple[str, bytes]  # a URL's seen-set bucket and field


def _flat(slots: Sequence[SeenSlot]) -> list[Any]:
    return [part for slot in slots for part in slot]


def _fields(op: tuple[Any, ...]) -> list[Any]:
    """An operation's arguments: its fields, in order (most operations)."""
    return list(op)


class Ack(NamedTuple):
    """A lease is done (``error``: its record is an error); ``seen``, its
    redirect hops, are marked seen in the same step."""

    code = "A"
    seq: int
    host: str
    member: str  # the queue member as leased ('' if not known here)
    wait_ms: int  # the host's politeness wait, if it is given up
    error: bool = False
    seen: tuple[SeenSlot, ...] = ()

    def args(self) -> list[Any]:
        fields = [self.seq, self.host, self.member, self.wait_ms, int(self.error)]
        return [*fields, len(self.seen), *_flat(self.seen)]


class Release(NamedTuple):
    """A lease goes back to its place in its host's queue."""

    code = "R"
    seq: int

    args = _fields  # its fields, in order


class Drop(NamedTuple):
    """A lease is dropped (excluded, never fetched, not counted done)."""

    code = "D"
    seq: int
    host: str
    wait_ms: int

    args = _fields  # its fields, in order


class GiveUp(NamedTuple):
    """The node gives up an idle host; nobody starts on it for ``wait_ms``."""

    code = "G"
    host: str
    wait_ms: int

    args = _fields  # its fields, in order


class GiveUpAll(NamedTuple):
    """The node gives up every idle host it holds."""

    code = "GA"

    args = _fields  # its fields, in order


class Leave(NamedTuple):
    """The node is no longer alive (its permits go back)."""

    code = "L"

    args = _fields  # its fields, in order


class Schedule(NamedTuple):
    """A URL is due again at ``due_ms`` (its revisit entry and due time)."""

    code = "S"
    host: str
    url: str
    depth: int
    priority: int
    kind: str
    due_ms: int
    fetched_ms: int
    state: str

    args = _fields  # its fields, in order


class Expedite(NamedTuple):
    """A scheduled URL fetched before ``since_ms`` is due now."""

    code = "X"
    url: str
    since_ms: int

    args = _fields  # its fields, in order


class Block(NamedTuple):
    """The node may not lease from ``host`` now (blocked, or being shed)."""

    code = "B"
    host: str

    args = _fields  # its fields, in order


class Unblock(NamedTuple):
    """The node may lease from ``host`` again."""

    code = "U"
    host: str

    args = _fields  # its fields, in order


class MarkSeen(NamedTuple):
    """URLs marked seen (a redirect's hops whose page was acked in another partition)."""

    code = "M"
    slots: tuple[SeenSlot, ...]

    def args(self) -> list[Any]:
        return [len(self.slots), *_flat(self.slots)]


class TakePermits(NamedTuple):
    """Partition 0: grant the node up to ``n`` page permits, within ``max_pages``."""

    code = "PT"
    n: int
    max_pages: int

    args = _fields  # its fields, in order


class SpendPermits(NamedTuple):
    """``k`` permits were spent: pages done."""

    code = "PS"
    k: int

    args = _fields  # its fields, in order


class ReturnPermits(NamedTuple):
    """``k`` permits go back unused."""

    code = "PR"
    k: int

    args = _fields  # its fields, in order


Op = (
    Ack
    | Release
    | Drop
    | GiveUp
    | GiveUpAll
    | Leave
    | Schedule
    | Expedite
    | Block
    | Unblock
    | MarkSeen
    | TakePermits
    | SpendPermits
    | ReturnPermits
)
OP_TYPES: tuple[type, ...] = (
    Ack,
    Release,
    Drop,
    GiveUp,
    GiveUpAll,
    Leave,
    Schedule,
    Expedite,
    Block,
    Unblock,
    MarkSeen,
    TakePermits,
    SpendPermits,
    ReturnPermits,
)
CODES: dict[str, type] = {t.code: t for t in OP_TYPES}  # type: ignore[attr-defined]


MAX_PRIORITY = 1 << 19  # |priority| below this keeps a queue's scores exact in a double


def check_admissions(items: Sequence[Admission]) -> None:
    """ValueError for a URL to admit whose priority or kind the script cannot hold."""
    for _url, _depth, priority, kind, _lastmod in items:
        if not -MAX_PRIORITY < priority < MAX_PRIORITY:
            raise ValueError(f"priority {priority} is out of range (|p| < {MAX_PRIORITY})")
        if kind not in KINDS:
            raise ValueError(f"unknown URL kind {kind!r}")


class Header(NamedTuple):
    """Who calls: the crawl's key prefix, the node, its epoch ('0':
    register), the crawl's id, the id a new crawl gets, and ``force`` (take
    the node id over from a dead process)."""

    prefix: str
    node: str
    epoch: str
    crawl_id: str
    new_id: str = ""
    force: bool = False


class AdmitArgs(NamedTuple):
    """One URL to admit, with its seen slot and host."""

    slot: SeenSlot
    host: str
    url: str
    depth: int
    priority: int
    kind: str
    lastmod: str  # '' for none


class LeaseArgs(NamedTuple):
    """How many URLs to lease: ``max_pages`` -1 for no budget (0: embeds
    only), ``lag_ms`` None with revisits off, ``before_ms`` -1 for none;
    ``others`` and ``kept``: a partitioned crawl's hosts elsewhere, and how
    many of them the node keeps."""

    want: int = 0
    per_host: int = 1 << 30
    max_pages: int = -1
    lag_ms: int | None = None
    before_ms: int = -1
    others: int = 0
    kept: int = 0


class Beat(NamedTuple):
    """A heartbeat: the lease timeout, the node's figures (JSON), and
    whether Redis lists every host the node holds in its reply."""

    timeout_ms: int
    info: str
    list_held: bool = False


def encode(
    header: Header,
    ops: Sequence[Op],
    admits: Sequence[AdmitArgs] = (),
    budget: int = 0,
    checks: Sequence[SeenSlot] = (),
    lease: LeaseArgs = LeaseArgs(),  # noqa: B008 - an immutable value
    beat: Beat | None = None,
) -> list[Any]:
    """The script's ARGV for one call (``budget``: --max-pages-per-host, 0 none)."""
    args: list[Any] = [header.prefix, header.node, header.epoch, header.crawl_id]
    args += [header.new_id, int(header.force), len(ops)]
    for op in ops:
        args.append(op.code)
        args.extend(op.args())
    args.extend((len(admits), budget))
    for admit in admits:
        args.extend((*admit.slot, *admit[1:]))
    args.append(len(checks))
    args.extend(_flat(checks))
    lag = "" if lease.lag_ms is None else lease.lag_ms  # '': revisits off
    args.extend((lease.want, lease.per_host, lease.max_pages, lag, lease.before_ms))
    args.extend((lease.others, lease.kept))
    if beat is None:
        args.append(0)
    else:
        args.extend((1, beat.timeout_ms, beat.info, int(beat.list_held)))
    return args


class Counts(NamedTuple):
    """The crawl's counts after a call (``next_due``: Redis ms, -1 none;
    ``ever``: URLs queued since the crawl began; the ``e`` ones count
    embeds apart, against no page budget)."""

    queued: int = 0
    leased: int = 0
    done: int = 0
    errors: int = 0
    seen: int = 0
    late: int = 0
    scheduled: int = 0
    next_due: int = -1
    ever: int = 0
    equeued: int = 0
    eleased: int = 0
    edone: int = 0


class BeatReply(NamedTuple):
    """What a heartbeat found: leases given back from dead nodes, hosts in
    the crawl, live nodes, and the hosts this node holds (a count, or all
    of them when asked)."""

    reaped: int
    hosts: int
    alive: int
    held: int | list[str]


class Reply(NamedTuple):
    """A call's reply: per admission 1 queued, 0 seen before, 2 over its
    host's budget; the queue members leased with their revisit entries
    (b'' for none); per check, seen; the counts; the heartbeat's reply; the
    node's epoch and the crawl's id; the hosts the call made the node's and
    those it gave up; the page permits granted, spent and out."""

    admitted: list[int]
    leased: list[bytes]
    entries: list[bytes]
    checked: list[bool]
    counts: Counts
    beat: BeatReply | None
    epoch: str
    crawl_id: str
    claimed: list[str]
    released: list[str]
    granted: int
    spent: int
    permits_out: int


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def decode(raw: Sequence[Any]) -> Reply:
    """The script's reply as a ``Reply``."""
    admitted, leased, checked, counts, beat, session, entries, hosts, permits = raw
    beat_reply = None
    if beat:
        reaped, crawl_hosts, alive, held = beat
        held_hosts = [_text(h) for h in held] if isinstance(held, list) else int(held)
        beat_reply = BeatReply(int(reaped), int(crawl_hosts), int(alive), held_hosts)
    claimed, released = hosts
    granted, spent, out = (int(x) for x in permits)
    return Reply(
        admitted=[int(a) for a in admitted],
        leased=list(leased),
        entries=[e if isinstance(e, bytes) else _text(e).encode() for e in entries],
        checked=[bool(int(c)) for c in checked],
        counts=Counts(*(int(c) for c in counts)),
        beat=beat_reply,
        epoch=_text(session[0]),
        crawl_id=_text(session[1]),
        claimed=[_text(h) for h in claimed],
        released=[_text(h) for h in released],
        granted=granted,
        spent=spent,
        permits_out=out,
    )


class Call(NamedTuple):
    """One call's arguments as ``parse`` reads them back from ARGV."""

    header: Header
    ops: list[Op]
    admits: list[AdmitArgs]
    budget: int
    checks: list[SeenSlot]
    lease: LeaseArgs
    beat: Beat | None


def parse(argv: Sequence[Any]) -> Call:
    """ARGV read back as the script reads it (the inverse of ``encode``)."""
    values: Iterator[Any] = iter(argv)

    def take(n: int = 1) -> list[Any]:
        return [next(values) for _ in range(n)]

    def slots(n: int) -> tuple[SeenSlot, ...]:
        return tuple((b, f) for b, f in (take(2) for _ in range(n)))

    prefix, node, epoch, crawl_id, new_id, force = take(6)
    header = Header(prefix, node, epoch, crawl_id, new_id, bool(int(force)))
    ops: list[Op] = []
    for _ in range(int(next(values))):
        code = next(values)
        if code == "A":
            seq, host, member, wait, error, n = take(6)
            ops.append(Ack(seq, host, member, wait, bool(int(error)), slots(int(n))))
        elif code == "M":
            ops.append(MarkSeen(slots(int(next(values)))))
        else:
            kind = CODES[code]
            ops.append(kind(*take(len(kind._fields))))
    count, budget = take(2)
    admits = []
    for _ in range(int(count)):
        bucket, tail, *rest = take(8)
        admits.append(AdmitArgs((bucket, tail), *rest))
    checks = list(slots(int(next(values))))
    want, per_host, max_pages, lag, before, others, kept = take(7)
    lease = LeaseArgs(want, per_host, max_pages, None if lag == "" else lag, before, others, kept)
    beat = None
    if int(next(values)):
        timeout, info, list_held = take(3)
        beat = Beat(timeout, info, bool(int(list_held)))
    return Call(header, ops, admits, int(budget), checks, lease, beat)


class Outbox:
    """The operations a node owes Redis, sent with its next call: acks wait
    here up to ``FLUSH_AFTER`` seconds for a call to ride on, and a call that
    fails keeps them.  Permits spent or given back merge into one op each."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.since = 0.0  # when the oldest op came (monotonic)

    def __bool__(self) -> bool:
        return bool(self.ops)

    def add(self, op: Op, now: float) -> None:
        if not self.ops:
            self.since = now
        self.ops.append(op)

    def add_permits(self, op: SpendPermits | ReturnPermits, now: float) -> None:
        """``op``, merged with the one of its kind waiting, if any."""
        for n, waiting in enumerate(self.ops):
            if type(waiting) is type(op):
                self.ops[n] = type(op)(waiting.k + op.k)  # type: ignore[union-attr]
                return
        self.add(op, now)

    def count(self, *kinds: type) -> int:
        """Operations of these types waiting."""
        return sum(1 for op in self.ops if isinstance(op, kinds))

    def permits_ending(self) -> int:
        """Page permits spent or given back by the operations waiting."""
        return sum(op.k for op in self.ops if isinstance(op, SpendPermits | ReturnPermits))

    def sent(self, n: int) -> None:
        """The first ``n`` operations reached Redis."""
        del self.ops[:n]
