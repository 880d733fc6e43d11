"""A WACZ package of a crawl (``--wacz FILE``): its WARC files, their index
and its pages in one ZIP that ReplayWeb.page and pywb open.

Written by the master at the end of a run, after the index is whole
(:class:`mpcrawler.archive.cdxj.CdxjIndex`) and the records are closed.  The
layout is WACZ 1.1.1's:

- ``archive/*.warc.gz``, stored (a WARC is compressed already);
- ``indexes/index.cdx``: the CDXJ index, as ``WARC_DIR/index.cdxj`` is;
- ``pages/pages.jsonl``: a header line, then each page recorded with a 2xx
  answer and no error (not embeds, robots.txt or sitemaps) with an ``id``
  (as Browsertrix writes: here a digest of its URL and time), its URL, the
  time of its capture and its title (empty where it has none).  Every row
  has the same fields, and an ``id``: the reference validator (py-wacz)
  reads a row's columns from the header line's (``format``, ``id``,
  ``title``), so a row whose title is empty and that had no id was blank;
- ``datapackage.json``: every other file with its size and SHA-256, and
  ``datapackage-digest.json``: the digest of that.

The package is built beside ``FILE`` under a temporary name and renamed
whole: a kill while packaging leaves no partial file under the final name,
and running the job again packages it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..__version__ import __version__
from .cdxj import INDEX, WARC_SUFFIX

__all__ = ["WACZ_VERSION", "page_entries", "write_wacz"]

WACZ_VERSION = "1.1.1"
PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}


def page_entries(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """pages.jsonl's entries: the pages recorded with a 2xx and no error."""
    for record in records:
        status = record.get("status")
        if record.get("kind") or record.get("error") or not isinstance(status, int):
            continue
        if not 200 <= status < 300 or not record.get("warc_file"):
            continue
        fetched = record.get("fetched_at")
        url = record.get("final_url") or record["url"]
        ts = None
        if isinstance(fetched, int | float):
            ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(fetched))
        page_id = hashlib.blake2b(f"{ts} {url}".encode(), digest_size=16).hexdigest()
        entry: dict[str, Any] = {"id": page_id, "url": url}
        if ts is not None:
            entry["ts"] = ts
        entry["title"] = record.get("title") or ""
        yield entry


def _sha256(f: BinaryIO) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    while chunk := f.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    return size, "sha256:" + digest.hexdigest()


def _datapackage(
    resources: list[dict[str, Any]],
    title: str,
    main_page: str | None,
    first: dict[str, Any] | None,
) -> bytes:
    """``datapackage.json``: the files with their digests, and the crawl's
    main page (``main_page``, else the first page of pages.jsonl)."""
    package: dict[str, Any] = {
        "profile": "data-package",
        "resources": resources,
        "wacz_version": WACZ_VERSION,
        "software": f"mpcrawler/{__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "title": title,
    }
    main = main_page or (first or {}).get("url")
    if main:
        package["mainPageUrl"] = main
        if first and first.get("url") == main and "ts" in first:
            package["mainPageDate"] = first["ts"]
    return json.dumps(package, indent=2).encode()


def write_wacz(
    target: str | os.PathLike[str],
    warc_dir: str | os.PathLike[str],
    records: Iterable[dict[str, Any]],
    *,
    title: str = "mpcrawler crawl",
    main_page: str | None = None,
) -> Path:
    """Package the WARC files and index of ``warc_dir`` and the pages of
    ``records`` as the WACZ ``target``; its path."""
    target, warcs = Path(target), Path(warc_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        stale.unlink(missing_ok=True)  # a package a kill left unfinished
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    resources: list[dict[str, Any]] = []

    def add(name: str, source: BinaryIO, stored: bool) -> None:
        size, digest = _sha256(source)
        source.seek(0)
        info = zipfile.ZipInfo(name, time.gmtime()[:6])
        info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as out:
            shutil.copyfileobj(source, out, 1 << 20)
        resources.append({"name": Path(name).name, "path": name, "hash": digest, "bytes": size})

    try:
        with zipfile.ZipFile(tmp, "w") as archive:
            for path in sorted(warcs.glob("*" + WARC_SUFFIX)):
                with open(path, "rb") as f:
                    add(f"archive/{path.name}", f, stored=True)
            with open(warcs / INDEX, "rb") as f:
                add("indexes/index.cdx", f, stored=False)
            pages_path = tmp.with_suffix(".pages")
            try:
                with open(pages_path, "w+b") as pages:
                    pages.write((json.dumps(PAGES_HEADER) + "\n").encode())
                    first = None
                    for entry in page_entries(records):
                        first = first or entry
                        pages.write((json.dumps(entry, ensure_ascii=False) + "\n").encode())
                    pages.seek(0)
                    add("pages/pages.jsonl", pages, stored=False)
            finally:
                pages_path.unlink(missing_ok=True)
            data = _datapackage(resources, title, main_page, first)
            archive.writestr("datapackage.json", data, zipfile.ZIP_DEFLATED)
            digest = {
                "path": "datapackage.json",
                "hash": "sha256:" + hashlib.sha256(data).hexdigest(),
            }
            archive.writestr(
                "datapackage-digest.json", json.dumps(digest, indent=2), zipfile.ZIP_DEFLATED
            )
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
