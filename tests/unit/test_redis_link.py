"""The shared frontier's link to Redis, on a fake client: what each failure
of a call means (down, refused, an error), the backoff, and the way back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis

from mpcrawler.errors import FrontierError, FrontierUnavailable
from mpcrawler.frontier.redis.link import BACKOFF_MAX, Link, Refused


class FakeClient:
    """register_script gives scripts that answer (or fail) as ``answers`` says."""

    def __init__(self) -> None:
        self.answers: list[Any] = []
        self.closed = False

    def register_script(self, source: str) -> Callable[..., Any]:
        def run(keys: list[str], args: list[Any]) -> Any:
            answer = self.answers.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            return answer

        return run

    def close(self) -> None:
        self.closed = True


def test_a_fault_takes_the_link_down_and_backs_off_until_an_answer() -> None:
    client = FakeClient()
    link = Link("redis://:secret@127.0.0.1:6379/0", client)
    assert "secret" not in link.url
    client.answers = [redis.ConnectionError("refused"), redis.TimeoutError("slow"), ["ok"]]
    with pytest.raises(FrontierUnavailable):
        link.step("k", [])
    assert link.down and link.reconcile
    with pytest.raises(FrontierUnavailable, match="unreachable"):
        link.check_up()
    first_retry = link._retry_at
    with pytest.raises(FrontierUnavailable):
        link.step("k", [])
    assert link._retry_at - first_retry > 0 and link._backoff <= BACKOFF_MAX
    link.reconcile = False
    assert link.step("k", []) == ["ok"]
    assert not link.down and link.reconcile  # an answer may have been lost: reconcile
    assert link.round_trips == 3
    link.check_up()


def test_the_backoff_is_capped() -> None:
    client = FakeClient()
    link = Link("redis://127.0.0.1:6379/0", client)
    client.answers = [OSError("down")] * 20
    for _ in range(20):
        with pytest.raises(FrontierUnavailable):
            link.step("k", [])
    assert link._backoff == BACKOFF_MAX


@pytest.mark.parametrize("word", ["FENCED", "LOST", "TAKEN"])
def test_a_refusal_is_named_and_leaves_the_link_up(word: str) -> None:
    client = FakeClient()
    link = Link("redis://127.0.0.1:6379/0", client)
    client.answers = [redis.ResponseError(f"{word} 123 {{}}")]
    with pytest.raises(Refused) as refused:
        link.step("k", [])
    assert refused.value.word == word and refused.value.detail == "123 {}"
    assert not link.down


def test_loading_is_an_outage_and_another_error_is_the_crawls() -> None:
    client = FakeClient()
    link = Link("redis://127.0.0.1:6379/0", client)
    client.answers = [redis.BusyLoadingError("LOADING Redis is loading the dataset")]
    with pytest.raises(FrontierUnavailable):
        link.step("k", [])
    assert link.down
    client.answers = [redis.ResponseError("ERR Error running script")]
    with pytest.raises(FrontierError, match="refused a call"):
        link.step("k", [])


def test_a_given_client_is_not_closed() -> None:
    client = FakeClient()
    Link("redis://127.0.0.1:6379/0", client).close()
    assert not client.closed
