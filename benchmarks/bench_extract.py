"""Main-content extraction against trafilatura, on the same pages, in one run.

    python benchmarks/bench_extract.py [--pages 120] [--repeat 3] [--crawl] \\
        [--readability DIR]

Three sets of pages nobody tuned the extractor on page by page:

- Debian's ``python3.11-doc`` and ``postgresql-doc-15``, served by nginx
  (``common.nginx_dir``) and fetched over HTTP: ``--pages`` of each, every
  k-th page in name order.  Their gold is each page's own main content taken
  from its markup: the Python docs' ``div[role=main]``; the PostgreSQL
  docs' body without its ``navheader`` and ``navfooter``.
- The gold set shipped in ``tests/data/extract/`` (``gold.json``): pages in
  several templates and languages whose main text is known.

- With ``--readability DIR``: news and blog articles, Mozilla Readability's
  test set (``git clone https://github.com/mozilla/readability``, Apache-2.0;
  DIR is its ``test/test-pages``): each ``source.html`` (saved as UTF-8,
  whatever its own meta says: read with that charset, as an HTTP header
  would give it) against the text of its ``expected.html``.  The
  extractor's rules were tuned on this set: it is the development set, and
  the figures flatter mpcrawler there.

For each page and extractor: token F1, precision and recall of the
extracted text against the gold (bags of lower-case word tokens, a
character a token in scripts written without spaces), their means over the
pages, the share of the extracted tokens
that are the page's boilerplate (tokens of the page outside the gold), and
the CPU milliseconds (``time.process_time``, the median of ``--repeat``
runs).  mpcrawler's cost is given twice: the extraction alone, on the tree
its analyzer already parsed (what ``--extract`` adds to a crawl), and with
the parse.  trafilatura (``pip install trafilatura``; the anchor is 2.3)
runs with its defaults, given the page's bytes and URL; readability-lxml
(``Document(html).summary()``) and jusText (English stop words) where
installed.  With ``--crawl``,
also what ``--extract`` costs a whole crawl of each doc site (``crawl_cost``).
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lxml import etree

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import crawl_figures, machine, nginx_dir
from mpcrawler.content.extract import extract
from mpcrawler.testing.extraction import boilerplate_share, f1, gold_pages, html_text, tokens
from mpcrawler.worker.analyzer import _lxml_tree

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")  # apt-get install python3.11-doc
POSTGRES_DOCS = Path("/usr/share/doc/postgresql-doc-15/html")  # apt-get install postgresql-doc-15
GOLD = Path(__file__).resolve().parent.parent / "tests" / "data" / "extract"


def python_gold(body: bytes) -> str:
    root, _ = _lxml_tree(body, None)
    etree.strip_elements(root, "script", "style", with_tail=False)
    main = root.xpath("//*[@role='main']")
    return " ".join(main[0].itertext()) if main else ""


def postgres_gold(body: bytes) -> str:
    root, _ = _lxml_tree(body, None)
    etree.strip_elements(root, "script", "style", with_tail=False)
    for nav in root.xpath("//div[@class='navheader' or @class='navfooter']"):
        nav.getparent().remove(nav)
    body_element = root.find("body")
    return " ".join(body_element.itertext()) if body_element is not None else ""


def sample(docs: Path, pages: int) -> list[str]:
    names = sorted(str(p.relative_to(docs)) for p in docs.rglob("*.html") if "_" not in p.parts[-2])
    names = [n for n in names if not n.startswith(("_", "genindex"))]
    step = max(1, len(names) // pages)
    return names[::step][:pages]


def fetch_all(docs: Path, names: list[str]) -> list[tuple[str, bytes]]:
    with nginx_dir(docs) as url:
        out = []
        for name in names:
            with urllib.request.urlopen(f"{url}/{name}") as answer:
                out.append((f"{url}/{name}", answer.read()))
        return out


CHARSET: str | None = None  # the pages' charset, where a set gives one (Readability's: UTF-8)


def ours_alone(url: str, body: bytes) -> tuple[str, float]:
    root, _ = _lxml_tree(body, CHARSET)
    if root is None:
        return "", 0.0
    start = time.process_time()
    text = extract(root, url).text
    return text, time.process_time() - start


def ours_parsed(url: str, body: bytes) -> tuple[str, float]:
    start = time.process_time()
    root, _ = _lxml_tree(body, CHARSET)
    text = extract(root, url).text if root is not None else ""
    return text, time.process_time() - start


def theirs(url: str, body: bytes) -> tuple[str, float]:
    import trafilatura

    start = time.process_time()
    given: str | bytes = body.decode(CHARSET, "replace") if CHARSET else body
    text = trafilatura.extract(given, url=url) or ""
    return text, time.process_time() - start


def readability_lxml(url: str, body: bytes) -> tuple[str, float]:
    from readability import Document

    start = time.process_time()
    given: str | bytes = body.decode(CHARSET, "replace") if CHARSET else body
    text = html_text(Document(given, url=url).summary())
    return text, time.process_time() - start


def justext_of(url: str, body: bytes) -> tuple[str, float]:
    import justext

    start = time.process_time()
    paragraphs = justext.justext(body, justext.get_stoplist("English"), encoding=CHARSET)
    text = "\n".join(p.text for p in paragraphs if not p.is_boilerplate)
    return text, time.process_time() - start


def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


EXTRACTORS: dict[str, Callable[[str, bytes], tuple[str, float]]] = {
    "mpcrawler": ours_alone,
    "mpcrawler+parse": ours_parsed,
    **({"trafilatura": theirs} if _installed("trafilatura") else {}),
    **({"readability-lxml": readability_lxml} if _installed("readability") else {}),
    **({"jusText": justext_of} if _installed("justext") else {}),
}


def measure(pages: list[tuple[str, bytes, str]], repeat: int) -> dict[str, dict[str, float]]:
    """Per extractor: median F1, share of pages with F1 >= 0.8, mean
    boilerplate share, median CPU ms a page (of ``repeat`` alternated runs)."""
    scores: dict[str, list[tuple[float, float, float, float]]] = collections.defaultdict(list)
    cpu: dict[str, list[list[float]]] = collections.defaultdict(list)
    for url, body, gold_text in pages:
        gold, whole = tokens(gold_text), tokens(html_text(body))
        times: dict[str, list[float]] = collections.defaultdict(list)
        for _ in range(repeat):
            for name, run in EXTRACTORS.items():
                _, seconds = run(url, body)
                times[name].append(seconds)
        for name, run in EXTRACTORS.items():
            found = tokens(run(url, body)[0])
            common = sum((found & gold).values())
            precision = common / sum(found.values()) if found else float(not gold)
            recall = common / sum(gold.values()) if gold else 1.0
            share = boilerplate_share(found, gold, whole)
            scores[name].append((f1(found, gold), precision, recall, share))
            cpu[name].append(times[name])
    out = {}
    for name in EXTRACTORS:
        f1s = [s[0] for s in scores[name]]
        per_run = [sum(t[i] for t in cpu[name]) / len(pages) for i in range(repeat)]
        out[name] = {
            "f1": statistics.mean(f1s),
            "precision": statistics.mean(s[1] for s in scores[name]),
            "recall": statistics.mean(s[2] for s in scores[name]),
            "median_f1": statistics.median(f1s),
            "good": sum(s >= 0.8 for s in f1s) / len(f1s),
            "boilerplate": statistics.mean(s[3] for s in scores[name]),
            "ms": 1000 * statistics.median(per_run),
        }
    return out


def readability_set(directory: Path) -> list[tuple[str, bytes, str]]:
    """Readability's test pages: (URL, source bytes, the text of expected.html)."""
    pages = []
    for page in sorted(p for p in directory.iterdir() if (p / "expected.html").exists()):
        gold = html_text((page / "expected.html").read_text(encoding="utf-8"))
        pages.append(("http://fakehost/test/page.html", (page / "source.html").read_bytes(), gold))
    return pages


def gold_set() -> list[tuple[str, bytes, str]]:
    return [(page.url, page.body, page.gold) for page in gold_pages(GOLD)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=120, help="pages of each doc site")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each extractor a page")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--crawl", action="store_true", help="also crawl both doc sites with and without --extract"
    )
    parser.add_argument("--readability", type=Path, help="Readability's test/test-pages")
    parser.add_argument("--no-docs", action="store_true", help="skip the doc sites")
    args = parser.parse_args()
    sets: dict[str, list[tuple[str, bytes, str]]] = {}
    for name, docs, gold in (
        ()
        if args.no_docs
        else (
            ("Python 3.11 docs", PYTHON_DOCS, python_gold),
            ("PostgreSQL 15 docs", POSTGRES_DOCS, postgres_gold),
        )
    ):
        if not docs.is_dir():
            raise SystemExit(f"{docs} is missing (apt-get install {docs.parts[3]})")
        fetched = fetch_all(docs, sample(docs, args.pages))
        sets[name] = [(url, body, gold(body)) for url, body in fetched]
    sets["gold set (tests/data/extract)"] = gold_set()
    if args.readability:
        sets["news and blogs (Readability's set)"] = readability_set(args.readability)
    print(f"machine: {machine()}")
    figures: dict[str, Any] = {}
    print(
        "| pages | extractor | F1 | precision | recall | median F1 | F1>=0.8 | boilerplate "
        "| CPU ms a page |\n|---|---|---|---|---|---|---|---|---|"
    )
    for name, pages in sets.items():
        global CHARSET
        CHARSET = "utf-8" if name.startswith("news") else None
        figures[name] = measure(pages, args.repeat)
        for extractor, row in figures[name].items():
            print(
                f"| {name} ({len(pages)}) | {extractor} | {row['f1']:.3f} | "
                f"{row['precision']:.3f} | {row['recall']:.3f} | {row['median_f1']:.3f} | "
                f"{row['good']:.0%} | {row['boilerplate']:.1%} | {row['ms']:.2f} |"
            )
    if args.crawl:
        figures["crawl"] = crawl_cost(args.repeat)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


def crawl_cost(repeat: int) -> dict[str, dict[str, float]]:
    """What --extract costs a crawl: each doc site served by nginx, crawled
    whole with the lxml analyzer (2 workers x 4 slots) with and without
    --extract, alternated ``repeat`` times; medians of the workers' CPU ms a
    page and of pages/s."""
    out: dict[str, dict[str, float]] = {}
    print("\nwhat --extract costs a crawl (lxml analyzer, 2 x 4, nginx, medians)")
    print(f"{'site':<22}{'variant':<12}{'pages':>7}{'pages/s':>9}{'workers ms/p':>14}")
    for name, docs in (("Python 3.11 docs", PYTHON_DOCS), ("PostgreSQL 15 docs", POSTGRES_DOCS)):
        with nginx_dir(docs) as url:
            runs: dict[str, list[dict[str, float]]] = {"plain": [], "--extract": []}
            for _ in range(repeat):
                for variant, extra in (("plain", ()), ("--extract", ("--extract",))):
                    runs[variant].append(crawl_figures(url + "/", 2, 4, "lxml", extra))
        for variant, results in runs.items():
            med = {k: statistics.median(r[k] for r in results) for k in results[0]}
            out[f"{name} {variant}"] = med
            print(
                f"{name:<22}{variant:<12}{med['pages']:>7.0f}{med['pages_per_s']:>9.1f}"
                f"{med['workers_ms']:>14.3f}"
            )
    return out


if __name__ == "__main__":
    main()
