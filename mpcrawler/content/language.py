"""A page's language, as an ISO 639-1 code (``--extract``).

Pure functions: the analyzer asks ``page_language`` with what the page
declares (``<html lang>``, ``<meta http-equiv=content-language>``, or the
Content-Language header) and its main text.  A declared language wins, as
it does for a browser's hyphenation and a search engine's index (and as
trafilatura reports it); a page that declares none, or one that is not a
language code, has its text identified by py3langid (langid.py's model, 97
languages, loaded once a process on first use).  A text of fewer than
``MIN_CHARS`` characters is too short to tell: no language.
"""

from __future__ import annotations

import re
import threading
from typing import Any

__all__ = ["MIN_CHARS", "declared", "detect", "page_language"]

MIN_CHARS = 40  # a text shorter than this has no detected language
_SAMPLE = 1000  # the characters of the text that are identified (its cost is linear)
_CODE = re.compile(r"^([a-zA-Z]{2})(?:[-_][a-zA-Z0-9]{1,8})*$")
_lock = threading.Lock()
_identifier: Any = None


def declared(value: str | None) -> str | None:
    """The ISO 639-1 code of a declared language (``en-GB`` -> ``en``); the
    first of a list (``de, en``); None if it is not one."""
    if not value:
        return None
    match = _CODE.match(value.split(",")[0].strip())
    return match.group(1).lower() if match else None


def detect(text: str) -> str | None:
    """The language of ``text`` by py3langid, None if too short."""
    global _identifier
    sample = text[:_SAMPLE]
    if len(sample.strip()) < MIN_CHARS:
        return None
    with _lock:  # the model loads once, and classifies one text at a time
        if _identifier is None:
            from py3langid import langid

            _identifier = langid
        code, _ = _identifier.classify(sample)
    return str(code)


def page_language(declarations: list[str | None], text: str) -> str | None:
    """The first valid declared language, else the text's."""
    for value in declarations:
        code = declared(value)
        if code is not None:
            return code
    return detect(text)
