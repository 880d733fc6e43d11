"""Secrets kept out of every output: a URL's password is never written.

Used wherever a URL that may carry credentials reaches a record, a log line,
an error message, ``job.json``, ``status`` or a report (today: the Redis URL
of a shared crawl).  Pure functions; nothing here does I/O.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_url"]


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (``redis://:***@host:6379/0``);
    a URL without one, or text that is not a URL, comes back unchanged."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
