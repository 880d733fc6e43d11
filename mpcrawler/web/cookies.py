"""Netscape ``cookies.txt`` files, as wget ``--load-cookies`` and curl ``-b`` read them.

One cookie a line, seven TAB-separated fields: domain, whether subdomains
match (``TRUE``/``FALSE``), path, secure only (``TRUE``/``FALSE``), expiry
(Unix time, 0 for a session cookie), name, value.  ``#`` starts a comment,
except curl's ``#HttpOnly_`` prefix, which marks a cookie.  Expired cookies
are skipped.  Used by :mod:`mpcrawler.settings` (to check the file before
the crawl) and the downloader (to send them); the values are secrets and
never written anywhere.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

__all__ = ["Cookie", "parse_cookies", "read_cookies_file"]

_HTTP_ONLY = "#HttpOnly_"


class Cookie(NamedTuple):
    """One cookie of a cookies.txt file (Netscape format)."""

    domain: str  # with a leading dot when subdomains match
    path: str
    secure: bool
    expires: int | None
    name: str
    value: str


def parse_cookies(text: str, now: float | None = None) -> list[Cookie]:
    """The unexpired cookies of a cookies.txt text; ValueError (naming the
    line) for a line that is not one."""
    now = time.time() if now is None else now
    cookies = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.rstrip("\r\n")
        if line.startswith(_HTTP_ONLY):
            line = line[len(_HTTP_ONLY) :]
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) == 6:  # a cookie with an empty value, its last TAB trimmed
            fields.append("")
        if len(fields) != 7:
            raise ValueError(f"line {number}: not 7 TAB-separated fields")
        domain, subdomains, path, secure, expires, name, value = fields
        try:
            expiry = int(expires or 0)
        except ValueError:
            raise ValueError(f"line {number}: expiry {expires!r} is not a number") from None
        if expiry and expiry < now:
            continue
        domain = domain.strip().lower()
        if subdomains.upper() == "TRUE" and not domain.startswith("."):
            domain = "." + domain
        cookies.append(
            Cookie(domain, path or "/", secure.upper() == "TRUE", expiry or None, name, value)
        )
    return cookies


def read_cookies_file(path: str) -> list[Cookie]:
    """The cookies of the file at ``path``; ValueError in one line if it
    cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ValueError(f"--cookies {path}: {exc.strerror or exc}") from None
    try:
        return parse_cookies(text)
    except ValueError as exc:
        raise ValueError(f"--cookies {path}: {exc} (a Netscape cookies.txt file)") from None
