"""URL patterns matched in linear time, whatever the pattern and the URL.

``--accept-regex``, ``--reject-regex``, ``control exclude`` and ``check-url``
match user patterns against URLs that a hostile site chooses.  Python's
``re`` backtracks: ``(a+)+$`` against ``/x/aaaa…a!`` takes time exponential
in the URL's length, and would hang the worker parsing the page (or the
master dropping queued URLs).  So every pattern is compiled by RE2
(``google-re2``), whose matching time is linear in the URL's length for any
pattern; several patterns of one kind are matched in one pass (an RE2 set).

RE2 takes Python's syntax with these exceptions, which are refused with one
line at the start (exit 2), never at the first URL: no backreferences
(``\\1``, ``(?P=name)``), no lookahead or lookbehind (``(?=``, ``(?!``,
``(?<=``, ``(?<!``), no ``\\Z`` (write ``\\z`` or ``$``), no atomic groups or
possessive quantifiers, and a counted repetition of at most 1,000
(``{1001}`` is refused).  ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII-only
(a canonical URL is ASCII: its other characters are percent-encoded).  No
pattern falls back to ``re``.

Pure values; the compiled forms are rebuilt from the pattern texts where
they are needed (a pattern crosses processes as its text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import re2

__all__ = ["Pattern", "PatternSet", "compile_pattern"]

try:  # the bindings' own matcher: about 5x faster a call than re2.compile's wrapper
    from re2 import _re2

    _UNANCHORED = _re2.RE2.Anchor.UNANCHORED
except (ImportError, AttributeError):  # pragma: no cover - another google-re2 layout
    _re2 = None


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # the refusal says why, in one line
    return options


_OPTIONS = _options()
_NOT_TAKEN = (
    "Python's re takes it, but patterns are matched in linear time (RE2): no "
    "backreferences, lookahead, lookbehind or \\Z, repetitions of at most 1000"
)


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _refusal(flag: str, text: str, reason: str) -> ValueError:
    """One line: why ``text`` is not taken, and whether it is RE2's syntax or
    no regular expression at all."""
    try:
        re.compile(text)
    except (re.error, RecursionError, OverflowError):
        return ValueError(f"{flag} {text[:200]!r}: not a regular expression ({reason})")
    return ValueError(f"{flag} {text[:200]!r}: {reason} ({_NOT_TAKEN})")


class Pattern:
    """One compiled pattern: ``search(url)`` says whether it matches anywhere in ``url``."""

    __slots__ = ("_compiled", "text")

    def __init__(self, text: str, flag: str = "pattern") -> None:
        self.text = text
        if _re2 is not None:
            compiled = _re2.RE2(_encoded(text), _OPTIONS)
            if not compiled.ok():
                raise _refusal(flag, text, compiled.error().decode("utf-8", "replace"))
            self._compiled = compiled
        else:  # pragma: no cover
            try:
                self._compiled = re2.compile(text, _OPTIONS)
            except re2.error as exc:
                raise _refusal(flag, text, str(exc)) from None

    def search(self, url: str) -> bool:
        if _re2 is None:  # pragma: no cover
            return self._compiled.search(url) is not None
        data = _encoded(url)
        return self._compiled.Match(_UNANCHORED, data, 0, len(data))[0][0] >= 0

    def __repr__(self) -> str:
        return f"Pattern({self.text!r})"


def compile_pattern(text: str, flag: str = "pattern") -> Pattern:
    """``text`` compiled; ValueError in one line (naming ``flag``, as
    ``--reject-regex``) if RE2 cannot take it."""
    return Pattern(text, flag)


class PatternSet:
    """Patterns of one kind: ``any(url)`` (one pass over ``url`` for all of
    them, an RE2 set: faster a call than one pattern's own match) and
    ``first(url)``, the first pattern that matches."""

    __slots__ = ("_match", "patterns")

    def __init__(self, texts: Sequence[str], flag: str = "pattern") -> None:
        self.patterns = tuple(Pattern(t, flag) for t in texts)  # each checked on its own
        self._match = None
        if self.patterns:
            matcher = re2.Set.SearchSet(_OPTIONS)
            try:
                for text in texts:
                    matcher.Add(_encoded(text))
                matcher.Compile()
            except re2.error as exc:  # past RE2's memory budget for one set
                raise ValueError(f"{flag}: {len(texts)} patterns together: {exc}") from None
            self._match = getattr(matcher, "_set", matcher).Match  # the bindings' own, if there

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def any(self, url: str) -> bool:
        return self._match is not None and bool(self._match(_encoded(url)))

    def first(self, url: str) -> str | None:
        """The text of the first pattern that matches ``url``, or None."""
        return next((p.text for p in self.patterns if p.search(url)), None)
