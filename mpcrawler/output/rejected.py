"""The rejected log (``--rejected-log FILE``): one JSON line per URL a rule refused.

As wget's ``--rejected-log``: each line is ``{"url", "rule", "from"}``, the
refused URL (canonical), the rule that refused it (``scope``,
``deny_domain``, ``reject_regex``, ``accept_regex``, ``reject_ext``,
``nofollow``) and the page that linked to it (or redirected to it, or the
sitemap that listed it).  The master's settling writes it, each URL once
while it is remembered (see ``Settling``); appended to, never truncated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

__all__ = ["RejectedLog"]


class RejectedLog:
    """The rejected log's file, opened at its first line (see the module)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None
        self.written = 0

    def write(self, url: str, rule: str, source: str) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        self._file.write(json.dumps({"url": url, "rule": rule, "from": source}) + "\n")
        self.written += 1

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
