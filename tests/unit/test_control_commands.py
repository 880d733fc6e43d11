"""Control commands without a crawl: parsing, the job-dir inbox, a shared
crawl's inbox in a real Redis, the state they leave for a start, and the
scheduler's part of ``exclude``."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
import redis
import redis_server

from mpcrawler.control.commands import parse_command, read_command
from mpcrawler.control.inbox import Inbox, write_command
from mpcrawler.control.shared import SharedInbox, answers_of, recent, send
from mpcrawler.control.steering import Answer, answer_waiting, deliver
from mpcrawler.frontier.redis.client import key_prefix
from mpcrawler.master.scheduler import Scheduler
from mpcrawler.output.jobdir import JobState
from mpcrawler.web.filters import UrlRules
from mpcrawler.web.urls import Scope


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ({"command": "exclude", "args": {"regex": "/a("}}, "not a regular expression"),
        ({"command": "exclude", "args": {}}, "exclude needs a REGEX"),
        ({"command": "exclude", "args": {"regex": 3}}, "exclude needs a REGEX"),
        ({"command": "pause", "args": {"x": 1}}, "pause takes no arguments"),
        ({"command": "pause-host", "args": {}}, "need a HOST"),
        ({"command": "pause-host", "args": {"host": "a b"}}, "is not a host"),
        ({"command": "jump"}, "unknown command 'jump'"),
        ([1], "not a JSON object"),
    ],
)
def test_a_malformed_command_says_why(data: object, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_command(data)


def test_read_command_refuses_what_is_not_json() -> None:
    assert read_command(b"{no", "command file")[1].startswith("not a command file: ")
    data, command = read_command(json.dumps({"command": "exclude", "args": {"regex": "x$"}}))
    assert command == parse_command(data) and command.describe() == "exclude x$"


def test_commands_sent_while_stopped_shape_the_next_start(tmp_path: Path) -> None:
    for name, args in [
        ("pause", {}),
        ("exclude", {"regex": "/a/"}),
        ("exclude", {"regex": "/a/"}),  # once is enough
        ("add-seeds", {"urls": ["http://n.test/"], "priority": 3}),
        ("set", {"delay": "0.5"}),
        ("pause-host", {"host": "A.test:81"}),
        ("pause-host", {"host": "b.test"}),
        ("resume-host", {"host": "a.test"}),
        ("stop", {}),
    ]:
        write_command(tmp_path, name, args)
    state = JobState()
    inbox = Inbox(tmp_path)
    decided = answer_waiting(inbox, state)
    assert [a.applied for a in decided] == [
        "pause",
        "exclude",
        "exclude",
        "add-seeds",
        "set",
        "pause-host",
        "pause-host",
        "resume-host",
        "",
    ]
    assert state.paused and state.excluded == ["/a/"] and state.paused_hosts == ["b.test"]
    assert state.added_seeds == {"http://n.test/": 3} and state.overrides == {"delay": 0.5}
    # Nothing is answered before the state is durable (the job's first checkpoint).
    assert not (tmp_path / "control" / "done").exists()
    assert len(list((tmp_path / "control" / "inbox").iterdir())) == 9
    deliver(inbox, decided)
    answers = [
        json.loads(p.read_text())["answer"]
        for p in sorted((tmp_path / "control" / "done").iterdir())
    ]
    assert answers[-1] == "refused: the crawl was not running"
    assert not list((tmp_path / "control" / "inbox").iterdir())


def test_a_shared_inbox_gives_each_node_every_command_once() -> None:
    client = redis.Redis.from_url(redis_server.url())
    crawl = f"t-{uuid.uuid4().hex[:8]}"
    prefix = key_prefix(crawl)
    try:
        first = send(client, prefix, "pause", {})
        send(client, prefix, "exclude", {"regex": "x$"})
        early, late = JobState(), JobState()
        n1 = SharedInbox(client, prefix, "n1", early)
        decided = answer_waiting(n1, early)
        assert early.paused and early.excluded == ["x$"] and early.control_read == 0
        deliver(n1, decided)
        assert early.control_read == 2
        deliver(n1, [Answer(0, {"id": first}, "refused: again", "")])  # applied again, kept
        assert answers_of(client, prefix, first) == {"n1": "applied"}
        client.rpush(prefix + "control", b"{broken")
        send(client, prefix, "resume", {})
        taken = n1.take()
        assert [index for index, _, _ in taken] == [2, 3]
        assert isinstance(taken[0][2], str) and taken[0][2].startswith("not a command")
        for index, data, _ in taken:
            n1.answer(index, data, "applied")
        assert n1.take() == [] and early.control_read == 4
        n2 = SharedInbox(client, prefix, "n2", late)
        deliver(n2, answer_waiting(n2, late))  # joins later
        assert not late.paused and late.excluded == ["x$"] and late.control_read == 4
        assert answers_of(client, prefix, first) == {"n1": "applied", "n2": "applied"}
        assert [c.get("command") for c in recent(client, prefix, 2)] == [None, "resume"]
    finally:
        redis_server.forget(crawl)
        client.close()


def test_exclude_rules_refuse_after_reject_regex() -> None:
    scope = Scope.from_seeds(["http://h.test/"])
    rules = UrlRules(scope, reject=("/r/",), exclude=("/x",))
    assert rules.refusal("http://h.test/x/1") == "exclude"
    assert rules.refusal("http://h.test/r/x") == "reject_regex"
    assert rules.refusal("http://h.test/y") is None
    assert rules.excluded("http://h.test/x/1") and not UrlRules(scope).excluded("http://h.test/x")


def test_the_scheduler_gives_back_held_requests_that_match() -> None:
    scheduler = Scheduler(clock=lambda: 0.0, robots=False)
    from mpcrawler.frontier.base import UrlInfo
    from mpcrawler.master.request import Request

    for seq, path in enumerate(["/a", "/x1", "/x2"]):
        scheduler.submit(Request.leased(UrlInfo(f"http://h.test{path}", 0, 0, seq)))
    retry = Request.leased(UrlInfo("http://h.test/x3", 0, 0, 9))
    retry.attempts = 1  # tried once: it goes on
    scheduler.submit(retry)
    taken = scheduler.take_back(lambda url: "/x" in url)
    assert [r.url for r in taken] == ["http://h.test/x1", "http://h.test/x2"]
    assert scheduler.queued == 2
    assigned, _ = scheduler.dispatch(4)
    assert [r.url for r in assigned] == ["http://h.test/a", "http://h.test/x3"]


def test_a_jobs_overrides_are_checked_by_the_option_table() -> None:
    from mpcrawler.control.steering import checked_overrides

    assert checked_overrides({"delay": 0.5, "max_pages": 10, "host_concurrency": 1024}) == []
    assert checked_overrides(
        {"delay": float("inf"), "workers": 3, "max_pages": 1e300, "host_concurrency": 2000}
    ) == [
        "--delay=inf: must be at most 3600",
        "workers=3: not a setting control set changes",
        "--max-pages=1e+300: '1e+300' is not an integer",
        "--host-concurrency=2000: must be at most 1024",
    ]


def test_an_answered_command_is_not_applied_twice_but_a_reused_name_is_new(
    tmp_path: Path,
) -> None:
    inbox_dir = tmp_path / "control" / "inbox"
    inbox_dir.mkdir(parents=True)
    inbox = Inbox(tmp_path)
    command = inbox_dir / "pause.json"
    command.write_text(json.dumps({"command": "pause"}))
    state = JobState()
    deliver(inbox, answer_waiting(inbox, state))
    assert state.paused and not command.exists()
    # A kill between the answer and the removal: the file is back, older than its answer.
    command.write_text(json.dumps({"command": "pause"}))
    answered = (tmp_path / "control" / "done" / "pause.json").stat().st_mtime_ns
    os.utime(command, ns=(answered - 10**9, answered - 10**9))
    assert inbox.take() == [] and not command.exists()
    # The same name written again later: a new command, applied.
    state.paused = False
    command.write_text(json.dumps({"command": "pause"}))
    os.utime(command, ns=(answered + 10**9, answered + 10**9))
    deliver(inbox, answer_waiting(inbox, state))
    assert state.paused
