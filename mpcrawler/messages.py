"""What crosses a process boundary, and what analyzers hand back: small named
types of plain data (picklable by value, no behaviour beyond validation).

``Link`` is what an Analyzer may return in ``Analysis.links`` instead of a
plain ``href`` string, to give the URL a priority (higher is fetched first;
see :mod:`mpcrawler.frontier.base` for the order).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Link", "link_parts"]


class Link(NamedTuple):
    """A link as written in the page (resolved like any ``href``), with a priority."""

    url: str
    priority: int = 0


def link_parts(link: str | Link) -> tuple[str, int]:
    """(href, priority) of a plain string (priority 0) or a Link.  Raises
    TypeError for anything else, or a priority that is not an int."""
    if isinstance(link, str):
        return link, 0
    if isinstance(link, tuple) and len(link) == 2:
        href, priority = link
        if isinstance(href, str) and isinstance(priority, int) and not isinstance(priority, bool):
            return href, priority
    raise TypeError(f"a link is a str or a Link(url, priority: int), not {link!r}")
