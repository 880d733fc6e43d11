"""Canonical URLs and scope, against the WHATWG URL conformance data."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import TESTS

from mpcrawler.web.filters import QueryRules, UrlRules
from mpcrawler.web.urls import InvalidURL, Scope, canonicalize, split_credentials

# web-platform-tests' url/resources/urltestdata.json (source and licence: data/README.md).
WPT = TESTS / "data" / "urltestdata.json"
WPT_CASES: list[dict[str, Any]] = [
    case for case in json.loads(WPT.read_text(encoding="utf-8")) if isinstance(case, dict)
]
UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def with_listed_exceptions(href: str) -> str:
    """A browser's href with canonicalize's documented differences applied:
    no fragment; no credentials; escapes of unreserved characters decoded,
    others upper-case."""

    def escape(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in UNRESERVED else match.group().upper()

    href = re.sub(r"^(https?://)[^/]*@", r"\1", href.partition("#")[0])
    return re.sub(r"%([0-9A-Fa-f]{2})", escape, href)


def wpt_id(case: dict[str, Any]) -> str:
    kind = "refused" if case.get("failure") else case["protocol"].rstrip(":")
    return f"{kind}:{case['input']!r}"


def test_the_wpt_data_is_all_there() -> None:
    # 891 cases in the copy in shared/testdata: a truncated file must not pass.
    assert len(WPT_CASES) >= 891
    assert sum(1 for c in WPT_CASES if c.get("protocol") in ("http:", "https:")) >= 247


@pytest.mark.parametrize("case", WPT_CASES, ids=wpt_id)
def test_agrees_with_the_whatwg_url_standard(case: dict[str, Any]) -> None:
    url, base = case["input"], case.get("base")
    if case.get("failure"):  # a browser refuses it
        with pytest.raises(InvalidURL) as refused:
            canonicalize(url, base)
        assert refused.value.reason == "malformed URL"
    elif case["protocol"] not in ("http:", "https:"):  # valid, but not fetchable
        with pytest.raises(InvalidURL) as refused:
            canonicalize(url, base)
        assert refused.value.reason == "not an http(s) URL"
    else:
        got = canonicalize(url, base)
        assert got == with_listed_exceptions(case["href"])
        if got != case["href"]:  # only by the listed exceptions
            assert "#" in case["href"] or "%" in case["href"] or "@" in case["href"]
        assert canonicalize(got) == got  # a fixed point


@pytest.mark.parametrize(
    "raw, canonical",
    [
        ("HTTP://Example.COM/", "http://example.com/"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("http://example.com/a#frag", "http://example.com/a"),
        ("  http://example.com/a \n", "http://example.com/a"),
        ("http://example.com/%7euser/%41", "http://example.com/~user/A"),
        ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ("http://example.com/caf\u00e9", "http://example.com/caf%C3%A9"),
        ("http://example.com/%zz", "http://example.com/%zz"),  # as a browser sends it
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/a/%2e%2E/c", "http://example.com/c"),
        ("http://example.com/?q=a b&r=%7e", "http://example.com/?q=a%20b&r=~"),
        ("http://B\u00fccher.example/", "http://xn--bcher-kva.example/"),
        ("http://example.com./", "http://example.com./"),  # another origin to a browser
        ("http://0x7f.1/", "http://127.0.0.1/"),
        ("http://[0:0::1]:8080/", "http://[::1]:8080/"),
        ("http:\\\\example.com\\a\\b", "http://example.com/a/b"),
    ],
)
def test_canonical_forms(raw: str, canonical: str) -> None:
    assert canonicalize(raw) == canonical


@pytest.mark.parametrize(
    "href, expected",
    [
        ("b", "http://h.test/dir/b"),
        ("../b", "http://h.test/b"),
        ("/x?y=1#z", "http://h.test/x?y=1"),
        ("//other.test/p", "http://other.test/p"),
        ("?q", "http://h.test/dir/page?q"),
        ("  /spaced  ", "http://h.test/spaced"),
        ("/a\n/b", "http://h.test/a/b"),
        ("\\x", "http://h.test/x"),  # a backslash is a slash in http(s) URLs
        ("..\\y", "http://h.test/y"),
        ("http:rel", "http://h.test/dir/rel"),  # same scheme, no slashes: relative
        ("https:other.test", "https://other.test/"),
    ],
)
def test_resolves_against_base(href: str, expected: str) -> None:
    assert canonicalize(href, "http://h.test/dir/page") == expected


@pytest.mark.parametrize(
    "bad",
    [
        "mailto:someone@example.com",
        "javascript:void(0)",
        "tel:+123",
        "data:text/html,hi",
        "ftp://example.com/f",
        "file:///etc/passwd",
        "http://",
        "http://example.com:99999/",
        "not a url",
        "",
        "http://a\x00b/",
        "http://192.168.0.257/",
        "http://exa mple.com/",
        "http://[::1/",
        "http://example.com/\ud800",
    ],
)
def test_rejects_what_cannot_be_fetched(bad: str) -> None:
    with pytest.raises(InvalidURL):
        canonicalize(bad)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_canonical_form_is_a_fixed_point(path: str) -> None:
    try:
        once = canonicalize("http://example.com/" + path)
    except InvalidURL:
        return
    assert canonicalize(once) == once


def test_scope_modes() -> None:
    seeds = ["http://www.example.co.uk/", "http://127.0.0.1:8000/"]
    hosts = Scope.from_seeds(seeds)
    assert hosts.allows("http://www.example.co.uk/x") and not hosts.allows("http://example.co.uk/")
    domains = Scope.from_seeds(seeds, mode="domains", deny=["bad.example.co.uk"])
    assert domains.domains == {"example.co.uk", "127.0.0.1"}  # by the Public Suffix List
    assert domains.allows("https://a.b.example.co.uk:8443/") and domains.allows(
        "http://example.co.uk/"
    )
    assert not domains.allows("http://other.co.uk/")  # co.uk is a public suffix
    assert not domains.allows("http://x.bad.example.co.uk/") and not domains.allows(
        "http://bad.example.co.uk/"
    )
    assert domains.allows("http://127.0.0.1:9000/")  # an address is its own domain, any port
    anywhere = Scope.from_seeds(seeds, mode="any", deny=["tracker.test"])
    assert anywhere.allows("http://anything.test/") and not anywhere.allows(
        "http://a.tracker.test/"
    )
    assert Scope.from_dict(anywhere.to_dict()) == anywhere


def test_scope() -> None:
    scope = Scope.from_seeds(["http://a.test:8000/", "https://b.test/"], ["c.test"])
    assert scope.allows("http://a.test:8000/x")
    assert not scope.allows("http://a.test:8001/x")
    assert scope.allows("https://b.test/y")
    assert scope.allows("http://c.test/") and scope.allows("https://deep.sub.c.test:81/")
    assert not scope.allows("http://notc.test/")
    assert Scope.from_dict(scope.to_dict()) == scope


_hrefs = st.one_of(
    st.sampled_from(
        [
            "",
            "#x",
            "?q=1",
            "a",
            "./a",
            "../a",
            "../../a/b",
            "/abs",
            "//other.test/p",
            "\\\\other.test\\p",
            "/\\other.test",
            "\\abs",
            "http://h.test/x",
            "HTTPS://H.test:443/y",
            "http:rel",
            "HTTP:/abs",
            "https:rel",
            "ftp:x",
            "mailto:x@y",
            "a b",
            " c ",
            "\t/\n/other.test/",
            "\x00\x01 a",
        ]
    ),
    st.text(alphabet="ab/\\.?#%:\t ", max_size=8),
)
_bases = st.sampled_from(
    [
        "http://h.test/",
        "http://h.test/dir/page",
        "http://h.test/dir/sub/",
        "http://h.test/d/p?x=1",
        "http://h.test/d/p?x=/y/z",
        "https://h.test:8443/a/b/c",
        "http://other.test/dir/page",
        "ftp://h.test/dir/page",  # a <base href> may be any scheme
        "mailto:x@h.test",
    ]
)


@given(st.lists(st.tuples(_hrefs, _bases), max_size=30))
def test_link_resolver_memo_never_changes_answers(pairs: list[tuple[str, str]]) -> None:
    from mpcrawler.worker.links import LinkResolver

    rules = UrlRules(Scope.from_seeds(["http://h.test/"]), query=QueryRules(session_ids=False))
    resolver = LinkResolver(rules, 2048)
    for href, base in pairs * 2:  # the second pass is served from the memo
        try:
            expected: str | None = canonicalize(href, base)
        except InvalidURL:
            expected = None
        assert resolver.canonical(href, base) == expected, (href, base)


@pytest.mark.parametrize(
    "raw, canonical, creds",
    [
        ("http://alice:PASSWORD@h.test/a", "http://h.test/a", ("alice", "PASSWORD")),
        ("http://alice@h.test:8080/", "http://h.test:8080/", ("alice", "")),
        ("https://a%40b:p%3Aw@h.test", "https://h.test/", ("a@b", "p:w")),
        ("http://h.test/a@b", "http://h.test/a@b", None),
        ("http://h.test/", "http://h.test/", None),
    ],
)
def test_credentials_are_taken_at_the_door(
    raw: str, canonical: str, creds: tuple[str, str] | None
) -> None:
    assert split_credentials(raw) == (canonical, creds)
    assert canonicalize(raw) == canonical
