"""How a run ends (master/ends.py): its budgets, a job that fetched
nothing, the pages a retry fetches again; the --on-finish environment
(output/onfinish.py) and the sizes the options take (cli/values.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mpcrawler.cli.parser import OUTCOMES
from mpcrawler.cli.values import _size
from mpcrawler.master.ends import (
    RunBudget,
    fetched_nothing,
    format_bytes,
    format_duration,
    retryable,
)
from mpcrawler.output.onfinish import environment
from mpcrawler.settings import Settings


def test_no_budget_is_never_spent() -> None:
    assert RunBudget().spent(10**9, 10**15) is None


def test_the_budget_spent_is_named_as_its_option_takes_it() -> None:
    budget = RunBudget.from_settings(Settings(max_duration=7200, max_total_bytes=5 << 30))
    assert budget.spent(7199.9, (5 << 30) - 1) is None
    assert budget.spent(7200, 0) == "--max-duration 2h"
    assert budget.spent(0, 5 << 30) == "--max-total-bytes 5GB"
    assert RunBudget(max_duration=5400).spent(6000, 0) == "--max-duration 1h30m"


@pytest.mark.parametrize(
    "seconds, text", [(90, "1m30s"), (30, "30s"), (1.5, "1.5s"), (86400, "1d"), (1800, "30m")]
)
def test_durations_read_as_the_option_takes_them(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    "count, text", [(600 << 10, "600KB"), (500 << 20, "500MB"), (5 << 30, "5GB"), (1000, "1000")]
)
def test_sizes_read_as_the_option_takes_them(count: int, text: str) -> None:
    assert format_bytes(count) == text
    assert _size(text) == count


@pytest.mark.parametrize(
    "text, count",
    [("4096", 4096), ("600K", 600 << 10), ("600KB", 600 << 10), ("5GB", 5 << 30),
     ("2GiB", 2 << 30), ("10m", 10 << 20), (" 7 ", 7), ("12B", 12)],
)  # fmt: skip
def test_a_size_takes_k_m_g_t_with_or_without_b(text: str, count: int) -> None:
    assert _size(text) == count


@pytest.mark.parametrize("text", ["", "KB", "5XB", "1.5G", "5 G B", "G5"])
def test_what_is_no_size_is_said_in_one_line(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"^not a size \(4096, 600K"):
        _size(text)


def test_the_finish_commands_environment() -> None:
    job = Path("/jobs/nightly")
    found = environment(
        3, OUTCOMES[3], job, job / "pages.jsonl", {"pages": 71, "errors": 2}, "--max-duration 2h"
    )
    assert found == {
        "MPCRAWLER_EXIT_STATUS": "3",
        "MPCRAWLER_OUTCOME": "budget",
        "MPCRAWLER_JOB_DIR": "/jobs/nightly",
        "MPCRAWLER_OUT": "/jobs/nightly/pages.jsonl",
        "MPCRAWLER_STATS": "/jobs/nightly/stats.json",
        "MPCRAWLER_PAGES": "71",
        "MPCRAWLER_ERRORS": "2",
        "MPCRAWLER_BUDGET": "--max-duration 2h",
    }
    failed = environment(1, OUTCOMES[1], None, None, {})
    assert failed["MPCRAWLER_OUTCOME"] == "failed" and failed["MPCRAWLER_JOB_DIR"] == ""
    assert environment(130, OUTCOMES[130], job, None, {})["MPCRAWLER_OUTCOME"] == "interrupted"
    assert (OUTCOMES[0], OUTCOMES[4]) == ("finished", "nothing-fetched")


def test_a_job_fetched_nothing_when_no_record_has_an_answer() -> None:
    assert fetched_nothing({"none": 3})
    assert not fetched_nothing({"none": 3, "200": 1})
    assert not fetched_nothing({"404": 1})  # a server answered: the site is up
    assert not fetched_nothing({})  # nothing recorded (a seed refused by the rules)
    assert fetched_nothing({"none": 2, "200": 0})


@pytest.mark.parametrize(
    "record, again",
    [
        ({"url": "u", "status": None, "error": "refused", "error_kind": "connection"}, True),
        ({"url": "u", "status": None, "error": "x", "error_kind": "dns"}, True),
        ({"url": "u", "status": None, "error": "x", "error_kind": "timeout"}, True),
        ({"url": "u", "status": 503, "error": "HTTP 503", "error_kind": "http_5xx"}, True),
        ({"url": "u", "status": 429, "error": "HTTP 429", "error_kind": "http_4xx"}, True),
        ({"url": "u", "status": 404, "error": "HTTP 404", "error_kind": "http_4xx"}, False),
        ({"url": "u", "status": 200, "error": None, "error_kind": None}, False),
        ({"url": "u", "status": None, "error": "x", "error_kind": "too_large"}, False),
        ({"url": "u", "status": 200, "error": "pdf: damaged", "error_kind": "pdf"}, False),
        ({"url": "u", "status": None, "error": "x", "error_kind": "worker_crash"}, False),
        ({"url": "u", "kind": "embed", "status": None, "error": "x", "error_kind": "dns"}, False),
    ],
)
def test_what_a_retry_of_the_failed_pages_fetches_again(record: dict, again: bool) -> None:
    assert retryable(record) is again
