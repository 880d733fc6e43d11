"""The options of ``crawl --help``'s "content" section.

Text and duplicates: fingerprints, extraction, PDF. A group of
:class:`mpcrawler.settings.Settings` (``settings.content``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import MIB, option

__all__ = ["ContentOptions"]


@dataclass(frozen=True)
class ContentOptions:
    """Options: text and duplicates: fingerprints, extraction, PDF."""

    dedup: bool = option(
        True,
        flag="--no-dedup",
        group="content",
        help="do not recognise pages by their text: by default a page whose normalized text "
        "(digits folded) another URL had is recorded with duplicate_of and its links are not "
        "followed",
    )
    near_duplicates: bool = option(
        False,
        group="content",
        help="also record a page within a few bits of the simhash of a page of its host with "
        "near_duplicate_of (its words' simhash: up to a third more CPU a page; not with "
        "--no-dedup)",
    )
    skip_near_duplicates: bool = option(
        False,
        group="content",
        help="do not follow the links of a near duplicate either (implies --near-duplicates)",
    )
    soft_404_probe: bool = option(
        False,
        group="content",
        help="after a host's first page, ask it once for a path that cannot exist: a 200 "
        "with a text is its soft-404 page, and a page with that text is recorded with "
        "soft_404 and its links are not followed (one more request a host; not with "
        "--no-dedup)",
    )
    extract: bool = option(
        False,
        help="record each page's main content: text, markdown, lang and text_digest (HTML, and "
        "PDFs where --accept-type takes application/pdf: their text, pages and title); "
        "with --warc, the text is archived as a conversion record",
        group="content",
    )
    max_text: int = option(
        1 * MIB,
        minimum=1,
        size=True,
        metavar="CHARS",
        help="--extract: a record's text and markdown are cut at this many characters each, "
        "and the record says text_truncated (its text_digest is of the whole text); K, M, G "
        "suffixes (default 1M)",
        group="content",
    )
    pdf_timeout: float = option(
        30.0,
        above=0,
        maximum=3600,
        duration=True,
        metavar="DURATION",
        help="--extract: the longest a PDF may take to read (each in a process of its worker's "
        "own, off its parser); one that takes longer is its page's error (default 30s)",
        group="content",
    )

    @property
    def finds_near(self) -> bool:
        """Whether near duplicates are looked for: with --near-duplicates (or
        --skip-near-duplicates), unless --no-dedup."""
        return self.dedup and (self.near_duplicates or self.skip_near_duplicates)
