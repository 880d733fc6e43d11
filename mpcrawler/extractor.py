"""The extractor outside a crawl: ``mpcrawler.extract(html, url)``.

What ``--extract`` puts in a page's record, for a page one already has, as
``trafilatura.extract`` serves its users: the same analyzer (lxml's) reads
it, so the fields are a record's, byte for byte:

    title, headline, text, markdown, lang, text_digest, text_truncated
    (where cut), and the metadata the page says: author, published,
    modified, description, site_name, canonical, image, tags

``html`` is bytes (decoded as a crawl decodes a body: the ``charset`` given,
else the document's, else detected) or str.  A page with no HTML in it gives
a title of None and no text.  No I/O.
"""

from __future__ import annotations

from typing import Any

__all__ = ["extract"]


def extract(
    html: bytes | str, url: str, *, charset: str | None = None, max_text: int = 1_000_000
) -> dict[str, Any]:
    """The record's fields of the page ``html`` found at ``url`` (absolute
    links, metadata URLs); ``max_text``: as ``--max-text``.  ValueError
    for a URL that is not absolute http(s)."""
    from .settings import Settings
    from .web.urls import InvalidURL, canonicalize
    from .worker.analyzer import LxmlAnalyzer
    from .worker.downloader import Response

    try:
        base = canonicalize(url)
    except InvalidURL as exc:
        raise ValueError(f"{url[:200]!r} is not an absolute http(s) URL: {exc.reason}") from None
    if isinstance(html, str):
        body, charset = html.encode("utf-8"), "utf-8"
    else:
        body = html
    settings = Settings(workers=1, extract=True, max_text=max_text, dedup=False)
    analyzer = LxmlAnalyzer(settings)
    response = Response(base, 200, body=body, content_type="text/html", charset=charset)
    analysis = analyzer.analyze(response)
    item = {k: v for k, v in analysis.item.items() if k != "encoding"}
    return {"title": None, "text": "", **item}
