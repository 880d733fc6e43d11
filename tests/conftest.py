"""Shared fixtures: real loopback servers, a fresh shared-crawl name."""

from __future__ import annotations

import compileall
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings
from support import ROOT

from mpcrawler.testing.site import SiteServer, TestSite, serve_site

# No wall-clock deadline on a hypothesis example: a busy machine (CI, other
# tests' processes) makes any time limit fail tests that are correct.
settings.register_profile("mpcrawler", deadline=None)
settings.load_profile("mpcrawler")

# The fast subset (``-m "not slow"``, under a minute): the unit tests but
# the few that run long.  The end-to-end and contract tests (real processes,
# servers and Redis) are ``slow``: the whole suite runs them all.
SLOW_DIRS = ("e2e", "contract")
SLOW_UNIT_TESTS = frozenset(
    {
        "test_memory_is_bounded_by_cache_size",
        "test_fuzz_target",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    """Compile the project's bytecode once, before the test processes start.

    The suite starts some 2,000 Python processes (crawls, their forkservers,
    the test processes), each importing mpcrawler from this tree.  Where the
    environment sets PYTHONDONTWRITEBYTECODE, none of them caches what it
    compiles, and each compiled the package again: the suite on 2 cores took
    575 s of CPU, and 484 s with the bytecode (process accounting).  The
    files go to ``__pycache__``, which git ignores, and Python recompiles
    any whose source changed."""
    if hasattr(config, "workerinput"):  # an xdist worker: its controller did it
        return
    for folder in ("mpcrawler", "tests", "benchmarks"):
        compileall.compile_dir(ROOT / folder, quiet=2)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = item.path.parent.name
        if folder in SLOW_DIRS or getattr(item, "originalname", item.name) in SLOW_UNIT_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def crawl() -> Iterator[str]:
    """A fresh shared-crawl name; its Redis keys are deleted afterwards."""
    import redis_server

    name = f"t-{uuid.uuid4().hex[:8]}"
    yield name
    redis_server.forget(name)


@pytest.fixture
def site_300() -> Iterator[SiteServer]:
    with serve_site(TestSite(pages=300, size=4_000)) as server:
        yield server


@pytest.fixture
def make_site() -> Iterator[Any]:
    """Start any number of sites; all are stopped at the end of the test."""
    stack: list[Any] = []

    def start(site: TestSite, **kwargs: Any) -> SiteServer:
        manager = serve_site(site, **kwargs)
        stack.append(manager)
        return manager.__enter__()

    yield start
    for manager in reversed(stack):
        manager.__exit__(None, None, None)
