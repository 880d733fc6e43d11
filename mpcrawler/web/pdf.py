"""PDF documents: their text, page count, title and links (``--extract``).

A pure function over a PDF's bytes, with pypdf: the analyzer calls
``read_pdf`` for a response of type ``application/pdf`` (or an untyped one,
``application/octet-stream``, whose bytes begin as a PDF's: ``is_pdf``)
when the crawl extracts text, and turns what it returns into the page's
record fields and links.  A PDF that cannot be read (damaged, encrypted with a password, not
a PDF) raises ``PdfError``, which becomes that page's error: never the
worker's.

- Text: each page's text (pypdf's ``extract_text``), pages separated by a
  blank line, of the first ``MAX_PAGES`` pages (the count is of all).
- Title: the document information's ``/Title``, else none.
- Links: the ``/URI`` of each page's link annotations, in page order.
- Encryption: a PDF encrypted with an empty user password (only its
  permissions are restricted, as most are) is read; one that needs a
  password is an error.
- Limits: a stream that decompresses past pypdf's bounds (75 MB: a
  decompression bomb) is an error that says a limit was reached, not that
  the file is damaged.
"""

from __future__ import annotations

import io
import logging
from typing import NamedTuple

__all__ = ["MAX_PAGES", "PdfContent", "PdfError", "is_pdf", "read_pdf"]

MAX_PAGES = 500  # pages whose text and links are read
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
# Types a server gives a file it does not know: a body among them is a PDF by its bytes.
UNTYPED = frozenset(
    {
        "",
        "application/octet-stream",
        "binary/octet-stream",
        "application/unknown",
        "application/x-download",
        "application/force-download",
    }
)
logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings on damaged files are noise here


def is_pdf(content_type: str | None, body: bytes) -> bool:
    """A PDF: served as one, or served as an untyped file (octet-stream) and
    beginning, as every PDF does, with ``%PDF-`` in its first 1,024 bytes."""
    if not body:
        return False
    if content_type in PDF_TYPES:
        return True
    return (content_type or "") in UNTYPED and b"%PDF-" in body[:1024]


class PdfError(Exception):
    """A PDF that cannot be read: the page's error."""

    error_kind = "pdf"


class PdfContent(NamedTuple):
    """What a PDF holds for its record: text, page count, title and links."""

    text: str
    pages: int
    title: str | None
    links: list[str]


def read_pdf(body: bytes) -> PdfContent:
    """The text, page count, title and links of the PDF ``body``."""
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PdfError("the PDF is encrypted with a password")
        pages = len(reader.pages)
        texts: list[str] = []
        links: list[str] = []
        for page in reader.pages[:MAX_PAGES]:
            texts.append((page.extract_text() or "").strip())
            links += _page_links(page)
        info = reader.metadata
        title = str(info.title).strip() if info is not None and info.title else None
    except PdfError:
        raise
    except RecursionError as exc:
        raise PdfError("damaged PDF: its objects nest without end") from exc
    except LimitReachedError as exc:  # a decompression bomb, or a structure past pypdf's bounds
        raise PdfError(f"PDF past a reading limit (a decompression bomb?): {exc}") from exc
    except (PyPdfError, Exception) as exc:  # whatever the reader trips on is the file's fault
        raise PdfError(f"damaged PDF: {type(exc).__name__}: {exc}") from exc
    return PdfContent("\n\n".join(t for t in texts if t), pages, title or None, links)


def _page_links(page: object) -> list[str]:
    """The URIs of a page's link annotations."""
    found = []
    annotations = page.get("/Annots") or []  # type: ignore[attr-defined]
    for ref in annotations.get_object() if hasattr(annotations, "get_object") else annotations:
        annotation = ref.get_object()
        if annotation.get("/Subtype") != "/Link":
            continue
        action = annotation.get("/A")
        action = action.get_object() if action is not None else None
        uri = action.get("/URI") if action is not None else None
        if uri is not None:
            text = uri.get_object()
            found.append(text.decode("latin-1") if isinstance(text, bytes) else str(text))
    return found
