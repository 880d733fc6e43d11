"""WorkerPool with real worker processes."""

from __future__ import annotations

from mpcrawler.master.pool import WorkerPool
from mpcrawler.settings import Settings
from mpcrawler.web.urls import Scope


def test_a_stop_during_start_up_forks_no_more_workers() -> None:
    """A stop signal while the workers are being started: none more is
    forked (--workers 100000 went on forking for 7 minutes after SIGTERM)."""
    settings = Settings(seeds=["http://127.0.0.1:9/"], workers=6, threads=1)
    scope = Scope.from_seeds(settings.seeds, [], "hosts", [])
    pool = WorkerPool(settings.workers, (settings.to_dict(secrets=True), scope.to_dict(), []))
    asked: list[int] = []

    def stop() -> bool:  # the signal comes while the third worker is asked for
        asked.append(len(pool.workers))
        return len(asked) > 2

    try:
        pool.start(stop)
        assert len(pool.workers) == 2 and len(asked) == 3
    finally:
        pool.close()
    assert not any(w.process.is_alive() for w in pool.workers.values())
