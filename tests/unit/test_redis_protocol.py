"""The protocol between a node and step.lua, with no Redis: every operation
encoded and read back as the script reads it, a reply decoded, and each
operation's code handled by the script."""

from __future__ import annotations

import re
from importlib import resources

from mpcrawler.frontier.redis import protocol as wire

SLOT = ("0a1b", b"\x01\x02\x03")

EVERY_OP: list[wire.Op] = [
    wire.Ack(7, "http://a.test", '[7,"http://a.test/x",0,0,"page",""]', 250, True, (SLOT, SLOT)),
    wire.Ack(8, "http://a.test", "", 0),
    wire.Release(9),
    wire.Drop(10, "http://b.test", 0),
    wire.GiveUp("http://c.test:8080", 1500),
    wire.GiveUpAll(),
    wire.Leave(),
    wire.Schedule("http://a.test", "http://a.test/x", 2, -1, "embed", 1000, 900, '{"s":1}'),
    wire.Expedite("http://a.test/x", 123456),
    wire.Block("http://a.test"),
    wire.Unblock("http://a.test"),
    wire.MarkSeen((SLOT,)),
    wire.MarkSeen(()),
    wire.TakePermits(16, 1000),
    wire.SpendPermits(3),
    wire.ReturnPermits(4),
]


def test_every_operation_round_trips_through_the_arguments() -> None:
    header = wire.Header("mpc:{c}:", "node-1", "5", "crawl-id", "", True)
    admits = [wire.AdmitArgs(SLOT, "http://a.test", "http://a.test/y", 1, 3, "sitemap", "")]
    lease = wire.LeaseArgs(want=4, per_host=2, max_pages=0, lag_ms=60_000, before_ms=99)
    beat = wire.Beat(30_000, '{"pid":1}', list_held=True)
    args = wire.encode(header, EVERY_OP, admits, 10, [SLOT, SLOT], lease, beat)
    call = wire.parse(args)
    assert call == wire.Call(header, EVERY_OP, admits, 10, [SLOT, SLOT], lease, beat)
    assert args[:7] == ["mpc:{c}:", "node-1", "5", "crawl-id", "", 1, len(EVERY_OP)]
    quiet = wire.parse(wire.encode(wire.Header("p", "n", "0", ""), []))
    assert quiet.ops == [] and quiet.beat is None and quiet.lease.lag_ms is None


def test_the_wire_format_of_an_ack_is_the_scripts() -> None:
    ack = wire.Ack(7, "h", "m", 250, True, (SLOT,))
    assert [ack.code, *ack.args()] == ["A", 7, "h", "m", 250, 1, 1, *SLOT]
    assert [wire.GiveUpAll.code, *wire.GiveUpAll().args()] == ["GA"]


def test_a_reply_is_decoded() -> None:
    raw = [
        [1, 0, 2],
        [b'[3,"http://a.test/",0,0,"page",""]'],
        [1],
        [5, 1, 9, 2, 20, 0, 3, 1700000000000, 30, 1, 0, 4],
        [0, 7, 2, [b"http://a.test", b"http://b.test"]],
        [b"6", b"crawl-id"],
        [b""],
        [[b"http://a.test"], [b"http://z.test"]],
        [2, 10, 5],
    ]
    reply = wire.decode(raw)
    assert reply.admitted == [1, 0, 2] and reply.checked == [True]
    assert reply.leased == [b'[3,"http://a.test/",0,0,"page",""]'] and reply.entries == [b""]
    assert reply.counts == wire.Counts(5, 1, 9, 2, 20, 0, 3, 1700000000000, 30, 1, 0, 4)
    assert reply.beat == wire.BeatReply(0, 7, 2, ["http://a.test", "http://b.test"])
    assert (reply.epoch, reply.crawl_id) == ("6", "crawl-id")
    assert (reply.claimed, reply.released) == (["http://a.test"], ["http://z.test"])
    assert (reply.granted, reply.spent, reply.permits_out) == (2, 10, 5)
    no_beat = wire.decode([[], [], [], [0] * 12, [], [b"1", b"x"], [], [[], []], [0, 0, 0]])
    assert no_beat.beat is None
    counted = wire.decode([[], [], [], [0] * 12, [1, 2, 3, 4], [b"1", b"x"], [], [[], []], [0] * 3])
    assert counted.beat == wire.BeatReply(1, 2, 3, 4)


def test_the_script_handles_exactly_the_named_operations() -> None:
    script = resources.files("mpcrawler.frontier.redis").joinpath("step.lua").read_text()
    handled = set(re.findall(r"^ops\.(\w+) = function", script, re.M))
    assert handled == set(wire.CODES)
    assert {type(op) for op in EVERY_OP} == set(wire.CODES.values())  # the test covers all


def test_the_outbox_merges_permits_and_keeps_what_was_not_sent() -> None:
    box = wire.Outbox()
    assert not box
    box.add(wire.Release(1), now=10.0)
    box.add_permits(wire.SpendPermits(2), now=11.0)
    box.add(wire.Ack(3, "h", "m", 0), now=12.0)
    box.add_permits(wire.SpendPermits(3), now=13.0)
    box.add_permits(wire.ReturnPermits(4), now=14.0)
    assert box.ops == [
        wire.Release(1),
        wire.SpendPermits(5),
        wire.Ack(3, "h", "m", 0),
        wire.ReturnPermits(4),
    ]
    assert box.since == 10.0 and box.permits_ending() == 9
    assert box.count(wire.Ack, wire.Release) == 2
    box.sent(2)
    box.add(wire.Leave(), now=20.0)
    assert box.ops == [wire.Ack(3, "h", "m", 0), wire.ReturnPermits(4), wire.Leave()]
    box.sent(3)
    box.add(wire.Leave(), now=30.0)
    assert box.since == 30.0  # the oldest waiting
