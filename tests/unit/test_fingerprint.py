"""The fingerprints of a page's text (web/fingerprint.py) and the decision
on a duplicate's links (master/outcome.follows)."""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpcrawler.content import fingerprint as fingerprint_module
from mpcrawler.content.fingerprint import (
    MIN_WORDS,
    NEAR_BITS,
    bands,
    fingerprint,
    hamming,
    text_digest,
)
from mpcrawler.content.index import Met
from mpcrawler.master.outcome import follows
from mpcrawler.settings import Settings
from mpcrawler.settings.worker import WorkerConfig

WORDS = [f"{a}{b}" for a in "bcdfghjklmnpqrstvwz" for b in ("a", "e", "i", "o", "u", "ar", "en")]


def text(seed: int, n: int = 400) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def test_the_digest_folds_case_digits_and_whitespace() -> None:
    a = fingerprint("Calendar 2026-01\n\n Events this month: none. " + "day " * 20)
    b = fingerprint("calendar   2027-12 events THIS month: none. " + "day " * 20)
    c = fingerprint("Calendar 2026-01 events this month: one. " + "day " * 20)
    assert a is not None and b is not None and c is not None
    assert a.digest == b.digest != c.digest


def test_a_text_of_a_few_words_has_a_fingerprint() -> None:
    """A page of a few words is known by its text (a short soft-404 answer,
    a calendar's empty month); one of fewer than MIN_WORDS is not."""
    assert MIN_WORDS == 4
    assert fingerprint("") is None and fingerprint(" \n\t ") is None
    assert fingerprint("No events this month") is not None
    assert fingerprint("Loading, please wait") is None
    short = fingerprint("Nothing here, but welcome anyway.")
    assert short is not None
    assert fingerprint("No events in 03/2031") == fingerprint("no events in 11/2029")


def test_a_few_words_changed_is_near_and_another_text_is_not() -> None:
    base = text(1)
    edited = base.replace(base.split()[100], "zzz", 1) + " one more"
    a, b, other = fingerprint(base), fingerprint(edited), fingerprint(text(2))
    assert a is not None and b is not None and other is not None
    assert a.digest != b.digest
    assert hamming(a.simhash, b.simhash) <= NEAR_BITS < hamming(a.simhash, other.simhash)


def test_the_fingerprint_is_the_same_in_every_process() -> None:
    """Stable across processes (no salted hash): workers fingerprint, the master compares."""
    code = (
        "from mpcrawler.content.fingerprint import fingerprint as f; "
        "import sys; print(*f(sys.argv[1]))"
    )
    sample = text(3)
    outs = {
        subprocess.run(
            [sys.executable, "-c", code, sample],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[1]
        for seed in ("1", "2")
    }
    assert outs == {str(fingerprint(sample).simhash)}  # type: ignore[union-attr]


@given(st.integers(0, 2**64 - 1), st.sets(st.integers(0, 63), max_size=NEAR_BITS))
def test_hashes_within_near_bits_share_a_band(value: int, flips: set[int]) -> None:
    other = value
    for bit in flips:
        other ^= 1 << bit
    assert hamming(value, other) == len(flips)
    assert any(x == y for x, y in zip(bands(value), bands(other), strict=True))


def test_a_duplicates_links_are_not_followed_a_near_ones_are_unless_asked() -> None:
    assert follows(Met(), skip_near=True)
    assert not follows(Met(duplicate_of="http://a/"), skip_near=False)
    assert follows(Met(near_duplicate_of="http://a/"), skip_near=False)
    assert not follows(Met(near_duplicate_of="http://a/"), skip_near=True)


def test_the_fingerprint_of_a_text_stays_what_it_was() -> None:
    """A job's content index keeps the fingerprints of pages crawled by an
    earlier version: a faster simhash must give the same bits (these are
    813bd97's), weights up to MAX_WEIGHT, digits folded, any script."""
    text = " ".join(
        ["The quick brown fox jumps over the lazy dog"] * 3
        + ["Crawl 2026-12-05: the the the the the the fox, fox; ünïcödé ÉTÉ 12 34 page page"]
    )
    assert fingerprint(text) == ("b797aa54fb92afef1e4916fbdcd2892e", 3979597195212214330)


TEXTS = st.text(
    alphabet=st.sampled_from(list("ab Σ\u03c3ςİ\u0131Éé9\xa0\t\n\u2003.")), min_size=0, max_size=300
)


@given(TEXTS)
def test_a_text_read_in_pieces_has_the_fingerprint_it_has_whole(text: str) -> None:
    """A long text is normalized a piece at a time, cut where a word ends:
    its digest and simhash are those of the text read whole (pieces of 7
    characters here; final sigmas, dotted capitals, non-breaking spaces)."""
    whole = fingerprint(text), text_digest(text)
    with _pieces_of(7):
        assert (fingerprint(text), text_digest(text)) == whole


def test_a_long_texts_words_are_never_all_held_at_once() -> None:
    """A text of 3 MB (a million words) is normalized in pieces of at most
    PIECE characters and a word: never as one list of all its words."""
    long_text = text(7, 1_000_000)
    assert len(long_text) > 3 * fingerprint_module.PIECE
    sizes: list[int] = []
    normalized = fingerprint_module._normalized

    def counted(piece: str) -> bytes:
        sizes.append(len(piece))
        return normalized(piece)

    fingerprint_module._normalized = counted
    try:
        found = fingerprint(long_text)
        digest = text_digest(long_text)
    finally:
        fingerprint_module._normalized = normalized
    assert len(sizes) >= 2 * 3 and max(sizes) <= fingerprint_module.PIECE + 4
    assert found is not None and found.digest == digest
    with _pieces_of(1 << 30):  # read whole, the same
        assert fingerprint(long_text) == found


@contextlib.contextmanager
def _pieces_of(size: int) -> Iterator[None]:
    kept = fingerprint_module.PIECE
    fingerprint_module.PIECE = size
    try:
        yield
    finally:
        fingerprint_module.PIECE = kept


def _textbook_simhash(text: str) -> int:
    """Charikar's simhash as a textbook writes it, bit by bit: each
    distinct normalized word's BLAKE2b-64 (little-endian), weighted by its
    count up to MAX_WEIGHT; a bit is set where more than half the weight
    has it."""
    words = text.lower().replace("\xa0", " ").encode("utf-8", "replace")
    counts = collections.Counter(words.translate(bytes.maketrans(b"0123456789", b"0" * 10)).split())
    ones, total = [0] * 64, 0
    for word, times in counts.items():
        value = int.from_bytes(hashlib.blake2b(word, digest_size=8).digest(), "little")
        weight = min(times, fingerprint_module.MAX_WEIGHT)
        total += weight
        for bit in range(64):
            ones[bit] += weight * ((value >> bit) & 1)
    return sum(1 << bit for bit in range(64) if ones[bit] > total // 2)


@given(st.lists(st.sampled_from([*WORDS[:12], "The", "the", "1999", "2026", "été"]), max_size=60))
def test_the_simhash_is_the_textbook_ones(words: list[str]) -> None:
    """The fast sum (spread hashes, a cache, weights added again only for
    words seen more than once) gives the bits of the plain bit-by-bit one."""
    text = " ".join(words)
    found = fingerprint(text)
    if len(words) < MIN_WORDS:
        assert found is None
    else:
        assert found is not None and found.simhash == _textbook_simhash(text)


def test_without_near_a_fingerprint_is_its_digest_alone() -> None:
    """No --near-duplicates: the same digest, no simhash; a text of fewer
    than MIN_WORDS words still has none."""
    sample = text(5)
    whole, digest_only = fingerprint(sample), fingerprint(sample, near=False)
    assert whole is not None and digest_only == (whole.digest, None)
    assert fingerprint("Loading, please wait", near=False) is None
    assert fingerprint("No events this month", near=False) is not None


@pytest.mark.parametrize(
    "options, near",
    [
        ({}, False),
        ({"near_duplicates": True}, True),
        ({"skip_near_duplicates": True}, True),
        ({"near_duplicates": True, "dedup": False}, False),
        ({"skip_near_duplicates": True, "dedup": False}, False),
    ],
)
def test_near_duplicates_are_looked_for_only_when_asked(
    options: dict[str, bool], near: bool
) -> None:
    """--near-duplicates (or --skip-near-duplicates) turns the simhash on in
    the workers, unless --no-dedup."""
    settings = Settings(seeds=["http://a.test/"], **options)
    assert settings.content.finds_near is near
    assert WorkerConfig.of(settings).near_duplicates is near


LOWERED = st.text(
    alphabet=st.sampled_from(
        list("aB9 \xa0\t\u2192\u00a7\u201c.")  # what the PostgreSQL docs have
        + list("\u03a3\u03c3\u03c2\u0130\u0131\u00c9\u00e9\u1e9e\ud800\u01c4")  # what lower() reads
    ),
    max_size=40,
)


@given(LOWERED)
def test_a_text_is_lowered_as_str_lower_lowers_it(text: str) -> None:
    """The words are those of ``str.lower`` however they are made: in bytes
    where only ASCII letters have a case (arrows, quotes, non-breaking
    spaces), through ``str.lower`` otherwise (Greek sigmas, a dotted I, a
    sharp S, a titlecase digraph, a lone surrogate)."""
    expected = text.lower().replace("\xa0", " ").encode("utf-8", "replace")
    assert (
        fingerprint_module._normalized(text).split()
        == expected.translate(bytes.maketrans(b"0123456789", b"0" * 10)).split()
    )


@given(TEXTS, st.booleans())
def test_a_text_whose_whitespace_is_collapsed_has_the_fingerprint_of_the_raw_one(
    text: str, near: bool
) -> None:
    """The analyzer's text has its whitespace collapsed (XPath's
    normalize-space: spaces, tabs, line ends), and is digested as it is,
    its words not listed: the same digest and simhash as the raw text's
    (non-breaking spaces, vertical tabs and em spaces left as they are)."""
    collapsed = re.sub("[ \t\r\n]+", " ", text).strip(" \t\r\n")
    assert fingerprint(collapsed, near) == fingerprint(text, near)
    assert text_digest(collapsed) == text_digest(text)


def test_a_collapsed_texts_digest_lists_no_words() -> None:
    """Its digest alone makes no list of a collapsed text's words, and counts
    them as far as MIN_WORDS; a raw text's are listed, and joined."""
    joined = fingerprint_module._joined
    assert joined(b"one two 0") and joined(b"x")
    assert not any(map(joined, [b"one  two", b" one", b"one ", b"", b" "]))
    digest = hashlib.blake2b(digest_size=16)
    assert list(fingerprint_module._words("one two  3", digest, listed=False)) == [(None, 3)]
    assert list(fingerprint_module._words("one two 3", digest, listed=False)) == [(None, 3)]
    assert list(fingerprint_module._words("a b c d e f", digest, listed=False)) == [(None, 4)]
    assert list(fingerprint_module._words("one two 3", digest, listed=True)) == [
        ([b"one", b"two", b"0"], 3)
    ]
    assert list(fingerprint_module._words(" \n", digest, listed=False)) == []


def test_a_non_breaking_space_parts_words_as_a_space_does() -> None:
    """What a reader sees: ``one\\xa0two`` is two words, in an ASCII text's
    company or not (the look for one is skipped in an all-ASCII text)."""
    words = "alpha beta gamma delta epsilon"
    assert text_digest(words.replace(" ", "\xa0", 2)) == text_digest(words)
    assert fingerprint(words.replace(" ", " \xa0 ")) == fingerprint(words)
    assert text_digest("é " + words.replace(" ", "\xa0")) == text_digest("é " + words)
