"""The --on-finish command: run once a crawl's run has ended and its
outputs are closed, whatever the end (finished, a budget, a stop signal, a
failure), with what a batch job needs to know in its environment.

``environment`` is the pure part (the variables, from the run's end);
``run`` runs the command with ``/bin/sh -c`` and says, in one line, why it
failed, if it did: its failure is reported and never changes the crawl's
exit status.  Its output goes where the crawl's goes.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["environment", "run"]


def environment(
    status: int,
    outcome: str,
    job_dir: Path | None,
    out: Path | None,
    stats: Mapping[str, Any],
    budget: str | None = None,
) -> dict[str, str]:
    """The variables the command gets (besides the crawl's own environment):
    the exit ``status`` and its ``outcome`` (``cli.parser.OUTCOMES``)."""
    found = {
        "MPCRAWLER_EXIT_STATUS": str(status),
        "MPCRAWLER_OUTCOME": outcome,
        "MPCRAWLER_JOB_DIR": str(job_dir) if job_dir is not None else "",
        "MPCRAWLER_OUT": str(out) if out is not None else "",
        "MPCRAWLER_STATS": str(job_dir / "stats.json") if job_dir is not None else "",
        "MPCRAWLER_PAGES": str(stats.get("pages", 0)),
        "MPCRAWLER_ERRORS": str(stats.get("errors", 0)),
    }
    if budget is not None:
        found["MPCRAWLER_BUDGET"] = budget
    return found


def run(command: str, variables: Mapping[str, str]) -> str | None:
    """Run ``command`` in a shell with ``variables`` added to the
    environment; None if it exited 0, else why not (one line)."""
    try:
        done = subprocess.run(["/bin/sh", "-c", command], env={**os.environ, **variables})
    except OSError as exc:
        return f"--on-finish: could not run {command!r}: {exc}"
    if done.returncode != 0:
        how = f"exit status {done.returncode}" if done.returncode > 0 else "a signal"
        return f"--on-finish: {command!r} ended with {how} (the crawl's result stands)"
    return None
