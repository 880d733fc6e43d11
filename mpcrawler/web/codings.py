"""HTTP content codings (RFC 9110 8.4), decoded with a bound on the output.

Used by the Downloader, which reads bodies as sent (so that a WARC archive
holds them still compressed) and decodes them here: gzip and deflate, the
codings it asks for.  ``BoundedDecoder.feed`` never returns more than it is
allowed, however much a chunk would expand (a compression bomb costs at most
the bound).
"""

from __future__ import annotations

import zlib

__all__ = ["ACCEPT_ENCODING", "BoundedDecoder"]

ACCEPT_ENCODING = "gzip, deflate"


class _Deflate:
    """zlib-wrapped deflate as RFC 9110 says, or raw deflate as some servers send."""

    def __init__(self) -> None:
        self._obj = zlib.decompressobj()
        self._first = True

    def decompress(self, data: bytes, limit: int) -> bytes:
        if self._first:
            self._first = False
            try:
                return self._obj.decompress(data, limit)
            except zlib.error:
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._obj.decompress(data, limit)

    @property
    def unconsumed_tail(self) -> bytes:
        return self._obj.unconsumed_tail


class BoundedDecoder:
    """Decodes a body sent with ``Content-Encoding: coding[, coding...]``.
    Codings it does not know (and ``identity``) pass through unchanged."""

    def __init__(self, content_encoding: str) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
        self._stages: list[zlib._Decompress | _Deflate] = []
        for coding in reversed(codings):  # the last applied is undone first
            if coding in ("gzip", "x-gzip"):
                self._stages.append(zlib.decompressobj(16 + zlib.MAX_WBITS))
            elif coding == "deflate":
                self._stages.append(_Deflate())

    def feed(self, data: bytes, limit: int) -> tuple[bytes, bool]:
        """Up to ``limit`` decoded bytes of ``data``: (them, whether more would
        have followed).  Raises zlib.error for a body that does not decode."""
        for stage in self._stages:
            out = stage.decompress(data, max(1, limit + 1))
            if stage.unconsumed_tail or len(out) > limit:
                return out[:limit], True
            data = out
        if len(data) > limit:
            return data[:limit], True
        return data, False
