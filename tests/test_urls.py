"""Canonical URLs and scope."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpcrawler.urls import InvalidURL, Scope, canonicalize


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
        ("http://example.com/%zz", "http://example.com/%25zz"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/?q=a b&r=%7e", "http://example.com/?q=a%20b&r=~"),
        ("http://B\u00fccher.example/", "http://xn--bcher-kva.example/"),
        ("http://example.com./", "http://example.com/"),
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
            "http://h.test/x",
            "HTTPS://H.test:443/y",
            "mailto:x@y",
            "a b",
            " c ",
        ]
    ),
    st.text(alphabet="ab/.?#%:", max_size=8),
)
_bases = st.sampled_from(
    [
        "http://h.test/",
        "http://h.test/dir/page",
        "http://h.test/dir/sub/",
        "http://h.test/d/p?x=1",
        "https://h.test:8443/a/b/c",
        "http://other.test/dir/page#frag",
    ]
)


@given(st.lists(st.tuples(_hrefs, _bases), max_size=30))
def test_link_resolver_memo_never_changes_answers(pairs: list[tuple[str, str]]) -> None:
    from mpcrawler.worker import LinkResolver

    resolver = LinkResolver(Scope.from_seeds(["http://h.test/"]), 2048)
    for href, base in pairs * 2:  # the second pass is served from the memo
        try:
            expected: str | None = canonicalize(href, base)
        except InvalidURL:
            expected = None
        assert resolver._canonical(href, base) == expected, (href, base)
