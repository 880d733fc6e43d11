"""Precision and recall of the near-duplicate test (64-bit simhash within
NEAR_BITS bits), and the CPU a fingerprint costs, on texts with known edits.

    python benchmarks/bench_simhash.py [--seed 1] [--variants 20] [--index]

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

With ``--index``, the same pages go through the crawl's content index
(:class:`~mpcrawler.frontier.local.content.LocalContentIndex`) as one host's, in
a random order (a family's copies spread over the whole crawl: the worst
case for pieces that keep only their newest pages), with each piece
keeping its newest PIECE_KEEP pages (as a crawl does) and keeping every
page (as before pieces were bounded): recall is the share of near copies
the index called near (or exact) to a page of their own family, precision
the share of pages it called near whose named page is of their family.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import tempfile
import time
from pathlib import Path
from pydoc_data.topics import topics

from mpcrawler.content.fingerprint import NEAR_BITS, fingerprint, hamming
from mpcrawler.content.index import PIECE_KEEP, Page
from mpcrawler.frontier.local.content import LocalContentIndex

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
    parser.add_argument("--index", action="store_true", help="through the content index too")
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
    if args.index:
        index_quality(texts, vocabulary, args)
    cpu = []
    for text in texts:
        start = time.process_time()
        for _ in range(50):
            fingerprint(text)
        cpu.append((time.process_time() - start) / 50 * 1000)
    print(f"CPU a fingerprint: median {statistics.median(cpu):.3f} ms")


def index_quality(texts: list[str], vocabulary: list[str], args: argparse.Namespace) -> None:
    """Recall and precision of the content index on the texts, their near
    and far copies, as one host's pages in a random order."""
    rng = random.Random(args.seed)
    host = "http://docs.test"
    pages, family, near_copy = [], {}, set()
    for t, text in enumerate(texts):
        words = text.split()
        variants = [(text, "base")] + [
            (edited(words, share, rng, vocabulary), f"{share}")
            for share in (*NEAR_EDITS, FAR_EDITS)
            for _ in range(args.variants)
        ]
        for v, (body, share) in enumerate(variants):
            fp = fingerprint(body)
            assert fp is not None
            url = f"{host}/{t}/{v}"
            pages.append(Page(url, host, fp.digest, fp.simhash))
            # a far copy is a family of its own: naming its text near is wrong
            family[url] = f"{t}/{v}" if share == str(FAR_EDITS) else str(t)
            if share not in ("base", str(FAR_EDITS)):
                near_copy.add(url)
    rng.shuffle(pages)
    print(f"\nthe content index, {len(pages):,} pages of one host, in a random order:")
    print("| pieces keep | near copies found (recall) | called near, rightly (precision) |")
    print("|---|---|---|")
    for keep in (PIECE_KEEP, len(pages)):
        with tempfile.TemporaryDirectory() as tmp:
            index = LocalContentIndex(Path(tmp), keep=keep)
            met = []
            for at in range(0, len(pages), 50):
                met += index.check(pages[at : at + 50])
            index.close()
        found = eligible = called = right = 0
        seen_family: set[str] = set()
        for page, m in zip(pages, met, strict=True):
            named = m.near_duplicate_of or m.duplicate_of
            kin = named is not None and family[named] == family[page.url]
            # a near copy met before any other page of its family has nothing to be found near
            if page.url in near_copy and family[page.url] in seen_family:
                found += kin
                eligible += 1
            if m.near_duplicate_of is not None:
                called += 1
                right += kin
            seen_family.add(family[page.url])
        label = f"{keep} (newest)" if keep == PIECE_KEEP else "all (unbounded)"
        recall, precise = found / eligible, right / called
        print(f"| {label} | {found}/{eligible} = {recall:.4f} | {right}/{called} = {precise:.4f} |")


if __name__ == "__main__":
    main()
