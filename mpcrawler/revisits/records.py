"""Which record a revisit is archived as: pure, no warcio (a worker imports
it whether or not it archives).  Used by :mod:`mpcrawler.worker.process`
for each fetch that has a ``Prior``; :mod:`mpcrawler.archive.warc` writes
the record it names.
"""

from __future__ import annotations

from typing import NamedTuple

from ..messages import Prior
from ..worker.downloader import Response

__all__ = ["PROFILES", "Revisit", "revisit_of"]

PROFILES = {
    "server-not-modified": "http://netpreserve.org/warc/1.1/revisit/server-not-modified",
    "identical-payload-digest": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
}


class Revisit(NamedTuple):
    """A fetch to archive as a revisit of an earlier capture."""

    profile: str  # a key of PROFILES
    digest: str | None  # the original's payload digest
    refers_to: str | None  # its WARC-Record-ID
    refers_to_date: str  # its WARC-Date
    refers_to_uri: str  # its WARC-Target-URI


def revisit_of(prior: Prior | None, response: Response) -> Revisit | None:
    """The revisit record a fetch is archived as, or None for a response
    record: a 304, or a 2xx whose payload digest is that of the last
    capture in the archive (``prior.warc_id``)."""
    if prior is None or not prior.warc_date or not prior.warc_uri:
        return None
    if response.status == 304:
        profile = "server-not-modified"
    elif (
        prior.warc_id
        and 200 <= response.status < 300
        and response.digest is not None
        and response.digest == prior.digest
        and (response.exchange is None or response.exchange.truncated is None)
    ):
        profile = "identical-payload-digest"
    else:
        return None
    return Revisit(profile, prior.digest, prior.warc_id, prior.warc_date, prior.warc_uri)
