"""URL patterns matched in linear time (mpcrawler.web.patterns)."""

from __future__ import annotations

import pytest

from mpcrawler.web.patterns import PatternSet, compile_pattern


def test_a_backtracking_pattern_is_matched_in_linear_time() -> None:
    """Python's re takes 2**100000 steps on this URL: it would never end."""
    pattern = compile_pattern("(a+)+$")
    assert not pattern.search("/x/" + "a" * 100_000 + "!")
    assert pattern.search("/x/aaaa")


@pytest.mark.parametrize(
    "text, why",
    [
        (r"(\w+)/\1", "Python's re takes it, but patterns are matched in linear time"),
        ("(?=x)", "invalid perl operator"),
        ("(?<!a)b", "invalid perl operator"),
        ("a{1001}", "invalid repetition size"),
        (r"x\Z", "invalid escape sequence"),
        ("(x", "not a regular expression (missing )"),
    ],
)
def test_what_the_matcher_cannot_take_is_refused_in_one_line(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=r"^--reject-regex ") as refused:
        compile_pattern(text, "--reject-regex")
    assert why in str(refused.value) and "\n" not in str(refused.value)


def test_a_set_matches_as_its_patterns_do() -> None:
    urls = ["http://h.test/search.html?q=1", "http://h.test/a/archives/2", "http://h.test/ok"]
    texts = [r"/search\.html", "/archives/", r"(?i)/OK$"]
    for n in range(len(texts) + 1):
        chosen = PatternSet(texts[:n])
        for url in urls:
            assert chosen.any(url) == any(compile_pattern(t).search(url) for t in texts[:n])
    both = PatternSet(texts)
    assert both.first(urls[1]) == "/archives/" and both.first("http://x.test/") is None
    assert not PatternSet([]) and not PatternSet([]).any("http://h.test/")
    assert PatternSet(["é"]).any("http://h.test/é") and PatternSet(["x"]).any("x\udc80")
