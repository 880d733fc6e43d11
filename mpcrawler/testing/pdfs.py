"""PDFs for tests and benchmarks, written object by object (``pdf_of``),
and one that pypdf is slow to read (``long_pdf``): many pages
sharing one content stream of many text operations, so the file stays small
(a 500-page PDF of 2,000 lines a page is 60 KB) while reading its text takes
tens of seconds (about 85 ms a page of 2,000 lines, here)."""

from __future__ import annotations

__all__ = ["long_pdf", "pdf_of"]


def long_pdf(pages: int = 500, lines: int = 2000, title: str = "A long report") -> bytes:
    """A PDF of ``pages`` pages, each of the same ``lines`` lines of text."""
    line = b"(A line of a long report.) Tj 0 -14 Td "
    content = b"BT /F1 12 Tf 72 720 Td " + line * lines + b"ET"
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (6 + n) for n in range(pages))
        + b"] /Count %d >>" % pages,
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        4: b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        5: b"<< /Title (" + title.encode("latin-1") + b") >>",
    }
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    )
    for n in range(pages):
        objects[6 + n] = page
    return pdf_of([objects[n] for n in range(1, len(objects) + 1)], info=5)


def pdf_of(objects: list[bytes], info: int | None = None) -> bytes:
    """A PDF of ``objects`` (numbered from 1, the first its catalog; object
    ``info`` its document information), with its cross-reference table."""
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    extra = b" /Info %d 0 R" % info if info is not None else b""
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        extra,
        xref,
    )
    return bytes(out)
