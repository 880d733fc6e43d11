"""--extract end to end: a real crawl of a scripted server with pages of the
gold set and PDFs (good, damaged, encrypted), records read back, the WARC's
conversion records read with warcio and checked by `warcio check`."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF
from hostile import Reply, links, serve
from support import crawl_records
from test_warc import records_of, warc_files, warcio_check

from mpcrawler.content.fingerprint import text_digest
from mpcrawler.testing.extraction import gold_pages
from mpcrawler.testing.pdfs import long_pdf, pdf_of

GOLD = {p.file: p for p in gold_pages(Path(__file__).resolve().parent.parent / "data" / "extract")}
PDF_ACCEPTED = ("--accept-type", "text/html,application/pdf")
DATA = Path(__file__).resolve().parent.parent / "data" / "metadata"  # Readability's pages


def pdf(base: str, password: str | None = None) -> bytes:
    """A PDF of two pages with a title and a link to ``base``/from-pdf."""
    document = FPDF()
    document.set_title("Annual report")
    document.set_font("helvetica", size=12)
    document.add_page()
    document.write(8, "First page of the annual report of the allotment society. ")
    document.write(8, "Read the next part", link=f"{base}/from-pdf")
    document.add_page()
    document.cell(text="Second page: the accounts of the year.")
    if password is not None:
        document.set_encryption(owner_password="owner", user_password=password)
    return bytes(document.output())


def pdf_reply(body: bytes) -> Reply:
    return 200, {"Content-Type": "application/pdf"}, body


def html_reply(name: str) -> Reply:
    return 200, {"Content-Type": "text/html; charset=utf-8"}, GOLD[name].body


def site() -> dict[str, Any]:
    routes: dict[str, Any] = {
        "/": lambda h, n: links(
            "/blog",
            "/news",
            "/report.pdf",
            "/locked.pdf",
            "/damaged.pdf",
            "/owner.pdf",
            "/cyclic.pdf",
        ),
        "/blog": lambda h, n: html_reply("blog-en.html"),
        "/news": lambda h, n: html_reply("news-de.html"),
        "/from-pdf": lambda h, n: links(title="reached from a PDF"),
    }
    return routes


def crawl(url: str, job: Path, *extra: str) -> dict[str, dict[str, Any]]:
    records = crawl_records(url + "/", job, "--no-robots", "--max-depth", "2", *extra)
    return {r["url"].split("/", 3)[3]: r for r in records}


def add_pdfs(routes: dict[str, Any], base: str) -> None:
    good = pdf(base)
    routes["/report.pdf"] = lambda h, n: pdf_reply(good)
    routes["/locked.pdf"] = lambda h, n: pdf_reply(pdf(base, password="secret"))
    routes["/owner.pdf"] = lambda h, n: pdf_reply(pdf(base, password=""))
    routes["/damaged.pdf"] = lambda h, n: pdf_reply(good[: len(good) // 2])
    routes["/cyclic.pdf"] = lambda h, n: pdf_reply(CYCLIC)


# A page tree that is its own child, through another.
CYCLIC = pdf_of(
    [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>",
    ]
)


@pytest.mark.parametrize("analyzer", ["bs4", "lxml"])
def test_records_carry_main_text_markdown_language_and_pdfs(tmp_path: Path, analyzer: str) -> None:
    routes = site()
    with serve(routes) as server:
        add_pdfs(routes, server.url)
        records = crawl(
            server.url, tmp_path / "job", "--extract", "--analyzer", analyzer, *PDF_ACCEPTED
        )
        counts = server.log.counts()
    blog = records["blog"]
    assert blog["lang"] == "en"  # declared: en-GB
    assert "Why our sourdough failed three times" in blog["text"]
    assert "protein, about 10.5 percent" in blog["text"]
    assert "We use cookies" not in blog["text"] and "Recent Posts" not in blog["text"]
    assert "Leave a Reply" not in blog["text"] and "Powered by WordPress" not in blog["text"]
    assert "## The starter was not the problem" in blog["markdown"]
    assert "- Lower the hydration by five percent when you change flour." in blog["markdown"]
    assert "**10.5 percent**" in blog["markdown"]
    assert "> Bake with the flour you have" in blog["markdown"]
    assert blog["text_digest"] == text_digest(blog["text"])
    news = records["news"]
    assert news["lang"] == "de"  # not declared: identified from the text
    assert news["text"].startswith("Stadtrat beschließt neue Radwege")
    assert "Cookies" not in news["text"] and "Meistgelesen" not in news["text"]
    report = records["report.pdf"]
    assert (report["error"], report["pages"], report["title"]) == (None, 2, "Annual report")
    assert "First page of the annual report" in report["text"]
    assert "accounts of the year" in report["text"] and report["lang"] == "en"
    # its link is followed, as a page's
    assert counts["/from-pdf"] == 1 and records["from-pdf"]["depth"] == 2
    assert records["owner.pdf"]["pages"] == 2  # only its permissions are locked: read
    locked, damaged = records["locked.pdf"], records["damaged.pdf"]
    assert (locked["error_kind"], locked["error"]) == (
        "pdf",
        "pdf: the PDF is encrypted with a password",
    )
    assert damaged["error_kind"] == "pdf" and damaged["error"].startswith("pdf: damaged PDF")
    assert "text" not in locked and "text" not in damaged
    assert records["cyclic.pdf"]["error"] == (
        "pdf: damaged PDF: PdfReadError: Detected cyclic page references."
    )
    assert all(counts[path] == 1 for path in counts), counts  # no retry, no worker lost


def test_a_pdf_served_as_an_untyped_file_is_read_by_its_bytes(tmp_path: Path) -> None:
    """A server that types a PDF as application/octet-stream: with that type
    accepted, the body is known by its %PDF- bytes and read as a PDF; an
    untyped file that is no PDF stays a file without text."""
    untyped = {"Content-Type": "application/octet-stream"}
    routes: dict[str, Any] = {
        "/": lambda h, n: links("/download?id=7", "/blob.bin"),
        "/from-pdf": lambda h, n: links(title="reached from a PDF"),
        "/blob.bin": lambda h, n: (200, untyped, b"\x00\x01 not a document"),
    }
    with serve(routes) as server:
        body = pdf(server.url)
        routes["/download?id=7"] = lambda h, n: (200, untyped, body)
        records = crawl(
            server.url,
            tmp_path / "job",
            "--extract",
            "--accept-type",
            "text/html,application/octet-stream",
            "--reject-ext",
            "",
        )
    report = records["download?id=7"]
    assert (report["error"], report["pages"], report["title"]) == (None, 2, "Annual report")
    assert "First page of the annual report" in report["text"]
    assert "from-pdf" in records  # its link followed
    blob = records["blob.bin"]
    assert blob["error"] is None and "text" not in blob and "pages" not in blob


def test_without_extract_records_have_no_text_and_pdfs_are_not_read(tmp_path: Path) -> None:
    routes = site()
    with serve(routes) as server:
        add_pdfs(routes, server.url)
        records = crawl(server.url, tmp_path / "job")
        assert not any("text" in r or "lang" in r for r in records.values())
        assert "report.pdf" not in records  # refused by --reject-ext's default list
        records = crawl(server.url, tmp_path / "pdfs", *PDF_ACCEPTED)  # fetched, not read
        counts = server.log.counts()
    assert records["report.pdf"]["error"] is None and "text" not in records["report.pdf"]
    assert records["locked.pdf"]["error"] is None  # not read: no error either
    assert counts["/report.pdf"] == 1 and counts["/from-pdf"] == 0


def test_warc_holds_a_conversion_record_for_each_text(tmp_path: Path) -> None:
    routes = site()
    with serve(routes) as server:
        add_pdfs(routes, server.url)
        records = crawl(server.url, tmp_path / "job", "--extract", "--warc", str(tmp_path / "w"))
    files = warc_files(tmp_path / "w")
    archived = [r for f in files for r in records_of(f)]
    responses = {
        r["headers"].get_header("WARC-Record-ID"): r["uri"]
        for r in archived
        if r["type"] == "response"
    }
    conversions = [r for r in archived if r["type"] == "conversion"]
    texts = {r["url"]: r["text"] for r in records.values() if r.get("text")}
    assert len(conversions) == len(texts) >= 3  # /blog, /news, /report.pdf ...
    for conversion in conversions:
        refers_to = conversion["headers"].get_header("WARC-Refers-To")
        assert responses[refers_to] == conversion["uri"]
        assert conversion["headers"].get_header("Content-Type") == "text/plain; charset=utf-8"
        assert conversion["payload"].decode("utf-8") == texts[conversion["uri"]]
    for file in files:
        check = warcio_check(file)
        assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("downloader", ["http", "curl"])
def test_a_long_pdf_holds_neither_its_workers_other_pages_nor_past_its_limit(
    tmp_path: Path, downloader: str
) -> None:
    """One worker of two slots: while a PDF that takes tens of seconds to
    read is read (in the worker's reader process), the worker's other pages
    are parsed and their links fetched, three levels of them; past
    --pdf-timeout the PDF is its page's error, and nothing is retried."""
    routes: dict[str, Any] = {
        "/": lambda h, n: links("/long.pdf", "/a"),
        "/long.pdf": lambda h, n: pdf_reply(LONG),
        "/a": lambda h, n: links("/b"),
        "/b": lambda h, n: links("/c"),
        "/c": lambda h, n: links(title="three levels down"),
    }
    with serve(routes) as server:
        records = crawl_records(
            server.url + "/",
            tmp_path / "job",
            *("--workers", "1", "--threads", "2", "--downloader", downloader),
            *("--no-robots", "--extract", "--pdf-timeout", "5", *PDF_ACCEPTED),
        )
        counts = server.log.counts()
    order = [r["url"].split("/", 3)[3] for r in records]
    assert order.index("c") < order.index("long.pdf"), order
    long = records[order.index("long.pdf")]
    assert long["error_kind"] == "pdf"
    assert long["error"] == "pdf: reading the PDF took longer than 5 s (--pdf-timeout)"
    assert all(count == 1 for count in counts.values()), counts


LONG = long_pdf()  # about 35 s to read here


@pytest.mark.parametrize("downloader", ["http", "curl"])
def test_a_big_page_is_read_whole_for_its_links_and_in_part_for_its_text(
    tmp_path: Path, downloader: str
) -> None:
    """A 6 MB page (past the 4 MB read as a stream) with --extract: every
    link of it followed, its title, a text of at most --max-text characters
    read from its first part, and a record that says text_truncated."""
    paragraph = "<p>Paragraph {n} of the big page, <a href='/to/{m}'>link {n}</a> in it.</p>\n"
    body = (
        "<html><title>The big page</title><body><main>"
        + "".join(paragraph.format(n=n, m=n % 50) for n in range(90_000))
        + "</main><a href='/last'>the last link</a></body></html>"
    ).encode()
    assert len(body) > 6 << 20
    routes: dict[str, Any] = {
        "/": lambda h, n: (200, {"Content-Type": "text/html; charset=utf-8"}, body),
        "/last": lambda h, n: links(title="the end"),
        **{f"/to/{m}": (lambda h, n: links(title="a paragraph's")) for m in range(50)},
    }
    with serve(routes) as server:
        records = crawl_records(
            server.url + "/",
            tmp_path / "job",
            *("--downloader", downloader, "--no-robots", "--extract"),
            *("--max-bytes", "8M", "--max-text", "100K", "--max-depth", "1"),
        )
        counts = server.log.counts()
    by_path = {r["url"].split("/", 3)[3]: r for r in records}
    big = by_path[""]
    assert big["error"] is None and big["title"] == "The big page"
    assert big["links"] == 51 and big["text_truncated"] is True  # (distinct links)
    assert len(big["text"]) == 100 * 1024 and big["text"].startswith("Paragraph 0 of the big page")
    assert counts["/last"] == 1 and all(counts[f"/to/{m}"] == 1 for m in range(50)), counts


def test_the_public_extract_gives_what_a_crawl_records(tmp_path: Path) -> None:
    """``mpcrawler.extract(html, url)``: the fields of the record the crawl
    of the same page wrote, metadata included, for bytes and for str."""
    import mpcrawler

    sample = DATA / "gitlab-blog"
    html = gzip.decompress((sample / "source.html.gz").read_bytes())
    routes = {"/article": lambda h, n: (200, {"Content-Type": "text/html"}, html)}
    with serve(routes) as site:
        [record] = crawl_records(
            site.url + "/article",
            tmp_path / "job",
            "--extract",
            "--analyzer",
            "lxml",
            "--max-pages",
            "1",
        )
    found = mpcrawler.extract(html, site.url + "/article")
    assert found["author"] and found["published"] and found["text"]
    for name, value in found.items():
        assert record[name] == value, name
    assert mpcrawler.extract(html.decode("utf-8"), site.url + "/article") == found
