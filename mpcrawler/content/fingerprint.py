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

A text of ``MIN_WORDS`` (4) words or more has a fingerprint, however
short: a trap made of short pages (a soft-404 answer of a few words under
every path, a calendar's "No events in 03/2031") is known by its text like
any other.  A text of fewer words has none (an empty page, an image, a
"Loading..." shell a script fills, a bare link): too little to call two
pages the same, and such pages are often each a different page.

A long text is read in pieces of about ``PIECE`` characters, cut where a
word ends: the digest is fed piece by piece and only the words' counts
are kept, so a 30 MB page's text takes a piece's memory, not a list of all
its words (3.5 million of them: 500 MB).
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import operator
import re
import struct
from collections.abc import Iterator
from typing import NamedTuple

__all__ = [
    "BANDS",
    "MIN_WORDS",
    "NEAR_BITS",
    "PIECE",
    "Fingerprint",
    "bands",
    "fingerprint",
    "hamming",
    "text_digest",
]

MIN_WORDS = 4  # a text of fewer words is not known by its text
MAX_WEIGHT = 4  # a word counts at most this many times in the simhash
NEAR_BITS = 3  # simhashes this close (or closer) are near duplicates
BANDS = 4  # pieces of 16 bits
PIECE = 1 << 20  # characters of a text normalized at a time
_SPACE = re.compile("[ \t\n\r\x0b\x0c\xa0]")  # where _normalized's words part
# ASCII letters lowered, digits folded to 0, and the whitespace bytes.split
# parts words at a space: one translation (no UTF-8 sequence holds any of
# these bytes, so other characters pass as they are).
_FOLD = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\t\n\r\x0b\x0c",
    b"abcdefghijklmnopqrstuvwxyz0000000000     ",
)
# Each byte value spread to 8 fields of 16 bits, one bit each (low bit first):
# a word's 64-bit hash spread so (``_spreads_of``) is 64 fields, summed in one int.
# A field holds the weight of MAX_WORDS words at most.
_FIELD = 16
MAX_WORDS = (1 << _FIELD) // MAX_WEIGHT - 1  # distinct words in a simhash: the most frequent
_SPREAD = [
    sum(((value >> bit) & 1) << (_FIELD * bit) for bit in range(8)).to_bytes(_FIELD, "little")
    for value in range(256)
]
_CACHE_WORDS = 65_536  # words whose spread hash a process keeps (a site repeats its words)
_spreads: dict[bytes, int] = {}


class Fingerprint(NamedTuple):
    """A text's exact digest and its 64-bit simhash (None: not asked for)."""

    digest: str  # hex of the normalized text's BLAKE2b-128
    simhash: int | None  # 64 bits


def fingerprint(text: str, near: bool = True) -> Fingerprint | None:
    """The fingerprint of ``text`` (None: fewer than MIN_WORDS words), its
    simhash only if ``near`` (--near-duplicates: counting the words and
    summing their hashes is two thirds of a fingerprint's CPU)."""
    digest = hashlib.blake2b(digest_size=16)
    counts: collections.Counter[bytes] = collections.Counter()
    size = 0
    for words, count in _words(text, digest, listed=near):
        size += count
        if words is not None:
            counts.update(words)
    if size < MIN_WORDS:
        return None
    return Fingerprint(digest.hexdigest(), _simhash(counts) if near else None)


def text_digest(text: str) -> str:
    """The digest of ``text`` normalized, whatever its length (a record's
    ``text_digest`` with --extract)."""
    digest = hashlib.blake2b(digest_size=16)
    for _ in _words(text, digest, listed=False):
        pass
    return digest.hexdigest()


def _words(
    text: str, digest: hashlib.blake2b, listed: bool = True
) -> Iterator[tuple[list[bytes] | None, int]]:
    """The normalized words of each piece of ``text`` (cut where a word
    ends; a list of them only if ``listed``) and their number (of a joined
    piece whose words are not listed, counted only as far as MIN_WORDS),
    each piece's fed to ``digest``, a space between pieces: the digest of
    all the words joined by a space.

    A piece whose normalized bytes are its words joined already (``_joined``:
    the analyzer's text, whitespace collapsed by libxml2) is fed as it is
    and its words counted by its spaces: no list of them is made unless one
    is asked (a page of 30 KB, 4,000 words: the list and its join were 280
    of the 385 µs of its digest, which is 170 µs so)."""
    first = True
    for piece in _pieces(text):
        folded = _normalized(piece)
        words: list[bytes] | None
        if _joined(folded):
            words = folded.split() if listed else None
            # (counted as far as a fingerprint asks when they are not listed)
            count = len(words) if words is not None else len(folded.split(b" ", MIN_WORDS - 1))
        else:
            words = folded.split()
            count = len(words)
            if not count:
                continue
            folded = b" ".join(words)
        if not first:
            digest.update(b" ")
        digest.update(folded)
        first = False
        yield (words if listed else None), count


def _joined(folded: bytes) -> bool:
    """``folded`` (``_normalized``) is its words joined by one space: it has
    words, no two spaces side by side, none first or last."""
    return bool(folded) and folded[0] != 32 and folded[-1] != 32 and b"  " not in folded


def _pieces(text: str) -> Iterator[str]:
    """``text`` in pieces of at least ``PIECE`` characters (the last may be
    shorter), each cut before a space: no word is cut in two."""
    start = 0
    while len(text) - start > PIECE:
        space = _SPACE.search(text, start + PIECE)
        if space is None:
            break
        yield text[start : space.start()]
        start = space.start()
    yield text[start:]


def _normalized(text: str) -> bytes:
    """``text`` lower case, encoded, digits folded and each whitespace
    character a space: the words of ``text.lower()``, split where bytes
    split, parted by spaces.  Its ASCII letters are lowered by the one
    translation that folds its digits (``_FOLD``), and the others only
    where one has a case (``_cased``).  A non-breaking space parts words
    too (an ASCII text has none: the look for it costs a page of 30 KB 29 µs)."""
    data = _cased(text)
    if not text.isascii():
        data = data.replace(b"\xc2\xa0", b" ")
    return data.translate(_FOLD)


def _cased(text: str) -> bytes:
    """``text`` in UTF-8 (a lone surrogate: ``?``), lowered by ``str.lower``
    only where a character beyond ASCII has a case: the rest is lowered as
    bytes are (``_FOLD``).  ``str.lower`` reads every character of a text
    that is not all ASCII through Unicode's tables (0.33 of the 0.69
    million instructions of normalizing a page of the PostgreSQL docs,
    whose texts all have a non-breaking space or an arrow; 0.51 million
    so); what is left when the ASCII bytes are taken out tells (a few
    characters a page).  (``str.lower`` makes no ASCII capital.)"""
    data = text.encode("utf-8", "replace")
    if not text.isascii():
        rest = data.translate(None, _ASCII).decode("utf-8")
        if rest.lower() != rest:  # (a letter with a case, or a sigma's context)
            return text.lower().encode("utf-8", "replace")
    return data


_ASCII = bytes(range(128))


# Byte ``k`` of every byte value's spread: a translation table each.
_SPREAD_ROWS = [bytes(spread[k] for spread in _SPREAD) for k in range(_FIELD)]


def _spreads_of(words: list[bytes]) -> list[int]:
    """Each of ``words``' 64-bit hash (BLAKE2b), each bit in a field of its
    own: every hash's bytes spread at once, by a translation table for each
    byte of a spread."""
    digests = b"".join([hashlib.blake2b(word, digest_size=8).digest() for word in words])
    spread = bytearray(_FIELD * len(digests))
    for k, row in enumerate(_SPREAD_ROWS):
        spread[k::_FIELD] = digests.translate(row)
    size = 8 * _FIELD  # bytes of one word's spread
    view = memoryview(spread)
    return [int.from_bytes(view[i : i + size], "little") for i in range(0, len(spread), size)]


def _simhash(counts: collections.Counter[bytes]) -> int:
    """Each distinct word's 64-bit hash, weighted by how often it occurs
    (``counts``; at most MAX_WEIGHT): a bit is set where more than half the
    weight has it.  The 64 sums are fields of one integer: every word's
    spread hash is added once, and the few seen more than once are added
    again times their weight less one (one multiplication each), with one
    lookup a word in the process's cache of spread hashes."""
    if len(counts) > MAX_WORDS:  # (a dictionary's page)
        counts = collections.Counter(dict(counts.most_common(MAX_WORDS)))
    spreads = _spreads
    found = list(map(spreads.get, counts))
    if None in found:
        missing = [word for word, spread in zip(counts, found, strict=True) if spread is None]
        if len(spreads) + len(missing) > _CACHE_WORDS:
            spreads.clear()
            missing = list(counts)
        spreads.update(zip(missing, _spreads_of(missing), strict=True))
        found = list(map(spreads.__getitem__, counts))
    values = counts.values()
    again = list(map((1).__lt__, values))  # seen more than once
    weights = [min(times, MAX_WEIGHT) - 1 for times in itertools.compress(values, again)]
    total = sum(found) + sum(map(operator.mul, itertools.compress(found, again), weights))
    half = (len(counts) + sum(weights)) // 2
    fields = struct.unpack("<64H", total.to_bytes(64 * _FIELD // 8, "little"))
    return sum(itertools.compress(_BITS, map(half.__lt__, fields)))


_BITS = [1 << bit for bit in range(64)]


def hamming(a: int, b: int) -> int:
    """The number of bits in which ``a`` and ``b`` differ."""
    return (a ^ b).bit_count()


def bands(simhash: int) -> list[int]:
    """The ``BANDS`` pieces of 16 bits of ``simhash``, low first."""
    return [(simhash >> (16 * k)) & 0xFFFF for k in range(BANDS)]
