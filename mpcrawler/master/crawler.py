"""The Crawler: one crawl, from settings to stats, on the master's parts.

``Crawler`` only wires: the settings are checked and completed, and the
parts built and joined, by :mod:`mpcrawler.master.assemble`; a run is
opened and its seeds admitted by :mod:`mpcrawler.master.start`; the
engine (:mod:`mpcrawler.master.engine`) turns; and whatever ends it, the
run is closed by :mod:`mpcrawler.master.finish`.  The control commands
that change the rules are :mod:`mpcrawler.control.rulecommands`'s.

A stop signal (SIGINT, SIGTERM, SIGHUP; see :mod:`mpcrawler.stopsignals`)
stops the dispatching, lets in-flight requests finish for ``grace`` seconds,
checkpoints and returns ``interrupted``; a second signal stops at once.
Running out of disk stops the same way and raises CrawlError.
"""

from __future__ import annotations

import logging
import signal
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import stopsignals
from ..errors import ArchiveError, CrawlError, FrontierError, SinkError, is_disk_full
from ..output.metrics import MetricsServer
from ..output.pipelines import Pipeline
from ..settings import Settings
from .assemble import Assembly, assemble, metrics_server, open_shared_frontier, prepare
from .engine import Engine
from .finish import deliver_finished, package, shutdown
from .job import Job
from .pool import PoolError
from .start import open_run, start

__all__ = ["CrawlError", "CrawlResult", "Crawler", "is_disk_full"]

log = logging.getLogger(__name__)


@dataclass
class CrawlResult:
    """What ``Crawler.run()`` returns: the summary, and where things went."""

    stats: dict[str, Any]
    out: Path
    job_dir: Path | None
    interrupted: bool = False
    already_finished: bool = False
    budget: str | None = None  # the run's budget that stopped it ("--max-duration 2h")
    fetched_nothing: str | None = None  # no page was answered: the first error, or ""


class Crawler:
    """Crawl from ``settings.seeds`` with a pool of worker processes.

    ``analyzer`` and ``downloader`` may be classes or ``pkg.mod:Class`` paths
    (they are imported again in every worker); ``pipelines`` are Pipeline
    instances or classes (constructed with the settings) that run in the
    master before the JSON Lines output.  Call ``run()`` under
    ``if __name__ == "__main__":`` in a script, as with any multiprocessing.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        analyzer: type | str | None = None,
        downloader: type | str | None = None,
        pipelines: list[Pipeline | type | str] | None = None,
    ) -> None:
        self.settings, self._specs, self._rules = prepare(settings, analyzer, downloader, pipelines)
        self.metrics: MetricsServer | None = None

    def run(self) -> CrawlResult:
        shared = open_shared_frontier(self.settings)  # before anything is written: it may fail
        try:
            self.metrics = metrics_server(self.settings)  # its port, too
        except BaseException:
            if shared is not None:
                shared.close()
            raise
        web = None
        try:
            job = Job(self.settings)
            if self.settings.watch.web_port is not None:  # a usage error: nothing written yet
                from ..cli.web import start_web_child

                s = self.settings
                web = start_web_child(
                    job.state_dir, s.watch.web_bind, s.watch.web_port, s.watch.web_token_file
                )
            try:
                if not job.open(shared=shared is not None):
                    return self._finished_before(job)
                parts = assemble(self.settings, self._specs, self._rules, job, shared, self.metrics)
                return self._execute(job, parts)
            finally:
                job.unlock()
        finally:
            if web is not None:  # its page has the run's end: it goes with the crawl
                web.terminate()
                web.wait()
            if self.metrics is not None:
                self.metrics.close()
            if shared is not None:  # left even if the job dir refused the crawl
                shared.close()  # (a no-op once the crawl closed it)

    def _finished_before(self, job: Job) -> CrawlResult:
        """A job that finished before: what its end lacks (a WACZ a kill
        or a hand removed, a sink new to it), then its stats."""
        wacz = self.settings.archive.wacz
        if wacz and not Path(wacz).exists():
            failure = package(self.settings, job)
            if failure is not None:
                raise failure
        deliver_finished(self.settings, job)
        return CrawlResult(job.stats_before(), job.out, job.path, already_finished=True)

    def _execute(self, job: Job, parts: Assembly) -> CrawlResult:
        """Open the run, start the workers, run the engine, and shut down
        whatever happened: one failure rule (a full disk, a pool, archive,
        frontier or sink error ends the run; anything else is a bug, raised)."""
        engine = parts.engine
        failure: BaseException | None = None
        owns_signals = stopsignals.install()
        stopsignals.listen(lambda signum: self._on_signal(engine, signum))
        try:
            open_run(self.settings, job, engine)
            start(self.settings, self._rules, job, engine)
            if not engine.stop_requested:  # a signal during start-up starts nothing
                engine.pool.start(lambda: engine.stop_requested)  # a signal stops the forking
                engine.run()
        except (OSError, sqlite3.OperationalError) as exc:
            if not is_disk_full(exc):
                raise
            failure = exc  # said once, on stderr, by the command; the log has it too
            log.info("out of disk space: %s; stopping (the job can be resumed)", exc)
        except (PoolError, ArchiveError, FrontierError, SinkError) as exc:
            failure = exc
        finally:
            stats, failure = shutdown(self.settings, parts.deliveries, job, engine, failure)
            if engine.live is not None:
                engine.live.ended(engine.states(), job.state.state)
            if parts.rejected is not None:
                parts.rejected.close()
            stopsignals.listen(None)
            if owns_signals:
                stopsignals.uninstall()
        if failure is not None:
            raise CrawlError(
                f"out of disk space ({failure}); free some and rerun the same command to resume"
                if is_disk_full(failure)
                else str(failure)
            ) from failure
        return CrawlResult(
            stats,
            job.out,
            job.path,
            interrupted=not engine.finished,
            budget=engine.budget_spent if not engine.finished else None,
            fetched_nothing=job.state.message if job.state.fetched_nothing else None,
        )

    def _on_signal(self, engine: Engine, signum: int) -> None:
        """The first stop signal stops dispatching and lets in-flight requests
        finish; a second stops at once."""
        if engine.request_stop():
            message = "\nmpcrawler: stopping now"
        else:
            message = (
                f"\nmpcrawler: {signal.Signals(signum).name}: finishing in-flight requests "
                f"(up to {self.settings.startup.grace:g} s; again to stop now)"
            )
        stopsignals.say(message)  # from the handler: not through sys.stderr's lock


def configure_logging(log_file: str | None) -> None:
    """Warnings to stderr; everything to ``log_file`` if given."""
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if log_file else logging.WARNING)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.WARNING)
    stderr.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(stderr)
    if log_file:
        handler = logging.FileHandler(log_file, encoding="utf-8")
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
