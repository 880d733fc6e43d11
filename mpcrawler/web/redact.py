"""Secrets kept out of every output: a URL's password is never written.

Used wherever a URL that may carry credentials reaches a record, a log line,
an error message, ``job.json``, ``status`` or a report (today: the Redis URL
of a shared crawl).  Pure functions; nothing here does I/O.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["hide_userinfo", "redact_url"]


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


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:/*)[^/?#@]*@")


def hide_userinfo(url: str) -> str:
    """``url`` with whatever stands before an ``@`` in its authority (a user,
    a password) as ``***``, parsable or not: for text a user wrote by hand."""
    return _USERINFO.sub(r"\1***@", url, count=1)
