"""What a page asks of robots: ``<meta name="robots">``, ``X-Robots-Tag`` and ``rel`` links.

The analyzer collects a page's robots meta tags (``robots`` and our own
agent's name) and the ``rel`` tokens of its links; the worker joins them
with the response's ``X-Robots-Tag`` headers through
:func:`page_directives` and follows, records or drops accordingly
(``noindex``: the page's record keeps no analyzer fields; ``nofollow``:
none of its links are followed; ``rel=nofollow``: that link is not).
Pure functions of their arguments.
"""

from __future__ import annotations

import re

__all__ = [
    "agent_token",
    "apply_nofollow",
    "canonical_from_link_header",
    "page_directives",
    "rel_tokens",
]

# Directives that take a value after a colon: "max-snippet: 20" is not an agent.
_VALUED = frozenset({"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"})
_EXPANDS = {"none": ("noindex", "nofollow")}
_KNOWN = frozenset({"noindex", "nofollow", "noarchive", "nosnippet", "noimageindex", "none"})
_LINK = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]*)*)")


def agent_token(user_agent: str) -> str:
    """The product token of a User-Agent (``mpcrawler/1.0 (+...)`` ->
    ``mpcrawler``), lower-case: the name meta tags and X-Robots-Tag address."""
    return re.split(r"[/\s]", user_agent.strip(), maxsplit=1)[0].lower()


def _directives(content: str) -> list[str]:
    return [d.strip().lower() for d in content.split(",") if d.strip()]


def page_directives(
    metas: list[tuple[str, str]], headers: list[str], agent: str
) -> tuple[str, ...]:
    """The directives that apply to ``agent`` (a product token): from meta
    tags (name, content) named ``robots`` or ``agent``, and from
    ``X-Robots-Tag`` header values, whose ``agent: ...`` parts address one
    crawler.  ``none`` is ``noindex`` and ``nofollow``.  Sorted, each once;
    only the known ones (noindex, nofollow, noarchive, nosnippet, noimageindex)."""
    found: set[str] = set()
    for name, content in metas:
        if name.strip().lower() in ("robots", agent):
            found.update(_directives(content))
    for value in headers:
        target = None  # every crawler, until "name:" addresses one
        for part in value.split(","):
            head, colon, rest = part.partition(":")
            head = head.strip().lower()
            if colon and head not in _VALUED:
                target, part = head, rest
            if target is None or target == agent:
                found.update(_directives(part))
    for short, long in _EXPANDS.items():
        if short in found:
            found.discard(short)
            found.update(long)
    return tuple(sorted(found & _KNOWN))


def rel_tokens(value: str | list[str] | None) -> frozenset[str]:
    """A ``rel`` attribute's tokens, lower-case (BeautifulSoup gives a list)."""
    if value is None:
        return frozenset()
    text = value if isinstance(value, str) else " ".join(value)
    return frozenset(text.lower().split())


def canonical_from_link_header(value: str | None) -> str | None:
    """The target of a ``Link: <url>; rel="canonical"`` header, if any."""
    for match in _LINK.finditer(value or ""):
        params = match.group(2)
        for param in params.split(";"):
            name, _, rel = param.partition("=")
            if name.strip().lower() == "rel" and "canonical" in rel.strip("\"' ").lower().split():
                return match.group(1).strip()
    return None


def apply_nofollow(
    links: list[tuple[str, str | None, int]], directives: tuple[str, ...], marked: set[str | None]
) -> list[tuple[str, str | None, int]]:
    """A page's links (url, the rule refusing it or None, priority) with
    ``nofollow`` as the rule of those it asks robots not to follow: all of
    them under a ``nofollow`` directive, else those ``marked`` rel=nofollow.
    A link another rule refuses keeps that rule."""
    if "nofollow" in directives:
        return [(url, rule or "nofollow", p) for url, rule, p in links]
    if not marked:
        return links
    return [(url, rule or ("nofollow" if url in marked else None), p) for url, rule, p in links]
