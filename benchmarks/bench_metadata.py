"""How often is a page's metadata right?  ``web.metadata`` against the
answers of Mozilla Readability's test set, beside htmldate (the date) and
trafilatura's metadata, where installed.

    git clone https://github.com/mozilla/readability /tmp/readability   # Apache-2.0
    python benchmarks/bench_metadata.py --corpus /tmp/readability/test/test-pages

Each page's ``source.html`` is read as UTF-8 and its ``expected-metadata.json``
gives the answers: ``title`` (scored twice: the record's ``title``, the
page's ``<title>`` as it is, and ``--extract``'s ``headline``), ``byline``
(our ``author``), ``siteName`` (``site_name``),
``publishedTime`` (``published``) and ``excerpt`` (``description``).  A
field is scored on the pages whose answer is not empty:

* a title, a byline, a site name or an excerpt is right when it has the same words
  (case, punctuation and a leading "By" aside);
* a published time is right when it is the same instant (the same day when
  either side has no time).

Readability's excerpt falls back to the first paragraph when a page has no
description; ``excerpt (described)`` scores only the pages whose answer is
the content of one of their ``<meta>`` tags.  Prints a table: field, pages
scored, and the share right for each tool; and the CPU a page of each.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lxml.html

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mpcrawler.content.metadata import iso_date, page_metadata

BASE = "http://fakehost/test/page.html"
FIELDS = {
    "title": "title",
    "title (headline)": "headline",
    "byline": "author",
    "siteName": "site_name",
    "publishedTime": "published",
    "excerpt": "description",
    "excerpt (described)": "description",
}


def words(text: Any) -> str:
    text = re.sub(r"^\s*(by|par)\s+", "", str(text or "").strip(), flags=re.I)
    return re.sub(r"\W+", " ", text).strip().lower()


def same_time(got: Any, want: str) -> bool:
    wanted = iso_date(want)
    got = iso_date(got) if isinstance(got, str) else None
    if got is None or wanted is None:
        return False
    if len(got) > 10 and len(wanted) > 10:
        return dt.datetime.fromisoformat(got) == dt.datetime.fromisoformat(wanted)
    return got[:10] == wanted[:10]


def ours(html: str) -> dict[str, Any]:
    """The record's fields: its ``title`` (the page's ``<title>``, as every
    record has it) and the metadata ``--extract`` adds."""
    root = lxml.html.document_fromstring(html)
    title = next((" ".join(t.split()) for t in root.xpath("//title/text()")), None)
    found = page_metadata(root, BASE)
    return {"title": title, **found}


def htmldate_of() -> Callable[[str], dict[str, Any]] | None:
    try:
        from htmldate import find_date
    except ImportError:
        return None

    def run(html: str) -> dict[str, Any]:
        found = find_date(html, original_date=True, outputformat="%Y-%m-%d", url=BASE)
        return {"published": found} if found else {}

    return run


def trafilatura_of() -> Callable[[str], dict[str, Any]] | None:
    try:
        from trafilatura import extract_metadata
    except ImportError:
        return None

    def run(html: str) -> dict[str, Any]:
        found = extract_metadata(html, default_url=BASE)
        if found is None:
            return {}
        return {
            "title": found.title,
            "headline": found.title,
            "author": found.author,
            "site_name": found.sitename,
            "published": found.date,
            "description": found.description,
        }

    return run


def described(html: str, excerpt: str) -> bool:
    """The answer is a meta tag's content (a description the page says)."""
    root = lxml.html.document_fromstring(html)
    return any(words(m.get("content")) == words(excerpt) for m in root.iter("meta"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="Readability's test/test-pages")
    args = parser.parse_args()
    tools = {"mpcrawler": ours, "htmldate": htmldate_of(), "trafilatura": trafilatura_of()}
    tools = {name: run for name, run in tools.items() if run is not None}
    pages = sorted(p for p in args.corpus.iterdir() if (p / "expected-metadata.json").exists())
    right = {(t, f): 0 for t in tools for f in FIELDS}
    scored = dict.fromkeys(FIELDS, 0)
    cpu = dict.fromkeys(tools, 0.0)
    for path in pages:
        expected = json.loads((path / "expected-metadata.json").read_text())
        html = (path / "source.html").read_text(encoding="utf-8", errors="replace")
        found = {}
        for name, run in tools.items():
            started = time.process_time()
            found[name] = run(html)
            cpu[name] += time.process_time() - started
        for field, key in FIELDS.items():
            answer = expected.get(field.split(" ")[0])
            if not answer or (field.endswith("(described)") and not described(html, answer)):
                continue
            scored[field] += 1
            for name in tools:
                got = found[name].get(key)
                ok = same_time(got, answer) if key == "published" else words(got) == words(answer)
                right[(name, field)] += ok
    print(f"# {len(pages)} pages of {args.corpus}")
    print("| field | pages | " + " | ".join(tools) + " |")
    print("|---|---|" + "---|" * len(tools))
    for field in FIELDS:
        shares = []
        for name in tools:
            if name == "htmldate" and FIELDS[field] != "published":
                shares.append("-")
            else:
                n = right[(name, field)]
                shares.append(f"{n}/{scored[field]} = {n / max(scored[field], 1):.3f}")
        print(f"| {field} | {scored[field]} | " + " | ".join(shares) + " |")
    print("| CPU ms a page | | " + " | ".join(f"{1000 * cpu[t] / len(pages):.2f}" for t in tools))


if __name__ == "__main__":
    main()
