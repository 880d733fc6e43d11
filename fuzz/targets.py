"""Fuzz targets: every parser of outside input, one function each.

A target takes arbitrary bytes and exercises one parser the way the crawler
does, through the crawler's own code.  The documented failures (InvalidURL
for a URL, FrontierError for a frontier that cannot be opened) are accepted;
any other exception, a broken invariant (an AssertionError here) or a hang is
a finding.  Two drivers feed them: ``fuzz/run.py`` (atheris, coverage-guided,
for long runs) and ``tests/unit/test_fuzz.py`` (hypothesis, a short pass in CI).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import math
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from mpcrawler.frontier import FrontierError, UrlInfo, UrlQueueManager, frame_payload
from mpcrawler.output.jobdir import recount
from mpcrawler.output.pipelines import JsonLinesPipeline
from mpcrawler.robots.rules import RobotsRules
from mpcrawler.settings import Settings
from mpcrawler.web import sitemaps
from mpcrawler.web.filters import QueryRules, UrlRules
from mpcrawler.web.pdf import PdfError, read_pdf
from mpcrawler.web.urls import InvalidURL, Scope, canonicalize
from mpcrawler.worker.analyzer import Analysis, HtmlAnalyzer, LxmlAnalyzer
from mpcrawler.worker.downloader import Response
from mpcrawler.worker.links import LinkResolver, document_base

__all__ = ["TARGETS"]

logging.disable(logging.CRITICAL)  # the parsers warn about what they skip: expected here

_BASES = [
    "http://h.test/dir/page?q=1",
    "https://h.test:8443/",
    "http://[::1]:8080/a/b/",
    "http://xn--bcher-kva.example/%7Ea/",
    "ftp://h.test/dir/",
]
_SCOPE = Scope.from_seeds(["http://h.test/"], ["test"])
_RULES = UrlRules(_SCOPE, query=QueryRules(session_ids=False))  # canonicalize's own forms
_CLEAN = UrlRules(_SCOPE, query=QueryRules(strip=("utm_*",), sort=True))


def _text(data: bytes) -> str:
    """Any str, lone surrogates included (invalid UTF-8 becomes them)."""
    return data.decode("utf-8", "surrogateescape")


def _split(data: bytes, parts: int) -> list[bytes]:
    """``data`` cut at its first ``parts - 1`` 0xFF bytes (missing parts empty)."""
    pieces = data.split(b"\xff", parts - 1)
    return pieces + [b""] * (parts - len(pieces))


def _check_canonical(url: str) -> None:
    assert url.startswith(("http://", "https://")), url
    assert url.isascii() and "#" not in url, url
    assert not any(c <= " " or c == "\x7f" for c in url), url
    assert canonicalize(url) == url, ("not a fixed point", url)
    assert canonicalize(url, _BASES[0]) == url, ("an absolute URL depends on its base", url)


def url_target(data: bytes) -> None:
    """canonicalize, and the worker's link resolution with its memo."""
    href_bytes, base_bytes = _split(data, 2)
    href = _text(href_bytes)
    resolver = LinkResolver(_RULES, max_url_length=2048)
    for base in [_text(base_bytes), *_BASES]:
        try:
            expected: str | None = canonicalize(href, base)
        except InvalidURL:
            expected = None
        if expected is not None:
            _check_canonical(expected)
            cleaned = _CLEAN.clean(expected)  # the query clean-up keeps a URL canonical
            _check_canonical(cleaned)
            assert _CLEAN.clean(cleaned) == cleaned, ("clean-up is not idempotent", expected)
        try:
            page = canonicalize(base)
        except InvalidURL:
            continue
        # Workers resolve against canonical page URLs: that must change nothing.
        try:
            assert canonicalize(href, page) == expected, (href, base, page)
        except InvalidURL:
            assert expected is None, (href, base, page)
        via_page = None if expected is None or len(expected) > 2048 else expected
        assert resolver.canonical(href, page) == via_page, (href, page)
        assert resolver.canonical(href, page) == via_page, ("the memo", href, page)
        assert isinstance(document_base(href, page), str)
        found, inside = resolver.resolve([href, href], page)
        assert found == (via_page is not None) and len(inside) <= found
        for url in inside:
            _check_canonical(url)
            assert _SCOPE.allows(url)


_CONTENT_TYPES = ["text/html", "application/xhtml+xml", "text/plain", "image/png", ""]
_CHARSETS = [None, "utf-8", "iso-8859-1", "shift_jis", "utf-16", "bogus-charset", "utf-7"]
_ANALYZERS = [HtmlAnalyzer(Settings()), LxmlAnalyzer(Settings())]


def analyzer_target(data: bytes) -> None:
    """Both built-in analyzers on bytes that claim to be HTML, then link resolution."""
    selector = data[0] if data else 0
    body = data[1:]
    content_type = _CONTENT_TYPES[selector % len(_CONTENT_TYPES)]
    charset = _CHARSETS[(selector // len(_CONTENT_TYPES)) % len(_CHARSETS)]
    url = "http://h.test/dir/page.html"
    response = Response(url=url, status=200, body=body, content_type=content_type, charset=charset)
    for analyzer in _ANALYZERS:
        _check_analysis(analyzer.analyze(response), url)


def _check_analysis(analysis: Analysis, url: str) -> None:
    assert isinstance(analysis.base, str)
    assert all(isinstance(link, str) for link in analysis.links)
    title = analysis.item.get("title")
    assert title is None or isinstance(title, str)
    json.dumps(analysis.item, ensure_ascii=False)  # it must fit in a record
    base = document_base(analysis.base, url)
    found, inside = LinkResolver(_RULES, 2048).resolve(analysis.links, base)
    assert len(inside) <= found <= len(analysis.links)
    for link in inside:
        _check_canonical(link)


_EXTRACTORS = [cls(Settings(extract=True)) for cls in (HtmlAnalyzer, LxmlAnalyzer)]


def extract_target(data: bytes) -> None:
    """--extract: both analyzers' main content, Markdown and language of fuzzed HTML."""
    url = "http://h.test/dir/page.html"
    response = Response(url=url, status=200, body=data, content_type="text/html")
    for analyzer in _EXTRACTORS:
        item = analyzer.analyze(response).item
        if "text" in item:
            assert isinstance(item["text"], str) and isinstance(item["markdown"], str)
            assert item["lang"] is None or (
                isinstance(item["lang"], str) and len(item["lang"]) <= 3
            )
            assert len(item["text_digest"]) == 32
        json.dumps(item, ensure_ascii=False)


def _pdf_template() -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.add_metadata({"/Title": "t"})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


_PDF = _pdf_template()


def pdf_target(data: bytes) -> None:
    """A PDF as --extract reads it: the fuzzed bytes written over a valid PDF
    at a place the first byte picks; its content, or a PdfError at worst."""
    at = (data[0] * len(_PDF)) // 256 if data else 0
    body = _PDF[:at] + data[1:] + _PDF[at + max(len(data) - 1, 0) :]
    try:
        content = read_pdf(body)
    except PdfError:
        return
    assert isinstance(content.text, str) and content.pages >= 0
    assert all(isinstance(link, str) for link in content.links)


_AGENTS = ["mpcrawler/0.1.0 (+https://pypi.org/project/mpcrawler/)", "*", ""]


def robots_target(data: bytes) -> None:
    """robots.txt as the crawler reads it: decoded, parsed, asked."""
    body, path = _split(data, 2)
    for agent in _AGENTS:
        rules = RobotsRules.parse(body, agent)
        delay = rules.crawl_delay
        assert delay is None or (math.isfinite(delay) and delay >= 0), delay
        for url in ("http://h.test/", "http://h.test/" + _text(path), "http://h.test/a?b=%7e"):
            try:
                url = canonicalize(url)
            except InvalidURL:
                continue
            assert isinstance(rules.allows(url), bool)
        assert all(isinstance(s, str) for s in rules.sitemaps)


def _frontier_template() -> Path:
    """A frontier directory with a snapshot, segments and a journal (which
    acks URLs of the snapshot and of the segments)."""
    directory = Path(tempfile.mkdtemp(prefix="fuzz-frontier-", dir=_scratch()))
    q = UrlQueueManager(directory, cache_size=4)
    items: list[UrlInfo] = []
    for i in range(24):
        if i == 12:
            q.checkpoint()
        q.put(f"http://h.test/{i}", depth=i % 3, priority=i % 4 - 1)
        if i % 5 == 0 and (item := q.lease()) is not None:
            items.append(item)
    for item in items[::2]:
        q.ack(item)
    q.flush()
    for i in range(24, 34):
        q.put(f"http://h.test/{i}\u00e9", depth=1, priority=i % 2)
    for _ in range(5):
        if (item := q.lease()) is not None and item.seq % 2:
            q.ack(item)
    q.sync()
    q.abandon()
    return directory


def _scratch() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


_TEMPLATE: list[Path] = []


def frontier_target(data: bytes) -> None:
    """Reopen a frontier whose files hold fuzzed bytes; drain it; reopen it.

    The first byte picks the file, the second how to spoil it: replace it,
    replace it with well-framed records of fuzzed payloads (so decoding, not
    the checksum, meets them), overwrite, truncate or append.
    """
    if not _TEMPLATE:
        _TEMPLATE.append(_frontier_template())
    if len(data) < 2:
        return
    directory = Path(tempfile.mkdtemp(prefix="fuzz-case-", dir=_scratch()))
    try:
        shutil.copytree(_TEMPLATE[0], directory, dirs_exist_ok=True)
        names = sorted(p.name for p in directory.iterdir())
        path = directory / names[data[0] % len(names)]
        original = path.read_bytes()
        mode, rest = data[1] % 5, data[2:]
        at = int.from_bytes(rest[:2], "little") % (len(original) + 1)
        if mode == 0:
            spoiled = rest
        elif mode == 1:
            spoiled = b"".join(frame_payload(p) for p in rest.split(b"\xfe"))
        elif mode == 2:
            spoiled = original[:at] + rest[2:] + original[at + len(rest[2:]) :]
        elif mode == 3:
            spoiled = original[:at]
        else:
            spoiled = original + rest
        path.write_bytes(spoiled)
        try:
            q = UrlQueueManager(directory, cache_size=4)
        except FrontierError:
            return
        urls = []
        while (item := q.lease()) is not None:
            assert isinstance(item.url, str) and isinstance(item.priority, int)
            urls.append(item.url)
            q.ack(item)
        assert len(q) == 0 and q.taken == 0
        q.close()
        with UrlQueueManager(directory, cache_size=4) as again:
            assert len(again) == 0 and again.lease() is None, "drained and acked, yet queued"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def jsonl_target(data: bytes) -> None:
    """The records file after a torn write: mended on open, then recounted."""
    with tempfile.TemporaryDirectory(dir=_scratch()) as tmp:
        path = Path(tmp) / "pages.jsonl"
        path.write_bytes(data)
        output = JsonLinesPipeline(path)
        output.open()
        output.close()
        kept = path.read_bytes()
        assert kept == data[: data.rfind(b"\n") + 1], "more than the torn tail was cut"
        expected = 0
        for line in kept.split(b"\n"):
            with contextlib.suppress(ValueError):
                expected += isinstance(json.loads(line.decode("utf-8")), dict)
        tally = recount(output.records())
        assert tally.pages == expected, (tally.pages, expected)
        assert sum(tally.statuses.values()) == expected
        assert sum(tally.errors.values()) <= expected
        json.dumps({"statuses": tally.statuses, "errors": tally.errors})  # job.json takes them


def sitemap_target(data: bytes) -> None:
    """A sitemap as the worker reads it: XML, gzip or text; a SitemapError at worst."""
    for body in (data, gzip.compress(data)):
        try:
            parsed = sitemaps.parse(body)
        except sitemaps.SitemapError as exc:
            assert str(exc)
            continue
        assert len(parsed.pages) + len(parsed.sitemaps) <= sitemaps.MAX_URLS
        for loc, priority, lastmod in parsed.pages:
            assert isinstance(loc, str) and -10 <= priority <= 10
            assert lastmod is None or isinstance(lastmod, str)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "url": url_target,
    "analyzer": analyzer_target,
    "robots": robots_target,
    "sitemap": sitemap_target,
    "frontier": frontier_target,
    "jsonl": jsonl_target,
    "extract": extract_target,
    "pdf": pdf_target,
}
