"""Fingerprints of a page's text: an exact digest and a 64-bit simhash.

Pure functions, no I/O; a worker fingerprints the text its analyzer read
(:mod:`mpcrawler.worker.analyzer`), and the master looks the fingerprints
up crawl-wide (:mod:`mpcrawler.master.content`).

- The text is *normalized* first: lower case, every digit folded to ``0``,
  whitespace collapsed, so a calendar's months, a page that only shows
  today's date, or a soft-404 page that echoes its path's numbers are one
  text.  ``digest`` is BLAKE2b (128 bits) of it, as BUbiNG keeps of a page.
- ``simhash`` (Charikar) of its words, each weighted by how often it
  occurs (at most ``MAX_WEIGHT``): pages that differ by a few words differ
  in a few bits.  Two pages are near duplicates within ``NEAR_BITS``.
- ``bands``: the simhash cut in ``BANDS`` pieces of 16 bits; two hashes
  within ``NEAR_BITS`` (< BANDS) bits share at least one piece, so an index
  of pieces finds every near neighbour without comparing against every page.

A text of fewer than ``MIN_WORDS`` words has no fingerprint: an image
gallery or a page built by a script would otherwise all be "duplicates".
"""

from __future__ import annotations

import collections
import hashlib
from typing import NamedTuple

__all__ = [
    "BANDS",
    "MIN_WORDS",
    "NEAR_BITS",
    "Fingerprint",
    "bands",
    "fingerprint",
    "hamming",
]

MIN_WORDS = 10
MAX_WEIGHT = 4  # a word counts at most this many times in the simhash
NEAR_BITS = 3  # simhashes this close (or closer) are near duplicates
BANDS = 4  # pieces of 16 bits
_DIGITS = str.maketrans("0123456789", "0000000000")
_BITS = [bytes((value >> bit) & 1 for value in range(256)) for bit in range(8)]


class Fingerprint(NamedTuple):
    digest: str  # hex of the normalized text's BLAKE2b-128
    simhash: int  # 64 bits


def fingerprint(text: str) -> Fingerprint | None:
    """The fingerprint of ``text`` (None: fewer than MIN_WORDS words)."""
    words = text.lower().translate(_DIGITS).split()
    if len(words) < MIN_WORDS:
        return None
    normal = " ".join(words).encode("utf-8")
    digest = hashlib.blake2b(normal, digest_size=16).hexdigest()
    return Fingerprint(digest, _simhash(normal))


def _simhash(normal: bytes) -> int:
    """Each distinct word's 64-bit hash, repeated by its weight, counted bit
    by bit: a bit is set where more than half the weight has it.  The bits
    are counted a byte column at a time (``bytes.translate``, ``count``),
    64 C calls whatever the page's length."""
    counts = collections.Counter(normal.split())
    blake2b = hashlib.blake2b
    blob = b"".join(
        [blake2b(w, digest_size=8).digest() * min(c, MAX_WEIGHT) for w, c in counts.items()]
    )
    half = len(blob) // 16  # half the hashes (8 bytes each)
    value = 0
    for column in range(8):
        bytes_here = blob[column::8]
        for bit in range(8):
            if bytes_here.translate(_BITS[bit]).count(1) > half:
                value |= 1 << (column * 8 + bit)
    return value


def hamming(a: int, b: int) -> int:
    """The number of bits in which ``a`` and ``b`` differ."""
    return (a ^ b).bit_count()


def bands(simhash: int) -> list[int]:
    """The ``BANDS`` pieces of 16 bits of ``simhash``, low first."""
    return [(simhash >> (16 * k)) & 0xFFFF for k in range(BANDS)]
