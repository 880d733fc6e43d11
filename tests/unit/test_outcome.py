"""The master's decisions as pure functions: retry, follow, record (no process)."""

from __future__ import annotations

import email.utils

import pytest

from mpcrawler.master import outcome
from mpcrawler.master.request import Request
from mpcrawler.messages import Link, PageResult, link_parts

LIMITS = outcome.Redirect(max_redirects=2, max_url_length=40)


def request(url: str = "http://a.test/x", **fields: object) -> Request:
    return Request(1, url, "http://a.test", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "transient", "attempts", "stopping", "expected"),
    [
        (503, False, 0, False, True),
        (429, False, 1, False, True),
        (503, False, 2, False, False),  # retries spent
        (None, True, 0, False, True),  # a connection reset
        (None, False, 0, False, False),  # a TLS failure: no retry mends it
        (404, False, 0, False, False),
        (503, False, 0, True, False),  # stopping: record it now
    ],
)
def test_should_retry(
    status: int | None, transient: bool, attempts: int, stopping: bool, expected: bool
) -> None:
    result = PageResult(1, "http://a.test/x", status=status, transient=transient)
    assert outcome.should_retry(result, attempts, 2, stopping) is expected


def test_retry_after_as_seconds_or_a_date() -> None:
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 90, usegmt=True)
    assert outcome.parse_retry_after("120", now) == 120.0
    assert outcome.parse_retry_after(date, now) == pytest.approx(90, abs=1)
    assert outcome.parse_retry_after(email.utils.formatdate(now - 50, usegmt=True), now) == 0.0
    assert outcome.parse_retry_after("soon", now) is None
    assert outcome.parse_retry_after(None, now) is None


def test_backoff_doubles_heeds_retry_after_and_is_capped() -> None:
    assert [outcome.backoff(a, 1.0, None, 60) for a in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert outcome.backoff(1, 1.0, 30.0, 60) == 30.0
    assert outcome.backoff(1, 1.0, 3600.0, 60) == 60


def test_redirect_refusals_in_order() -> None:
    fresh = request()
    assert outcome.redirect_refusal("http://a.test/y", fresh, LIMITS, None, False) is None
    chained = request(hops=["http://a.test/1", "http://a.test/2"])
    assert outcome.redirect_refusal("http://a.test/y", chained, LIMITS, None, False) == (
        "more than 2 redirects"
    )
    assert outcome.redirect_refusal("http://a.test/" + "y" * 40, fresh, LIMITS, None, False) == (
        "URL too long"
    )
    assert (
        outcome.redirect_refusal("http://b.test/", fresh, LIMITS, "scope", False) == "out of scope"
    )
    assert outcome.redirect_refusal("http://a.test/x", fresh, LIMITS, None, False) == (
        "redirect loop"
    )
    looped = request(hops=["http://a.test/1"], origin="http://a.test/0")
    assert outcome.redirect_refusal("http://a.test/0", looped, LIMITS, None, False) == (
        "redirect loop"
    )
    assert outcome.redirect_refusal("http://a.test/y", fresh, LIMITS, None, True) == "already seen"


def test_a_lost_request_is_tried_again_until_it_crashed_three_workers() -> None:
    assert [outcome.lost_verdict(n) for n in (1, 2)] == [None, None]
    assert outcome.lost_verdict(3) == "crashed 3 worker processes"


def test_robots_failed_only_without_an_answer() -> None:
    assert outcome.robots_failed(PageResult(1, "u", error="refused", error_kind="connection"))
    assert outcome.robots_failed(PageResult(1, "u", status=None, transient=True))
    assert not outcome.robots_failed(PageResult(1, "u", status=503))
    assert not outcome.robots_failed(PageResult(1, "u", status=200, body="User-agent: *"))


def test_http_errors_are_named_by_class() -> None:
    assert outcome.http_error(PageResult(1, "u", status=404)) == ("HTTP 404", "http_4xx")
    assert outcome.http_error(PageResult(1, "u", status=200)) == (None, None)
    own = PageResult(1, "u", status=200, error="analyzer: boom", error_kind="analyzer")
    assert outcome.http_error(own) == ("analyzer: boom", "analyzer")


def test_depth_priority_is_scrapys_convention() -> None:
    assert outcome.link_priority(5, 2, 0) == 5
    assert outcome.link_priority(0, 3, 1) == -3  # breadth-first: deeper goes later
    assert outcome.link_priority(0, 3, -1) == 3  # depth-first


def test_the_record_of_a_redirect_chain() -> None:
    chain = request(
        "http://a.test/final",
        origin="http://a.test/start",
        hops=["http://a.test/final"],
        depth=2,
        priority=7,
        attempts=1,
    )
    result = PageResult(
        1,
        "http://a.test/final",
        worker="D1",
        status=200,
        content_type="text/html",
        bytes=10,
        elapsed_ms=1.5,
        links=3,
        all_links=[("http://a.test/l", True, 2)],
        item={"title": "T", "extra": 1},
    )
    record = outcome.build_record(
        chain, result, new_links=2, fetched_at=12.34567, record_links=True, extra={"note": "n"}
    )
    assert record == {
        "url": "http://a.test/start",
        "final_url": "http://a.test/final",
        "status": 200,
        "depth": 2,
        "priority": 7,
        "content_type": "text/html",
        "bytes": 10,
        "title": "T",
        "links": 3,
        "new_links": 2,
        "elapsed_ms": 1.5,
        "worker": "D1",
        "error": None,
        "error_kind": None,
        "redirects": 1,
        "attempts": 2,
        "fetched_at": 12.346,
        "note": "n",
        "outlinks": [{"url": "http://a.test/l", "in_scope": True, "priority": 2}],
        "extra": 1,
    }
    assert outcome.is_ok(result) and not outcome.is_ok(PageResult(1, "u", status=301))


def test_links_are_strings_or_links_with_an_int_priority() -> None:
    assert link_parts("/a") == ("/a", 0)
    assert link_parts(Link("/a", 3)) == ("/a", 3)
    assert link_parts(("/a", -2)) == ("/a", -2)
    for bad in (Link("/a", "3"), ("/a",), 7, Link("/a", True)):  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            link_parts(bad)  # type: ignore[arg-type]


def test_a_hosts_soft_404_answer_is_a_200_with_a_text() -> None:
    def answered(**fields: object) -> PageResult:
        return PageResult(1, "http://a.test/p", **fields)  # type: ignore[arg-type]

    assert outcome.soft_404_answer(answered(status=200, text_digest="d")) == "d"
    for no in (
        None,
        answered(status=404, text_digest="d"),
        answered(status=301, text_digest=None),
        answered(status=200, text_digest=None),  # an empty page
        answered(status=200, text_digest="d", error="connection reset"),
    ):
        assert outcome.soft_404_answer(no) is None
    page = answered(status=200, text_digest="d")
    assert outcome.is_soft_404(page, "d")
    assert not outcome.is_soft_404(page, "e") and not outcome.is_soft_404(page, None)
    assert not outcome.is_soft_404(answered(status=404, text_digest="d"), "d")
    one, two = outcome.probe_path(), outcome.probe_path()
    assert one != two and one.startswith("/mpcrawler-soft-404-probe-")
