"""The robots.txt files a crawl read, kept in its job dir (``DIR/robots.jsonl``).

The engine saves each host's robots.txt as it answers (an empty body for
a 4xx: no rules), one JSON line ``{"host": ..., "robots": ...}`` appended a
host; ``check-url --job-dir DIR`` reads them to say whether robots.txt
refuses a URL, without any network (the last line of a host wins; a job
dir of an older version has one file a host in ``DIR/robots/``, read
too).  One file, not a file a host: creating a file cost the master's loop
0.3-0.6 ms a new host in a broad crawl.  Informational: the crawl itself
keeps its rules in memory and fetches robots.txt again on every run.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import IO
from urllib.parse import quote

__all__ = ["FILE", "RobotsCache"]

FILE = "robots.jsonl"


class RobotsCache:
    """The job dir's robots.txt files (see the module)."""

    def __init__(self, job_dir: str | Path) -> None:
        self.path = Path(job_dir) / FILE
        self.old_dir = Path(job_dir) / "robots"  # one file a host, before robots.jsonl
        self._out: IO[str] | None = None

    def save(self, host: str, body: str) -> None:
        """Keep ``host``'s robots.txt (best effort: a full disk is found elsewhere)."""
        with contextlib.suppress(OSError):
            if self._out is None:
                self._out = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            self._out.write(json.dumps({"host": host, "robots": body}) + "\n")
            self._out.flush()  # check-url may read it while the crawl runs

    def load(self, host: str) -> str | None:
        """``host``'s robots.txt as last read, or None if the crawl never read it."""
        found = None
        with contextlib.suppress(OSError), open(self.path, encoding="utf-8") as lines:
            for line in lines:
                if host in line:  # most lines are other hosts': no JSON to decode
                    with contextlib.suppress(ValueError):
                        entry = json.loads(line)
                        if entry.get("host") == host and isinstance(entry.get("robots"), str):
                            found = entry["robots"]
        if found is not None:
            return found
        try:
            return (self.old_dir / (quote(host, safe="") + ".txt")).read_text(encoding="utf-8")
        except OSError:
            return None

    def close(self) -> None:
        if self._out is not None:
            with contextlib.suppress(OSError):
                self._out.close()
            self._out = None
