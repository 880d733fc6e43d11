"""The revisit decisions, pure: validators on the wire, a page's change, its
next interval, the state kept, the WARC record a revisit becomes."""

from __future__ import annotations

import argparse

import pytest

from mpcrawler.cli import _duration
from mpcrawler.messages import PageResult, Prior
from mpcrawler.revisits.decisions import (
    Revisits,
    RevisitState,
    classify,
    next_interval,
    observe,
    schedule_from_records,
)
from mpcrawler.revisits.records import revisit_of
from mpcrawler.web.sitemaps import lastmod_time
from mpcrawler.web.validators import conditional_headers, http_date
from mpcrawler.worker.downloader import Exchange, Response

OK = RevisitState(fetched=100.0, status=200, digest="sha1:A", etag='"e"', size=500)


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        ("Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ("Sunday, 06-Nov-94 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT"),  # RFC 850
        ("Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 GMT"),  # asctime
        ("Sun, 06 Nov 1994 10:49:37 +0200", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ("yesterday", None),  # StormCrawler #673 sent what it could not read
        ("", None),
    ],
)
def test_if_modified_since_is_always_an_imf_fixdate(given: str, sent: str | None) -> None:
    assert http_date(given) == sent
    headers = conditional_headers(None, given)
    assert headers.get("If-Modified-Since") == sent


def test_conditional_headers_send_the_etag_as_stored() -> None:
    assert conditional_headers('W/"x-1"', None) == {"If-None-Match": 'W/"x-1"'}
    assert conditional_headers('"bad\r\nInjected: 1"', None) == {}
    assert conditional_headers(None, None) == {}
    # "*" is no entity-tag: If-None-Match: * would match any edition of the page.
    assert conditional_headers("*", None) == conditional_headers(" W/* ", None) == {}


@pytest.mark.parametrize(
    ("prior", "status", "digest", "change"),
    [
        (None, 200, "sha1:A", "new"),
        (None, 404, "sha1:N", "new"),
        (OK, 304, None, "unchanged"),
        (OK, 200, "sha1:A", "unchanged"),  # a server that ignores conditional requests
        (OK, 200, "sha1:B", "changed"),
        (OK, 404, "sha1:N", "gone"),
        (OK, 410, "sha1:N", "gone"),
        (OK, None, None, "unchanged"),  # no answer: nothing known changed
        (RevisitState(1.0, status=404, digest="sha1:N"), 404, "sha1:M", "unchanged"),
        (RevisitState(1.0, status=404, digest="sha1:N"), 200, "sha1:A", "changed"),
        (OK, 500, "sha1:E", "changed"),
    ],
)
def test_classify(prior: RevisitState | None, status: int | None, digest: str, change: str) -> None:
    assert classify(prior, status, digest) == change


def test_the_interval_adapts_within_its_bounds_only_when_continuous() -> None:
    plain = Revisits(after=3600)
    assert next_interval(OK, "changed", plain) == 0.0
    adaptive = Revisits(after=1000, continuous=True, minimum=500, maximum=1500)
    assert next_interval(None, "new", adaptive) == 1000
    state = RevisitState(1.0, interval=1000)
    assert next_interval(state, "changed", adaptive) == pytest.approx(800)
    assert next_interval(state, "unchanged", adaptive) == pytest.approx(1400)
    assert next_interval(state, "gone", adaptive) == pytest.approx(1400)
    assert next_interval(RevisitState(1.0, interval=600), "changed", adaptive) == 500
    assert next_interval(RevisitState(1.0, interval=1400), "unchanged", adaptive) == 1500
    assert Revisits(continuous=True, minimum=60, maximum=10**6).first_interval() == 86_400


def test_plain_revisits_are_due_after_the_lag_and_only_for_pages_of_earlier_passes() -> None:
    plain = Revisits(after=600)
    assert plain.lag == 600 and plain.before(5000.0) == 5000.0
    assert plain.due(RevisitState(fetched=1234.0)) == 1234.0
    continuous = Revisits(after=600, continuous=True)
    assert continuous.lag == 0 and continuous.before(5000.0) == float("inf")
    assert continuous.due(RevisitState(fetched=1234.0, interval=600)) == 1834.0


def test_state_survives_json_and_garbage_reads_as_none() -> None:
    state = RevisitState(
        1.5, 60.0, 2, 200, "sha1:A", '"e"', "Sun, 06 Nov 1994 08:49:37 GMT", 9, "<urn:x>", "d", "u"
    )
    assert RevisitState.from_json(state.to_json()) == state
    assert RevisitState.from_json(RevisitState(1.0).to_json()) == RevisitState(1.0)
    for bad in (None, "", "{", '{"a": 1}', "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]x"):
        assert RevisitState.from_json(bad) is None


def test_a_304_keeps_what_the_last_capture_said() -> None:
    prior = RevisitState(
        50.0,
        status=200,
        digest="sha1:A",
        etag='"e"',
        last_modified="lm",
        size=500,
        warc_id="<orig>",
        warc_date="2026",
        warc_uri="http://h/",
    )
    result = PageResult(1, "http://h/", status=304, etag='"e"', warc_id="<rev>", revisit="x")
    change, state, fields = observe(prior, result, Revisits(after=0), now=99.0)
    assert change == "unchanged"
    assert (state.fetched, state.status, state.digest, state.size) == (99.0, 200, "sha1:A", 500)
    assert (state.warc_id, state.warc_date, state.warc_uri) == ("<orig>", "2026", "http://h/")
    assert fields["digest"] == "sha1:A" and fields["bytes_saved"] == 500
    assert fields["etag"] == '"e"' and fields["last_modified"] == "lm"
    # A changed page is a new original capture, and counts a change.
    result = PageResult(1, "http://h/", status=200, digest="sha1:B", bytes=7, warc_id="<new>")
    result.warc_date = "2027"
    change, state, fields = observe(prior, result, Revisits(after=0), 99.0, "http://h/")
    assert change == "changed" and state.changes == 1 and state.size == 7
    assert (state.warc_id, state.warc_date, state.warc_uri) == ("<new>", "2027", None)
    redirected = observe(prior, result, Revisits(after=0), 99.0, "http://h/old")[1]
    assert redirected.warc_uri == "http://h/"  # the capture is of the chain's last URL
    assert "bytes_saved" not in fields


def test_a_job_without_a_schedule_gets_one_from_its_records() -> None:
    records = [
        {"url": "http://h/", "fetched_at": 10.0, "status": 200, "digest": "sha1:A",
         "etag": '"1"', "warc_id": "<a>", "warc_date": "d1", "final_url": "http://h/",
         "depth": 0, "priority": 0},
        {"url": "http://h/s.xml", "kind": "sitemap", "fetched_at": 11.0, "status": 200,
         "depth": 1, "priority": 0},
        {"url": "http://h/", "fetched_at": 20.0, "status": 304, "digest": "sha1:A",
         "etag": '"1"', "warc_id": "<r>", "warc_date": "d2", "warc_revisit": "server-not-modified",
         "depth": 0, "priority": 0},
        {"url": "http://h/broken"},
    ]  # fmt: skip
    schedule = {r.url: r for r in schedule_from_records(records, Revisits(after=60))}
    assert sorted(schedule) == ["http://h/", "http://h/s.xml"]
    home = RevisitState.from_json(schedule["http://h/"].state)
    assert home is not None and home.fetched == 20.0 and home.etag == '"1"'
    assert (home.warc_id, home.warc_date) == ("<a>", "d1")  # the original, not the revisit
    assert schedule["http://h/"].due == 20.0 and schedule["http://h/s.xml"].kind == "sitemap"


def _response(status: int, digest: str, truncated: str | None = None) -> Response:
    exchange = Exchange(b"", "HTTP/1.1 200 OK", [], b"", truncated)
    return Response("http://h/", status, digest=digest, exchange=exchange)


def test_which_record_a_revisit_is_archived_as() -> None:
    prior = Prior('"e"', None, "sha1:A", "<orig>", "2026-01-01T00:00:00Z", "http://h/")
    revisit = revisit_of(prior, _response(304, ""))
    assert revisit is not None and revisit.profile == "server-not-modified"
    assert (revisit.refers_to, revisit.digest) == ("<orig>", "sha1:A")
    same = revisit_of(prior, _response(200, "sha1:A"))
    assert same is not None and same.profile == "identical-payload-digest"
    assert revisit_of(prior, _response(200, "sha1:B")) is None  # changed: a response
    assert revisit_of(prior, _response(200, "sha1:A", truncated="length")) is None
    assert revisit_of(None, _response(304, "")) is None
    # Never archived in full: a 304 still refers to the last fetch; a 200 is a response.
    unarchived = prior._replace(warc_id=None)
    assert revisit_of(unarchived, _response(304, "")) is not None
    assert revisit_of(unarchived, _response(200, "sha1:A")) is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("30s", 30.0), ("10m", 600.0), ("6h", 21600.0), ("1d", 86400.0), ("1.5", 1.5)],
)
def test_durations(text: str, seconds: float) -> None:
    assert _duration(text) == seconds


@pytest.mark.parametrize("text", ["", "d", "1w", "nan", "inf", "5 minutes"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        _duration(text)


def test_lastmod_times() -> None:
    assert lastmod_time("2026-01-01") == 1_767_225_600
    assert lastmod_time("2026-01-01T01:00:00+01:00") == 1_767_225_600
    assert lastmod_time("2026-01-01T00:00:00Z") == 1_767_225_600
    assert lastmod_time("last week") is None
