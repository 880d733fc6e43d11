"""Main-content extraction (web/extract.py), languages (web/language.py) and
PDFs (web/pdf.py): on the gold set, on Markdown's shapes, on hostile input."""

from __future__ import annotations

from pathlib import Path

import pytest
from fpdf import FPDF
from lxml import etree

from mpcrawler.content.extract import extract
from mpcrawler.content.language import declared, detect, page_language
from mpcrawler.settings import Settings
from mpcrawler.testing.extraction import boilerplate_share, f1, gold_pages, html_text, tokens
from mpcrawler.testing.pdfs import pdf_of
from mpcrawler.web.pdf import PdfError, read_pdf
from mpcrawler.worker.analyzer import HtmlAnalyzer, LxmlAnalyzer, _lxml_tree
from mpcrawler.worker.downloader import Response

GOLD = gold_pages(Path(__file__).resolve().parent.parent / "data" / "extract")


def tree(markup: str) -> object:
    root, _ = _lxml_tree(markup.encode("utf-8"), "utf-8")
    return root


def markdown_of(markup: str, base: str = "https://site.example/a/b.html") -> str:
    return extract(tree(markup), base).markdown


@pytest.mark.parametrize("page", GOLD, ids=[p.file for p in GOLD])
def test_gold_pages_main_text_and_language(page: object) -> None:
    """Every page of the gold set: F1 >= 0.9 against its gold, at most 10%
    of the text boilerplate, and the right language (declared or not)."""
    response = Response(url=page.url, status=200, content_type="text/html", body=page.body)
    item = LxmlAnalyzer(Settings(seeds=[page.url], extract=True)).analyze(response).item
    gold, whole = tokens(page.gold), tokens(html_text(page.body))
    found = tokens(item["text"])
    assert f1(found, gold) >= 0.9, item["text"]
    assert boilerplate_share(found, gold, whole) <= 0.1, item["text"]
    assert item["lang"] == page.lang


def test_both_analyzers_extract_the_same() -> None:
    for page in GOLD:
        response = Response(url=page.url, status=200, content_type="text/html", body=page.body)
        settings = Settings(seeds=[page.url], extract=True)
        ours = [cls(settings).analyze(response).item for cls in (HtmlAnalyzer, LxmlAnalyzer)]
        keys = ("text", "markdown", "lang", "text_digest")
        first, second = ({k: item[k] for k in keys} for item in ours)
        assert first == second


def test_markdown_keeps_headings_lists_links_code_tables_and_emphasis() -> None:
    md = markdown_of(
        "<html><body><main><h1>Title</h1><h3>Small</h3>"
        "<p>A <a href='../c.html'>link</a>, <em>stress</em>, <b>bold</b>, <code>x = 1</code>"
        " and a star * and [brackets].</p>"
        "<ul><li>one</li><li>two<ol><li>nested</li></ol></li></ul>"
        "<pre>def f():\n    return 1\n</pre>"
        "<table><tr><th>k</th><th>v</th></tr><tr><td>a|b</td><td>2</td></tr></table>"
        "<blockquote><p>quoted</p></blockquote>"
        "<a href='#top'>top</a> <a href='javascript:void(0)'>js</a></main></body></html>"
    )
    assert md.split("\n\n") == [
        "# Title",
        "### Small",
        "A [link](https://site.example/c.html), *stress*, **bold**, `x = 1` and a star \\* and "
        "\\[brackets\\].",
        "- one\n- two\n  1. nested",
        "```\ndef f():\n    return 1\n```",
        "| k | v |\n| --- | --- |\n| a\\|b | 2 |",
        "> quoted",
        "top js",
    ]


def test_plain_text_is_a_line_a_block() -> None:
    found = extract(
        tree("<body><article><h2>Head</h2><p>One   two\nthree.</p><ul><li>item</li></ul>"
             "<table><tr><td>a</td><td>b</td></tr></table></article></body>"),
        "http://x/",
    )  # fmt: skip
    assert found.text == "Head\nOne two three.\n- item\na | b"


def test_boilerplate_is_cut_but_never_the_content() -> None:
    page = (
        "<body><form id='aspnetForm'><div class='cookie-banner'>We use cookies here.</div>"
        "<nav><a href='/'>Home</a></nav>"
        "<div class='sidebar'><p>Other posts you may like</p></div>"
        "<div id='content' class='has-sidebar'>"
        + "<p>The long story of the content, told in many words. </p>"
        * 20
        + "</div><div hidden>secret</div><p style='display: none'>gone</p>"
        "<footer>Copyright</footer></form></body>"
    )
    text = extract(tree(page), "http://x/").text
    assert text.count("The long story of the content") == 20
    for boilerplate in ("cookies", "Home", "Other posts", "secret", "gone", "Copyright"):
        assert boilerplate not in text


def test_a_page_of_links_keeps_its_links_and_a_page_of_text_drops_its_link_lists() -> None:
    index = "<body><div><h1>Index</h1><ul>" + "".join(
        f"<li><a href='/p{i}'>Chapter {i} of the manual</a></li>" for i in range(30)
    ) + "</ul></div></body>"  # fmt: skip
    assert extract(tree(index), "http://x/").text.count("Chapter") == 30
    article = (
        "<body><div><div>" + "<p>Plain words of the article, one after another. </p>" * 10
        + "</div><ul><li><a href='/a'>Related one</a></li><li><a href='/b'>Related two</a></li>"
        "</ul></div></body>"
    )  # fmt: skip
    assert "Related" not in extract(tree(article), "http://x/").text


READABILITY = Path(__file__).resolve().parent.parent / "data" / "metadata"  # their answers


@pytest.mark.parametrize("name", sorted(p.name for p in READABILITY.iterdir() if p.is_dir()))
def test_news_and_blog_articles_read_as_readability_reads_them(name: str) -> None:
    """Eleven of Readability's test pages (Apache-2.0): token F1 of the text
    against the text of its expected.html at least 0.9 each (the whole set
    of 130 is scored by benchmarks/bench_extract.py --readability)."""
    import gzip

    page = READABILITY / name
    root, _ = _lxml_tree(gzip.decompress((page / "source.html.gz").read_bytes()), "utf-8")
    found = tokens(extract(root, "http://fakehost/test/page.html").text)
    expected = gzip.decompress((page / "expected.html.gz").read_bytes()).decode("utf-8")
    assert f1(found, tokens(html_text(expected))) >= 0.9


ARTICLE = "<p>The words of the article itself, one sentence after another one. </p>" * 12


def test_a_list_of_other_pages_teasers_is_not_the_article() -> None:
    """Related stories, a stream: items headed by a link (or articles of
    their own) are dropped from a declared article; a page that is such a
    list (a section front) keeps it."""
    teasers = "<ul class='stream'>" + "".join(
        f"<li><h3><a href='/s{i}'>Another story number {i}</a></h3><p>Its teaser, short.</p></li>"
        for i in range(6)
    ) + "</ul>"  # fmt: skip
    text = extract(tree(f"<body><article>{ARTICLE}{teasers}</article></body>"), "http://x/").text
    assert text.count("The words of the article") == 12 and "Another story" not in text
    front = f"<body><main><h1>Front</h1>{teasers}</main></body>"
    assert extract(tree(front), "http://x/").text.count("Another story") == 6


@pytest.mark.parametrize(
    "heading", ["Related coverage", "More from Science", "Read next", "Most popular", "See also"]
)
def test_a_section_a_heading_names_as_other_pages_is_dropped(heading: str) -> None:
    page = (
        f"<body><article><h2>The story</h2>{ARTICLE}<h2>{heading}</h2>"
        "<p>A paragraph about something else entirely.</p><h2>Notes</h2><p>Kept note.</p>"
        "</article></body>"
    )
    text = extract(tree(page), "http://x/").text
    assert "something else" not in text and heading not in text
    assert "Kept note." in text and "The story" in text


def test_bylines_widget_words_and_chart_labels_are_no_writing() -> None:
    page = (
        "<body><article><div>By Ann Writer, Staff Reporter</div><div>Advertising</div>"
        f"{ARTICLE}<div>$915</div><p>By the end of the day, the writing went on here.</p>"
        "<table><tr><td>By Name Here</td><td>$915</td></tr></table></article></body>"
    )
    text = extract(tree(page), "http://x/").text
    assert "Ann Writer" not in text and "Advertising" not in text
    assert "By the end of the day" in text  # a sentence, not a byline
    assert "By Name Here | $915" in text  # a table's cells are its data
    assert text.count("$915") == 1


@pytest.mark.parametrize(
    "markup",
    [
        "",
        "just text, no tags",
        "<html><head><title>t</title></head></html>",
        "<frameset><frame src='a.html'></frameset>",
        "<div>" * 5000 + "deep" + "</div>" * 5000,
        "<body><table><tr><td><table><tr><td>cell</td></tr></table></td></tr></table></body>",
        "<body><a href='x'><div><p>a block in a link</p></div></a></body>",
        "<body><pre></pre><ul></ul><table></table><h1></h1></body>",
        "<body><a href='http://[::1'>bad link</a></body>",
    ],
)
def test_hostile_pages_extract_without_error(markup: str) -> None:
    root = tree(markup) if markup else etree.HTML("<p></p>")
    if root is None:
        return
    found = extract(root, "http://x/")
    assert isinstance(found.text, str) and isinstance(found.markdown, str)


def test_declared_languages() -> None:
    assert declared("en-GB") == "en" and declared("pt_BR") == "pt" and declared("DE") == "de"
    assert declared("de, en") == "de"
    assert declared("x-klingon") is None and declared("english") is None and declared("") is None
    assert page_language([None, "bogus", "fr-CA"], "whatever the text") == "fr"


def test_detected_languages() -> None:
    assert detect("short") is None
    assert detect("Численность нерпы оценивается примерно в сто тысяч особей.") == "ru"
    assert detect("Een ketting is het onderdeel van je fiets dat het snelst slijt.") == "nl"
    assert (
        page_language([None], "La pasta e ceci è un piatto povero della tradizione romana") == "it"
    )


def _pdf(password: str | None = None, pages: int = 2) -> bytes:
    document = FPDF()
    document.set_title("Report")
    document.set_font("helvetica", size=12)
    for number in range(pages):
        document.add_page()
        document.write(8, f"Words of page {number + 1}. ")
        document.write(8, "a link", link=f"https://site.example/{number}")
    if password is not None:
        document.set_encryption(owner_password="owner", user_password=password)
    return bytes(document.output())


def test_pdf_text_pages_title_and_links() -> None:
    content = read_pdf(_pdf())
    assert (content.pages, content.title) == (2, "Report")
    assert content.text == "Words of page 1. a link\n\nWords of page 2. a link"
    assert content.links == ["https://site.example/0", "https://site.example/1"]
    assert read_pdf(_pdf(password="")).pages == 2  # only its permissions are restricted


@pytest.mark.parametrize(
    "body, error",
    [
        (_pdf(password="secret"), "the PDF is encrypted with a password"),
        (_pdf()[:900], "damaged PDF"),
        (b"%PDF-1.7\n%%EOF", "damaged PDF"),
        (b"<html>not a pdf</html>", "damaged PDF"),
        (b"", "damaged PDF"),
    ],
)
def test_unreadable_pdfs_are_errors(body: bytes, error: str) -> None:
    with pytest.raises(PdfError, match=error) as raised:
        read_pdf(body)
    assert raised.value.error_kind == "pdf"


def _bomb() -> bytes:
    """A PDF of one page whose content stream is 80 MB of spaces, deflated
    (78 KB): past pypdf's 75 MB bound."""
    import zlib

    stream = zlib.compress(b" " * 80_000_000, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 "
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    return pdf_of(objects)


def test_a_pdf_bomb_is_a_limit_reached_not_a_damaged_file() -> None:
    with pytest.raises(PdfError, match=r"^PDF past a reading limit") as raised:
        read_pdf(_bomb())
    assert raised.value.error_kind == "pdf" and "damaged" not in str(raised.value)


def test_a_pdf_error_is_the_pages_error_in_the_analyzer() -> None:
    analyzer = LxmlAnalyzer(Settings(seeds=["http://x/"], extract=True))
    response = Response(
        url="http://x/a.pdf", status=200, content_type="application/pdf", body=b"%PDF-1.4 junk"
    )
    with pytest.raises(PdfError):
        analyzer.analyze(response)


def test_layout_tables_are_blocks_and_data_tables_are_tables() -> None:
    layout = markdown_of(
        "<body><main><table><tr><td><p>First paragraph of the page.</p><ul><li>a point</li>"
        "</ul><table><tr><th>n</th></tr><tr><td>1</td></tr></table></td></tr></table></main>"
        "</body>"
    )
    assert layout.split("\n\n") == [
        "First paragraph of the page.",
        "- a point",
        "| n |\n| --- |\n| 1 |",
    ]  # the inner table once, as a table; the outer one lays out blocks


def test_a_code_block_holding_a_fence_gets_a_longer_fence() -> None:
    md = markdown_of("<body><main><pre>text\n```\nmore</pre></main></body>")
    assert md == "````\ntext\n```\nmore\n````"


def test_a_document_without_body_gives_no_head_text() -> None:
    root = tree("<frameset><frame src='a.html'></frameset>")
    assert extract(root, "http://x/").text == ""
    assert "Title" not in extract(tree("<title>Title</title>plain words"), "http://x/").text


@pytest.mark.parametrize("analyzer", [HtmlAnalyzer, LxmlAnalyzer])
def test_a_records_text_and_markdown_are_cut_at_max_text(analyzer: type) -> None:
    """A big page's text is no record of twice its size: text and markdown
    cut at --max-text characters each, the record saying so, its digest the
    whole text's; a page under the cap is left whole and says nothing."""
    words = " ".join(f"word{i}" for i in range(2_000))
    body = f"<html><body><main><h1>Long</h1><p>{words}</p></main></body></html>".encode()
    response = Response(url="http://x/", status=200, content_type="text/html", body=body)
    whole = analyzer(Settings(seeds=["http://x/"], extract=True)).analyze(response).item
    cut = analyzer(Settings(seeds=["http://x/"], extract=True, max_text=1_000)).analyze(response)
    assert "text_truncated" not in whole and len(whole["text"]) > 1_000
    assert cut.item["text_truncated"] is True
    assert cut.item["text"] == whole["text"][:1_000]
    assert cut.item["markdown"] == whole["markdown"][:1_000]
    assert cut.item["text_digest"] == whole["text_digest"]
