"""A short fuzzing pass over every parser of outside input, in CI.

The targets are fuzz/targets.py's, the same that ``fuzz/run.py`` runs under
atheris for millions of inputs; here hypothesis feeds each a few thousand,
derandomised so that CI is repeatable.  Inputs that once were findings are
replayed first.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import ROOT

sys.path.insert(0, str(ROOT / "fuzz"))
from targets import TARGETS

# Inputs that fuzzing found; each broke a target before its fix.
FINDINGS = {
    # "http:hs:..." on an http page: the memo took the relative path for a scheme.
    "url": ["AABodHRwOmhzOgAwAAAi"],
    # A well-framed journal record too short for its sequence number.
    # An emptied snapshot: the journal's acks of its URLs became tombstones.
    "frontier": ["DWBBDQ2qWw==", "BAA="],
    # <meta charset=NUL>: lxml refuses the encoding name BeautifulSoup found.
    "analyzer": ["ADxtZXRhAGNoYXJzZXQ9ACA="],
}

EXAMPLES = {
    "url": 3000,
    "analyzer": 2000,
    "robots": 3000,
    "sitemap": 2000,
    "frontier": 1000,
    "jsonl": 2000,
    "extract": 1000,
    "pdf": 1000,
}

_bytes = st.one_of(
    st.binary(max_size=512),
    # Text-like input reaches deeper into text parsers than uniform bytes.
    st.text(alphabet=st.characters(codec="utf-8"), max_size=300).map(
        lambda t: t.encode("utf-8", "surrogatepass")
    ),
    st.lists(
        st.sampled_from(
            [
                b"<a href='",
                b"'>",
                b"<base href=",
                b"<title>",
                b"</title>",
                b"<meta charset=",
                b"\xff",
                b"\\",
                b"http://",
                b"//",
                b"%",
                b"../",
                b"#",
                b"?",
                b"\n",
                b"{",
                b'"status": ',
                b"}",
                b"User-agent: *\n",
                b"Disallow: /",
                b"Allow: ",
                b"Crawl-delay: ",
                b"1e309",
                b"Sitemap: ",
                b"*",
                b"$",
                b"\x00",
                b"<main>",
                b"<nav class='menu'>",
                b"<p>",
                b"<ul><li>",
                b"<pre>",
                b"<table><tr><td>",
                b"obj <<",
                b"/Type /Page",
                b">> endobj",
                b"stream\n",
                b"endstream",
                b"xref",
                b"trailer",
                b"/Annots [",
            ]
        ),
        max_size=40,
    ).map(b"".join),
)


def test_findings_stay_fixed() -> None:
    for name, inputs in FINDINGS.items():
        for data in inputs:
            TARGETS[name](base64.b64decode(data))


# BeautifulSoup warns when a body looks like a file name or a URL: noise here.
@pytest.mark.filterwarnings("ignore::bs4.MarkupResemblesLocatorWarning")
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_target(name: str) -> None:
    target: Callable[[bytes], None] = TARGETS[name]

    @settings(
        max_examples=EXAMPLES[name],
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(_bytes)
    def run(data: bytes) -> None:
        target(data)

    run()
