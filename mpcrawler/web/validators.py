"""HTTP validators and payload digests: what a revisit sends and compares.

No I/O.  A worker sends a stored ETag as ``If-None-Match`` and a stored
Last-Modified as ``If-Modified-Since`` (:func:`conditional_headers`), in the
one HTTP-date form RFC 9110 lets a sender generate (IMF-fixdate): a stored
date in another form is rewritten, and one that cannot be read is not sent
at all (StormCrawler once sent an invalid one, its issue #673).  A payload's
digest is written as WARC writes ``WARC-Payload-Digest``: ``sha1:`` and the
base32 of the SHA-1 of the body as sent (content-coded, transfer coding
removed), so a record's ``digest`` and its WARC record's agree.
"""

from __future__ import annotations

import base64
import calendar
import email.utils
import hashlib
from typing import Any

__all__ = ["conditional_headers", "digest_text", "http_date", "new_digest", "parse_http_date"]


def new_digest() -> Any:
    """A running SHA-1 for a payload read in chunks (``digest_text`` ends it)."""
    return hashlib.sha1(usedforsecurity=False)


def digest_text(running: Any) -> str:
    """``sha1:BASE32`` of a running SHA-1, as WARC-Payload-Digest is written."""
    return "sha1:" + base64.b32encode(running.digest()).decode("ascii")


def parse_http_date(value: str | None) -> float | None:
    """Unix time of an HTTP date in any of its three forms (RFC 9110 5.6.7),
    or None if absent or unreadable."""
    if not value:
        return None
    parsed = email.utils.parsedate_tz(value.strip())
    if parsed is None or parsed[0] < 1970:
        return None
    try:
        return float(calendar.timegm(parsed[:9]) - (parsed[9] or 0))
    except (OverflowError, ValueError):
        return None


def http_date(value: str | None) -> str | None:
    """``value`` (an HTTP date, in any form) as IMF-fixdate, ``Sun, 06 Nov
    1994 08:49:37 GMT``; None if it cannot be read."""
    when = parse_http_date(value)
    if when is None:
        return None
    return email.utils.formatdate(when, usegmt=True)


def conditional_headers(etag: str | None, last_modified: str | None) -> dict[str, str]:
    """The request headers of a conditional GET from stored validators."""
    headers: dict[str, str] = {}
    etag = (etag or "").strip()
    # Any visible ASCII (servers send unquoted tags too), but never "*", which
    # is no tag: If-None-Match: * would match any edition of the page.
    if etag and etag.lstrip("W/") != "*" and all(32 < ord(c) < 127 or c == " " for c in etag):
        headers["If-None-Match"] = etag
    if since := http_date(last_modified):
        headers["If-Modified-Since"] = since
    return headers
