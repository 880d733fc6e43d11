"""The worker's PDF reader (worker/documents.py): a child process that reads
one PDF at a time within a time limit, is killed past it, dies without
taking its worker along, retires when grown, and a thread that reads the
pages put to it in turn."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from fpdf import FPDF

from mpcrawler.messages import PageResult
from mpcrawler.testing.pdfs import long_pdf
from mpcrawler.web.pdf import PdfContent, PdfError
from mpcrawler.worker.documents import Documents, Page, Reader
from mpcrawler.worker.downloader import Response

SLOW = long_pdf()  # tens of seconds to read: always past the limits below


def _pdf(words: str) -> bytes:
    document = FPDF()
    document.set_title("Report")
    document.set_font("helvetica", size=12)
    document.add_page()
    document.write(8, words)
    document.write(8, " a link", link="https://site.example/next")
    return bytes(document.output())


def test_a_reader_reads_pdfs_in_one_child_and_a_damaged_one_is_an_error() -> None:
    reader = Reader(timeout=60)
    try:
        first = reader.read(_pdf("The first report."))
        assert (first.pages, first.title, first.links) == (
            1,
            "Report",
            ["https://site.example/next"],
        )
        assert "The first report." in first.text
        with pytest.raises(PdfError, match=r"^damaged PDF"):
            reader.read(b"%PDF-1.7 nothing more")
        assert "The second" in reader.read(_pdf("The second report.")).text
        assert (reader.starts, reader.read_count, reader.timeouts) == (1, 3, 0)
        assert reader.cpu > 0
    finally:
        reader.close()


def test_a_pdf_past_the_limit_is_an_error_and_the_next_gets_a_new_reader() -> None:
    reader = Reader(timeout=1)
    try:
        limit = r"^reading the PDF took longer than 1 s \(--pdf-timeout\)$"
        with pytest.raises(PdfError, match=limit):
            reader.read(SLOW)
        assert reader.timeouts == 1
        reader.timeout = 60  # (the next is quick; a loaded machine is slow)
        assert reader.read(_pdf("After the slow one.")).pages == 1
        assert reader.starts == 2
    finally:
        reader.close()


def test_a_reader_that_dies_reading_is_that_pdfs_error_only() -> None:
    reader = Reader(timeout=120)
    outcome: list[PdfContent | PdfError] = []

    def read() -> None:
        try:
            outcome.append(reader.read(SLOW))
        except PdfError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=read)
    thread.start()
    deadline = time.monotonic() + 30
    while not reader.read_count or (pid := reader.pid) is None:  # reading: kill it, as OOM would
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    thread.join(60)
    try:
        assert len(outcome) == 1 and isinstance(outcome[0], PdfError), outcome
        assert str(outcome[0]) == "the PDF reader died reading it (signal SIGKILL)"
        assert reader.deaths == 1
        assert reader.read(_pdf("Read by the next reader.")).pages == 1
        assert reader.starts == 2
    finally:
        reader.close()


def test_a_grown_reader_retires_after_its_answer() -> None:
    reader = Reader(timeout=60, retire_mb=1)  # every child is past 1 MB
    try:
        for n in range(3):
            assert reader.read(_pdf(f"Report {n}.")).pages == 1
        assert (reader.starts, reader.deaths) == (3, 0)
    finally:
        reader.close()


def test_the_documents_thread_finishes_each_page_in_turn() -> None:
    finished: list[tuple[str, str]] = []
    done = threading.Event()

    def finish(page: Page, content: PdfContent | PdfError) -> None:
        found = str(content) if isinstance(content, PdfError) else content.text.split()[0]
        finished.append((page.result.url, found))
        if len(finished) == 3:
            done.set()

    documents = Documents(60, 2, finish)
    for n, body in enumerate([_pdf("One."), b"%PDF-1.4 broken", _pdf("Three.")]):
        url = f"http://x/{n}.pdf"
        response = Response(url=url, status=200, content_type="application/pdf", body=body)
        documents.put(Page(PageResult(n, url), response, 1))
    assert done.wait(60)
    documents.end()
    documents.join()
    assert [url for url, _ in finished] == [f"http://x/{n}.pdf" for n in range(3)]
    assert finished[0][1] == "One." and finished[1][1].startswith("damaged PDF")
    assert documents.pending == 0
    assert documents.reader.pid is None  # closed with its thread


def test_a_reader_that_cannot_start_is_that_pdfs_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """No process to be had: the page's error, and the next PDF tries again."""
    import subprocess

    def no_process(*args: object, **kwargs: object) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    reader = Reader(timeout=60)
    monkeypatch.setattr(subprocess, "Popen", no_process)
    with pytest.raises(PdfError, match=r"^the PDF reader could not start: \[Errno 11\]"):
        reader.read(_pdf("Never read."))
    monkeypatch.undo()
    try:
        assert reader.read(_pdf("Read after all.")).pages == 1
    finally:
        reader.close()


def test_a_reader_that_ends_before_it_is_ready_is_that_pdfs_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A child that exits at once (a broken install): the page's error, said."""
    from mpcrawler.worker import documents

    monkeypatch.setattr(documents.sys, "executable", "/bin/false")
    reader = Reader(timeout=60)
    with pytest.raises(PdfError) as raised:
        reader.read(_pdf("Never read."))
    assert str(raised.value) == (
        "the PDF reader could not start: it ended before it was ready (exit status 1)"
    )
    assert reader.pid is None
