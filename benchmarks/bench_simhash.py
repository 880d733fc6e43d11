"""Precision and recall of the near-duplicate test (64-bit simhash within
NEAR_BITS bits), and the CPU a fingerprint costs, on texts with known edits.

    python benchmarks/bench_simhash.py [--seed 1] [--variants 20]

The texts are CPython's own help topics (``pydoc_data.topics``: real
English documentation, in every Python install), those of 200 words or
more.  For each text, ``--variants`` copies with a few words edited (each
edit replaces, inserts or deletes one word at a random place: what a date,
a counter, an advertisement or a "last edited" line changes) are *near*
duplicates of it; copies with a third of their words edited, and every
other text, are not.  A pair is called near when its simhashes differ in at
most NEAR_BITS bits.  Prints, by the share of words edited, how many near
pairs were found (recall), and how many of the pairs called near were near
(precision); and the median CPU of one fingerprint.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import time
from pydoc_data.topics import topics

from mpcrawler.web.fingerprint import NEAR_BITS, fingerprint, hamming

NEAR_EDITS = (0.005, 0.01, 0.02, 0.05)  # shares of words edited: near duplicates
FAR_EDITS = 0.33  # a third of the words edited: another page


def edited(words: list[str], share: float, rng: random.Random, vocabulary: list[str]) -> str:
    """``words`` with ``share`` of them edited (at least one edit)."""
    out = list(words)
    for _ in range(max(1, round(share * len(words)))):
        at = rng.randrange(len(out))
        how = rng.choice(("replace", "insert", "delete"))
        if how == "replace":
            out[at] = rng.choice(vocabulary)
        elif how == "insert":
            out.insert(at, rng.choice(vocabulary))
        elif len(out) > 1:
            del out[at]
    return " ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variants", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    texts = [t for t in topics.values() if len(t.split()) >= 200]
    vocabulary = sorted({w for t in texts for w in t.split()})
    hashes = []
    for text in texts:
        fp = fingerprint(text)
        assert fp is not None
        hashes.append(fp.simhash)
    found: dict[float, list[bool]] = {share: [] for share in NEAR_EDITS}
    called_near = truly_near = 0
    for text, base in zip(texts, hashes, strict=True):
        words = text.split()
        for share in (*NEAR_EDITS, FAR_EDITS):
            for _ in range(args.variants):
                fp = fingerprint(edited(words, share, rng, vocabulary))
                assert fp is not None
                near = hamming(base, fp.simhash) <= NEAR_BITS
                if share in found:
                    found[share].append(near)
                called_near += near
                truly_near += near and share in found
    for a, b in itertools.combinations(hashes, 2):  # different pages
        called_near += hamming(a, b) <= NEAR_BITS
    pairs = len(texts) * (len(texts) - 1) // 2
    print(
        f"{len(texts)} texts (median {statistics.median(len(t.split()) for t in texts):.0f} words)"
    )
    print(f"near duplicate: simhash within {NEAR_BITS} bits of 64")
    print("| words edited | pairs | recall |")
    print("|---|---|---|")
    for share, hits in found.items():
        print(f"| {share:.1%} | {len(hits)} | {sum(hits) / len(hits):.3f} |")
    far = len(texts) * args.variants
    print(f"not near: {far} copies with {FAR_EDITS:.0%} of words edited, {pairs} pairs of texts")
    print(f"precision: {truly_near}/{called_near} = {truly_near / max(1, called_near):.4f}")
    cpu = []
    for text in texts:
        start = time.process_time()
        for _ in range(50):
            fingerprint(text)
        cpu.append((time.process_time() - start) / 50 * 1000)
    print(f"CPU a fingerprint: median {statistics.median(cpu):.3f} ms")


if __name__ == "__main__":
    main()
