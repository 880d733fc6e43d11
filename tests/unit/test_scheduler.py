"""The scheduler's decisions, without processes: robots.txt failures and the
cap on hosts kept in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpcrawler.master.pacing import FIRST_PACE, RATE_STEP, next_pace
from mpcrawler.master.request import Request
from mpcrawler.master.scheduler import Scheduler
from mpcrawler.messages import PageResult
from mpcrawler.robots.answers import Verdict, robots_verdict, take_answer
from mpcrawler.settings import BROAD_CRAWL_DEFAULTS, Settings


def answer(**fields: object) -> PageResult:
    return PageResult(0, "http://h.test/", **fields)  # type: ignore[arg-type]


def drain(scheduler: Scheduler) -> list[tuple[str, str, str]]:
    """Dispatch until nothing moves; feed every robots.txt an empty 200 and
    finish every page at once.  The refusals, as (url, reason, kind)."""
    refusals = []
    while True:
        assigned, refused = scheduler.dispatch(4)
        refusals += [(r.url, reason, kind) for r, reason, kind in refused]
        if not assigned and not refused:
            return refusals
        for request in assigned:
            scheduler.finished(request)
            if request.kind == "robots":
                take_answer(scheduler, request, 200, "", False)


def test_idle_hosts_beyond_the_cap_are_parked() -> None:
    scheduler = Scheduler(max_hosts=3, clock=lambda: 0.0)
    for i in range(10):
        scheduler.submit(scheduler.new_request(f"http://h{i}.test/"))
        drain(scheduler)
        assert len(scheduler.hosts) <= 3 and len(scheduler.groups) <= 3
    assert list(scheduler.hosts) == ["http://h7.test", "http://h8.test", "http://h9.test"]
    assert scheduler.host_counts() == {
        "in_memory": 3,
        "groups_in_memory": 3,
        "parked": 7,
        "groups_parked": 7,
    }


def visit(scheduler: Scheduler, url: str) -> None:
    """One page of ``url``'s host, fetched and answered 200 (its robots.txt
    first, if need be: empty)."""
    scheduler.submit(scheduler.new_request(url))
    assert not drain(scheduler)


def test_a_parked_host_comes_back_with_its_robots_txt_and_its_spacing() -> None:
    """Parked, a host keeps what it learnt: its robots.txt is not fetched
    again, its rules and Crawl-delay still hold, and its next start is
    where it was."""
    now = [0.0]
    scheduler = Scheduler(max_hosts=2, clock=lambda: now[0])
    scheduler.submit(scheduler.new_request("http://a.test/"))
    [robots], _ = scheduler.dispatch(4)
    scheduler.finished(robots)
    take_answer(scheduler, robots, 200, "User-agent: *\nDisallow: /no\nCrawl-delay: 5\n", False)
    [page], _ = scheduler.dispatch(4)
    scheduler.finished(page, started=0.0)  # a.test's next start: 5.0
    for other in ("b", "c", "d"):
        visit(scheduler, f"http://{other}.test/")
    assert "http://a.test" not in scheduler.hosts and "a.test" not in scheduler.groups
    scheduler.submit(scheduler.new_request("http://a.test/no/x"))
    scheduler.submit(scheduler.new_request("http://a.test/yes"))
    now[0] = 4.9
    assert scheduler.dispatch(4) == ([], [])  # no robots.txt again, nor before its Crawl-delay
    now[0] = 5.0
    assigned, refused = scheduler.dispatch(4)
    assert [(r.url, why) for r, why, _ in refused] == [
        ("http://a.test/no/x", "disallowed by robots.txt")
    ]
    assert [r.url for r in assigned] == ["http://a.test/yes"]
    assert scheduler.hosts["http://a.test"].group.limit == 1  # one at a time, as before


def test_a_parked_host_keeps_its_pace_and_a_robots_txt_given_up() -> None:
    now = [0.0]
    scheduler = Scheduler(max_hosts=1, clock=lambda: now[0])
    visit(scheduler, "http://slow.test/")
    scheduler.submit(scheduler.new_request("http://slow.test/a"))
    [sent], _ = scheduler.dispatch(1)
    scheduler.finished(sent)
    scheduler.answered(sent, answer(status=429))
    assert scheduler.hosts_paced() == 1
    scheduler.submit(scheduler.new_request("https://down.test/"))
    [robots], _ = scheduler.dispatch(1)
    scheduler.finished(robots)
    take_answer(scheduler, robots, None, None, True, "tls: expired", "tls")
    assert [kind for _, _, kind in scheduler.dispatch(1)[1]] == ["tls"]
    visit(scheduler, "http://other.test/")  # parks both
    assert "http://slow.test" not in scheduler.hosts and "https://down.test" not in scheduler.hosts
    assert scheduler.hosts_paced() == 1  # parked, and still slowed down
    assert scheduler.wait_before("http://slow.test") == pytest.approx(FIRST_PACE)
    group = scheduler._host("http://slow.test").group
    assert group.pace == FIRST_PACE and scheduler.hosts_paced() == 1
    scheduler.submit(scheduler.new_request("https://down.test/again"))
    assigned, refused = scheduler.dispatch(1)  # refused at once: no robots.txt fetched again
    assert not assigned
    assert [(why, kind) for _, why, kind in refused] == [
        ("robots.txt unavailable: tls: expired", "tls")
    ]


def test_an_answer_after_the_host_was_parked_still_paces_it() -> None:
    """A download ends (the host is idle, and may be parked) before its page
    is parsed and answered: the answer brings the host back."""
    scheduler = Scheduler(max_hosts=1, clock=lambda: 0.0, robots=False)
    scheduler.submit(scheduler.new_request("http://a.test/"))
    [sent], _ = scheduler.dispatch(1)
    scheduler.finished(sent)
    visit(scheduler, "http://b.test/")
    assert "http://a.test" not in scheduler.hosts
    scheduler.answered(sent, answer(status=503))
    assert scheduler.hosts["http://a.test"].group.pace == FIRST_PACE


def test_busy_hosts_are_kept_over_the_cap() -> None:
    scheduler = Scheduler(max_hosts=2, clock=lambda: 0.0, robots=False)
    for i in range(4):  # queued, never dispatched: none is idle
        scheduler.submit(scheduler.new_request(f"http://h{i}.test/"))
    assert len(scheduler.hosts) == 4


def test_a_permanent_robots_failure_gives_the_host_up_at_once() -> None:
    now = [0.0]
    scheduler = Scheduler(clock=lambda: now[0])
    scheduler.submit(scheduler.new_request("https://h.test/a"))
    [robots], _ = scheduler.dispatch(1)
    scheduler.finished(robots)
    reason = "tls: certificate verify failed: self-signed certificate"
    take_answer(scheduler, robots, None, None, True, reason, "tls")
    assigned, refused = scheduler.dispatch(1)
    assert not assigned
    assert [(r.url, why, kind) for r, why, kind in refused] == [
        ("https://h.test/a", f"robots.txt unavailable: {reason}", "tls")
    ]


def test_a_refused_connection_is_tried_soon_then_given_up() -> None:
    now = [0.0]
    scheduler = Scheduler(clock=lambda: now[0], retries=2, retry_delay=1.0)
    scheduler.submit(scheduler.new_request("http://h.test/a"))
    for attempt in range(3):
        assigned, refused = scheduler.dispatch(1)
        if attempt:
            assert not assigned and not refused  # waiting its retry delay
            now[0] += 2.0 ** (attempt - 1)  # 1 s, then 2 s
            assigned, refused = scheduler.dispatch(1)
        [robots] = assigned
        scheduler.finished(robots)
        take_answer(scheduler, robots, None, None, True, "connection failed: refused", "connection")
    _, refused = scheduler.dispatch(1)
    assert [kind for _, _, kind in refused] == ["connection"]
    assert now[0] == 3.0  # not the 30 s + 60 s of robots.txt's slow retries


def test_broad_crawls_get_trap_guards_unless_set() -> None:
    broad = Settings(scope="any", max_depth=2)
    broad.apply_scope_defaults()
    assert broad.max_depth == 2  # the user's own
    assert broad.max_pages_per_host == BROAD_CRAWL_DEFAULTS["max_pages_per_host"]
    narrow = Settings()
    narrow.apply_scope_defaults()
    assert narrow.max_depth is None and narrow.max_pages_per_host is None


def test_hosts_waiting_for_robots_are_counted() -> None:
    now = [0.0]
    scheduler = Scheduler(clock=lambda: now[0], robots_retry_delay=30.0)
    scheduler.submit(scheduler.new_request("http://h.test/a"))
    [robots], _ = scheduler.dispatch(1)
    scheduler.finished(robots)
    take_answer(scheduler, robots, 503, None, True, "HTTP 503", "http_5xx")
    assert scheduler.hosts_waiting() == 1  # for 30 s: the progress line shows it
    now[0] = 31.0
    assert scheduler.hosts_waiting() == 0


def test_pace_is_additive_increase_multiplicative_decrease() -> None:
    pace, run = next_pace(0.0, 0, True, cap=60)
    assert (pace, run) == (FIRST_PACE, 0)  # the first 429: one request every 0.5 s
    pace, run = next_pace(pace, run, True, cap=60)
    assert pace == 2 * FIRST_PACE  # halved rate again
    assert next_pace(40.0, 2, True, cap=60) == (60, 0)  # capped
    assert next_pace(1.0, 0, False, cap=60) == (1.0, 1)  # one good answer is not a run
    assert next_pace(4.0, 0, False, cap=60) == (pytest.approx(1 / (0.25 + RATE_STEP)), 0)
    # (at a spacing over a second it is: it took that long to get)
    paces = [1.0]
    run = 0
    while paces[-1]:
        pace, run = next_pace(paces[-1], run, False, cap=60)
        if pace != paces[-1]:
            paces.append(pace)
    # Each run of GOOD_RUN answers adds RATE_STEP requests a second; under
    # FIRST_PACE / 2 the host is at its own pace.
    assert paces == [1.0, pytest.approx(1 / (1 + RATE_STEP)), 0.0]
    assert next_pace(0.0, 7, False, cap=60) == (0.0, 0)


def test_retry_after_and_timeouts_slow_the_host() -> None:
    now = [100.0]
    scheduler = Scheduler(clock=lambda: now[0], robots=False, max_pace=30)
    request = scheduler.new_request("http://h.test/a")
    scheduler.submit(request)
    host = scheduler.hosts["http://h.test"].group
    scheduler.answered(request, answer(status=429, retry_after="300"))
    assert host.pace == FIRST_PACE and host.next_start == 130.0  # Retry-After, capped
    now[0], request.sent_at = 101.0, 100.5  # a request sent after that cut
    scheduler.answered(request, answer(error_kind="timeout"))
    assert host.pace == FIRST_PACE  # one timeout is not a pattern
    scheduler.answered(request, answer(error_kind="timeout"))
    assert host.pace == 2 * FIRST_PACE
    scheduler.answered(request, answer(error_kind="connection"))  # refused: says nothing
    assert host.pace == 2 * FIRST_PACE and scheduler.pace_changes == 2


def test_answers_to_one_moment_of_overload_cut_the_pace_once() -> None:
    """Eight requests in flight all answer 429: that is one event, one cut
    (the log once had eight pace lines in one millisecond, 0.5 s to 60 s).
    A request sent after the cut may cut again."""
    now = [100.0]
    scheduler = Scheduler(clock=lambda: now[0], robots=False)
    for i in range(8):
        scheduler.submit(scheduler.new_request(f"http://h.test/{i}"))
    assigned, _ = scheduler.dispatch(8)
    assert len(assigned) == 8
    now[0] = 100.1
    for request in assigned:
        scheduler.answered(request, answer(status=429))
    host = scheduler.hosts["http://h.test"].group
    assert host.pace == FIRST_PACE and scheduler.pace_changes == 1
    later = scheduler.new_request("http://h.test/later")
    later.sent_at = 100.2  # after the cut
    now[0] = 100.3
    scheduler.answered(later, answer(status=429))
    assert host.pace == 2 * FIRST_PACE and scheduler.pace_changes == 2


def test_the_delay_counts_from_when_the_worker_started_the_download() -> None:
    """A request that waited in its worker does not bring the next one
    closer to it than the delay (the server sees starts, not dispatches)."""
    now = [0.0]
    scheduler = Scheduler(clock=lambda: now[0], robots=False, delay=1.0)
    for path in ("a", "b", "c"):
        scheduler.submit(scheduler.new_request(f"http://h.test/{path}"))
    [first], _ = scheduler.dispatch(4)
    scheduler.finished(first, started=0.3)  # its worker began it 0.3 s after dispatch
    now[0] = 1.0
    assert scheduler.dispatch(4) == ([], [])  # one second after the dispatch: too soon
    now[0] = 1.3
    [second], _ = scheduler.dispatch(4)
    scheduler.finished(second)  # no start time known (a worker that died): the dispatch's
    now[0] = 2.3
    assert len(scheduler.dispatch(4)[0]) == 1


def test_one_at_a_time_a_paced_host_waits_the_pace_after_the_download_ended() -> None:
    """A host that answered 429, fetched one at a time: its next start waits
    the pace after the last download ended (as the master saw it), as a
    --delay does, not after the worker's start of it: a request held up on
    its way reaches the server late, and the next must not follow it closer
    than the pace (the server once saw two 0.40 s apart at a pace of 0.5)."""
    now = [0.0]
    scheduler = Scheduler(clock=lambda: now[0], robots=False, host_concurrency=1)
    for path in ("a", "b", "c"):
        scheduler.submit(scheduler.new_request(f"http://h.test/{path}"))
    [first], _ = scheduler.dispatch(4)
    now[0] = 0.1
    scheduler.answered(first, answer(status=429))  # pace FIRST_PACE, held from now
    scheduler.finished(first, started=0.0)
    now[0] = 0.1 + FIRST_PACE
    [second], _ = scheduler.dispatch(4)
    now[0] = 0.7 + FIRST_PACE  # its download: started at once, ended 0.6 s later
    scheduler.finished(second, started=0.1 + FIRST_PACE)
    scheduler.answered(second, answer(status=200))
    now[0] = 0.1 + 2 * FIRST_PACE + 0.1  # the pace after its start, not after its end
    assert scheduler.dispatch(4) == ([], [])
    now[0] = 0.7 + 2 * FIRST_PACE
    assert len(scheduler.dispatch(4)[0]) == 1


def test_a_leased_url_of_a_free_host_goes_out_without_blocking_the_host(tmp_path: Path) -> None:
    """The common case of dispatch: a URL leased for a host with room goes
    straight out; the host is blocked in the frontier only when it must wait
    (its limit reached), and unblocked when a page comes back."""
    from mpcrawler.frontier import LocalFrontier
    from mpcrawler.frontier.base import FOREVER

    frontier = LocalFrontier(tmp_path, fsync=False)
    blocks: list[tuple[str, float]] = []
    block = frontier.block
    frontier.block = lambda host, until: (blocks.append((host, until)), block(host, until))[1]  # type: ignore[method-assign]
    for i in range(6):
        frontier.admit(f"http://a.test/{i}")
    scheduler = Scheduler(clock=lambda: 0.0, robots=False, host_concurrency=2, frontier=frontier)
    assigned, _ = scheduler.dispatch(8)
    assert [r.url for r in assigned] == ["http://a.test/0", "http://a.test/1"]
    assert blocks == [("http://a.test", FOREVER)]  # at its limit: once, after the second
    scheduler.finished(assigned[0])
    assert blocks[1:] == [("http://a.test", 0.0)]
    [third], _ = scheduler.dispatch(8)
    assert third.url == "http://a.test/2"
    assert blocks[2:] == [("http://a.test", FOREVER)]
    frontier.close()


def test_rules_a_parked_host_let_go_of_are_freed_at_once() -> None:
    """A parsed robots.txt holds no reference cycle: the rules of a host
    let go of are freed when it goes, not at the cycle collector's rare
    oldest-generation pass (a broad crawl held thousands of dead ones)."""
    import gc
    import weakref

    from mpcrawler.robots.rules import RobotsRules

    text = (
        "User-agent: *\nDisallow: /private\nAllow: /private/ok\n\nUser-agent: other\nDisallow: /\n"
    )
    gc.disable()
    try:
        rules = RobotsRules.parse(text, "mpcrawler")
        assert not rules.allows("http://h.test/private/x") and rules.allows(
            "http://h.test/private/ok"
        )
        parsed = weakref.ref(rules.parsed)  # type: ignore[arg-type]
        del rules
        assert parsed() is None
    finally:
        gc.enable()


def test_a_robots_txt_older_than_its_ttl_is_fetched_again_before_the_next_request() -> None:
    """RFC 9309 2.4: a copy is used for --robots-ttl at most.  Past it, the
    host's next request waits for a new fetch, whose rules then hold; one
    that cannot be fetched again stands (unreachable) until the next try."""
    now = [0.0]
    scheduler = Scheduler(clock=lambda: now[0], robots_ttl=10.0, max_hosts=1)

    def robots_then(answer: tuple[int | None, str | None, bool]) -> list[str]:
        [robots], _ = scheduler.dispatch(4)
        assert robots.kind == "robots"
        scheduler.finished(robots)
        take_answer(scheduler, robots, *answer)
        assigned, refused = scheduler.dispatch(4)
        for request in assigned:
            scheduler.finished(request)
        return [r.url for r in assigned] + [f"refused {r.url}" for r, _, _ in refused]

    scheduler.submit(scheduler.new_request("http://h.test/a"))
    assert robots_then((200, "User-agent: *\nDisallow: /b\n", False)) == ["http://h.test/a"]
    now[0] = 9.9  # still fresh: no fetch
    scheduler.submit(scheduler.new_request("http://h.test/b"))
    scheduler.submit(scheduler.new_request("http://h.test/c"))
    assigned, refused = scheduler.dispatch(4)
    assert [r.url for r in assigned] == ["http://h.test/c"] and len(refused) == 1
    scheduler.finished(assigned[0])
    now[0] = 10.0  # expired: the next request waits for robots.txt, whose new rules hold
    scheduler.submit(scheduler.new_request("http://h.test/b"))
    scheduler.submit(scheduler.new_request("http://h.test/d"))
    assert robots_then((200, "User-agent: *\nDisallow: /d\n", False)) == [
        "http://h.test/b",
        "refused http://h.test/d",
    ]
    visit(scheduler, "http://other.test/")  # parks h.test, with its copy's age
    assert "http://h.test" not in scheduler.hosts
    now[0] = 20.0  # expired while parked; the new fetch fails: the copy stands
    scheduler.submit(scheduler.new_request("http://h.test/e"))
    scheduler.submit(scheduler.new_request("http://h.test/d"))
    assert robots_then((503, None, False)) == ["http://h.test/e", "refused http://h.test/d"]
    host = scheduler.hosts["http://h.test"]
    assert host.robots_state == "ready" and host.robots_expires == 20.0 + 10.0  # the TTL, at most


def test_without_a_ttl_a_robots_txt_is_read_once_a_run() -> None:
    now = [0.0]
    scheduler = Scheduler(clock=lambda: now[0])
    visit(scheduler, "http://h.test/")
    now[0] = 1e9
    scheduler.submit(scheduler.new_request("http://h.test/a"))
    assigned, _ = scheduler.dispatch(4)
    assert [r.kind for r in assigned] == ["page"]


def test_the_robots_verdict_of_each_kind_of_answer() -> None:
    """What one robots.txt answer makes of its host, as a pure decision."""
    s = Scheduler(robots_retry_delay=30.0, retries=2, retry_delay=1.0, robots_ttl=3600.0)

    def verdict(status: int | None, kind: str | None = None, **how: object) -> Verdict:
        has_body, failed = status is not None and status < 300, status is None or status >= 500
        failures, refresh = int(how.get("failures", 0)), bool(how.get("refresh", False))
        return robots_verdict(status, has_body, failed, kind, failures, refresh, s)

    assert verdict(200) == Verdict("rules")
    assert verdict(404) == verdict(403) == Verdict("open")  # no usable robots.txt: no rules
    assert verdict(503, "http_5xx") == Verdict("retry", 30.0)
    assert verdict(503, "http_5xx", failures=1) == Verdict("retry", 60.0)  # doubling
    assert verdict(503, "http_5xx", failures=2) == Verdict("failed")  # the third failure
    assert verdict(None, "tls") == verdict(None, "dns") == Verdict("failed")  # at once
    assert verdict(None, "connection") == Verdict("retry", 1.0)  # as a page's retry
    assert verdict(None, "connection", failures=2) == Verdict("failed")  # past --retries
    assert verdict(None, "tls", refresh=True) == Verdict("kept", 30.0)  # its copy stands
    assert verdict(503, "http_5xx", failures=8, refresh=True) == Verdict("kept", 3600.0)


def sub(scheduler: Scheduler, url: str) -> Request:
    """A browser's request for ``url`` (--render), as the pool makes it."""
    return scheduler.new_request(url, kind="sub", worker=0, permit=1)


def test_a_browsers_request_starts_with_no_slot_free_and_waits_for_robots_and_delay() -> None:
    """A browser's request takes no slot (its worker's renderer makes it),
    but it waits for the host's robots.txt (which needs a slot), its delay
    and its concurrency like any other; a page held behind it still needs
    a slot."""
    now = [0.0]
    scheduler = Scheduler(clock=lambda: now[0], delay=1.0, host_concurrency=1)
    scheduler.submit(sub(scheduler, "http://h.test/app.js"))
    assert scheduler.dispatch(0) == ([], [])  # robots.txt first, and it needs a slot
    assert scheduler.next_event(0) is None  # nothing starts before a slot is free
    [robots], _ = scheduler.dispatch(1)
    assert robots.kind == "robots"
    scheduler.finished(robots)
    take_answer(scheduler, robots, 200, "User-agent: *\nDisallow: /private/\n", False)
    [script], _ = scheduler.dispatch(0)  # no slot free: it starts all the same
    assert script.kind == "sub" and scheduler.subs_held == 0
    scheduler.submit(sub(scheduler, "http://h.test/api.json"))
    scheduler.submit(scheduler.new_request("http://h.test/page"))
    assert scheduler.dispatch(0) == ([], [])  # one at a time: the script is in flight
    scheduler.finished(script, started=0.0)
    assert scheduler.next_event(0) == 1.0  # the delay, even with no slot free
    now[0] = 1.0
    [api], _ = scheduler.dispatch(0)
    assert api.url == "http://h.test/api.json"
    scheduler.finished(api, started=1.0)
    now[0] = 2.0
    assert scheduler.dispatch(0) == ([], [])  # the page behind them needs a slot
    assert scheduler.next_event(0) is None  # and none is free: the master waits for one
    [page], _ = scheduler.dispatch(1)
    assert page.url == "http://h.test/page"
    scheduler.finished(page, started=2.0)
    now[0] = 3.0
    scheduler.submit(sub(scheduler, "http://h.test/private/x.js"))
    assigned, [(refused, reason, kind)] = scheduler.dispatch(0)
    assert (
        not assigned
        and refused.kind == "sub"
        and (reason, kind)
        == (
            "disallowed by robots.txt",
            "robots",
        )
    )
    assert scheduler.subs_held == 0 and scheduler.queued == 0


def test_a_hosts_probe_follows_its_first_page_once() -> None:
    """--soft-404-probe: after a host's first page, its probe goes next,
    ahead of the host's other requests, once; its 200 with a text is the
    host's soft-404 answer.  Not when robots.txt keeps the path out."""
    scheduler = Scheduler(clock=lambda: 0.0, probe=True, robots=False)
    for path in ("/", "/a", "/b"):
        scheduler.submit(scheduler.new_request("http://h.test" + path))
    first, _ = scheduler.dispatch(1)
    assert [r.url for r in first] == ["http://h.test/"]
    scheduler.finished(first[0])
    second, _ = scheduler.dispatch(1)
    (probe,) = second
    assert probe.kind == "probe" and probe.url.startswith("http://h.test/mpcrawler-soft-404")
    scheduler.finished(probe)
    assert scheduler.soft_404_of("http://h.test") is None
    scheduler.probed(probe, PageResult(probe.id, probe.url, "probe", status=200, text_digest="d"))
    assert scheduler.soft_404_of("http://h.test") == "d"
    rest: list[Request] = []
    while assigned := scheduler.dispatch(4)[0]:
        rest += assigned
        for request in assigned:
            scheduler.finished(request)
    assert [r.kind for r in rest] == ["page", "page"]
    closed = Scheduler(clock=lambda: 0.0, probe=True)
    closed.submit(closed.new_request("http://k.test/"))
    assigned, _ = closed.dispatch(1)
    take_answer(closed, assigned[0], 200, "User-agent: *\nDisallow: /mpcrawler", False)
    closed.finished(assigned[0])
    kinds = []
    while assigned := closed.dispatch(4)[0]:
        kinds += [r.kind for r in assigned]
        for request in assigned:
            closed.finished(request)
    assert kinds == ["page"]
    off = Scheduler(clock=lambda: 0.0, robots=False)
    off.submit(off.new_request("http://h.test/"))
    assert [r.kind for r in off.dispatch(4)[0]] == ["page"] and not off.dispatch(4)[0]


def test_a_paused_host_starts_nothing_keeps_its_urls_and_is_never_parked(tmp_path: Path) -> None:
    """``control pause-host``: its URLs stay in the frontier, which is told
    to hold them; the other hosts go on; a resume lets them out again.
    Paused, an idle host is kept in memory over the cap (its resume must
    find it to unblock it in the frontier)."""
    from mpcrawler.frontier import LocalFrontier

    frontier = LocalFrontier(tmp_path, fsync=False)
    for i in range(3):
        frontier.admit(f"http://a.test/{i}")
        frontier.admit(f"https://b.test:8443/{i}")
    scheduler = Scheduler(clock=lambda: 0.0, robots=False, frontier=frontier, max_hosts=1)
    scheduler.pause_host("b.test")
    started = []
    while True:
        assigned, _ = scheduler.dispatch(8)
        if not assigned:
            break
        for request in assigned:
            started.append(request.url)
            scheduler.finished(request)
    assert started == [f"http://a.test/{i}" for i in range(3)]
    assert "https://b.test:8443" in scheduler.hosts  # held, and kept over the cap of 1
    assert len(frontier) + scheduler.queued == 3
    scheduler.pause_host("b.test", paused=False)
    assigned, _ = scheduler.dispatch(8)
    assert sorted(r.url for r in assigned) == [f"https://b.test:8443/{i}" for i in range(3)]
    frontier.close()


def test_slowed_groups_are_named_the_latest_first_and_bounded() -> None:
    from mpcrawler.master.pacing import SLOWED_KEPT

    now = [0.0]
    scheduler = Scheduler(clock=lambda: now[0], robots=False)
    for i in range(SLOWED_KEPT + 10):
        request = scheduler.new_request(f"http://h{i}.test/")
        scheduler.answered(request, PageResult(0, request.url, status=429))
    assert len(scheduler.slowed) == SLOWED_KEPT
    assert next(reversed(scheduler.slowed)) == f"h{SLOWED_KEPT + 9}.test"
    request = scheduler.new_request(f"http://h{SLOWED_KEPT + 9}.test/")
    now[0] = 1000.0  # past its hold
    for _ in range(200):  # good answers bring its pace back to its own
        scheduler.answered(request, PageResult(0, request.url, status=200))
    assert f"h{SLOWED_KEPT + 9}.test" not in scheduler.slowed
