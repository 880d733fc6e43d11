"""The options of ``crawl --help``'s "archive" section.

Archiving: WARC, CDXJ, WACZ, page requisites. A group of
:class:`mpcrawler.settings.Settings` (``settings.archive``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import EMBED_HOPS_LIMIT, MIB, option

__all__ = ["ArchiveOptions"]


@dataclass(frozen=True)
class ArchiveOptions:
    """Options: archiving: WARC, CDXJ, WACZ, page requisites."""

    warc_dir: str | None = option(
        None,
        flag="--warc",
        metavar="DIR",
        help="archive every fetch in WARC/1.1 files in DIR (each worker writes its own)",
        group="archive",
    )
    warc_size: int = option(
        1024 * MIB,
        minimum=1,
        size=True,
        metavar="BYTES",
        help="start a new WARC file past this size; K, M, G suffixes (default 1G)",
        group="archive",
    )
    page_requisites: bool = option(
        False,
        flag="--page-requisites",
        help="also fetch what each page needs to render (images, stylesheets, scripts, fonts, "
        "media, frames) from any host, as embeds: not counted by --max-pages (wget -p)",
        group="archive",
    )
    max_embed_hops: int = option(
        3,
        minimum=1,
        maximum=EMBED_HOPS_LIMIT,
        help="--page-requisites: embeds of embeds followed this many hops from their page "
        "(a stylesheet's fonts are 2; default %(default)s)",
        group="archive",
    )
    max_embeds: int | None = option(
        None,
        minimum=1,
        help="--page-requisites: embeds queued at most (default: none)",
        group="archive",
    )
    filter_embeds: bool = option(
        False,
        help="--page-requisites: --accept-regex, --reject-ext and --accept-type apply to embeds "
        "too (by default they apply to pages only)",
        group="archive",
    )
    cdxj: bool = option(
        False,
        help="--warc: keep DIR/index.cdxj, a sorted CDXJ index of the WARC files (as "
        "cdxj-indexer writes it), written at each checkpoint and at the end",
        group="archive",
    )
    wacz: str | None = option(
        None,
        metavar="FILE",
        help="--warc: at the end, package the WARC files, their index and the pages as a "
        "WACZ file (implies --cdxj)",
        group="archive",
    )
