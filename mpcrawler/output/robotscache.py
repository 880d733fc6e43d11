"""The robots.txt files a crawl read, kept in its job dir (``DIR/robots/``).

The engine saves each host's robots.txt as it answers (an empty file for
a 4xx: no rules), one file per host named by the quoted host key;
``check-url --job-dir DIR`` reads them to say whether robots.txt refuses a
URL, without any network.  Informational: the crawl itself keeps its rules
in memory and fetches robots.txt again on every run.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from urllib.parse import quote

__all__ = ["RobotsCache"]


class RobotsCache:
    def __init__(self, job_dir: str | Path) -> None:
        self.dir = Path(job_dir) / "robots"

    def _file(self, host: str) -> Path:
        return self.dir / (quote(host, safe="") + ".txt")

    def save(self, host: str, body: str) -> None:
        """Keep ``host``'s robots.txt (best effort: a full disk is found elsewhere)."""
        with contextlib.suppress(OSError):
            self.dir.mkdir(exist_ok=True)
            self._file(host).write_text(body, encoding="utf-8")

    def load(self, host: str) -> str | None:
        """``host``'s robots.txt as last read, or None if the crawl never read it."""
        try:
            return self._file(host).read_text(encoding="utf-8")
        except OSError:
            return None
