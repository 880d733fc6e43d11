"""robots.txt rules for one host and one user agent (RFC 9309, via protego).

The worker fetches a robots.txt and decodes it with :func:`decode_robots`;
the scheduler, in the master, turns the text into :class:`RobotsRules` and
asks them before each request to that host.  Pure functions of their
arguments: whatever the server sent, parsing yields rules (at worst none)
and never raises.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from protego import Protego

__all__ = ["RobotsRules", "decode_robots"]

log = logging.getLogger(__name__)


def decode_robots(body: bytes) -> str:
    """RFC 9309 says UTF-8: undecodable bytes become U+FFFD, a BOM is dropped."""
    return body.decode("utf-8", "replace").removeprefix("\ufeff")


def _untie(parsed: Protego) -> None:
    """Break the reference cycle between a parsed robots.txt and its rule
    sets (each keeps its parser, which it uses only while parsing).  Left
    in place, the rules of every host the crawl let go of waited for the
    cycle collector's oldest generation, which runs seldom in a big heap:
    a broad crawl held thousands of dead rule sets."""
    for rule_set in getattr(parsed, "_user_agents", {}).values():
        if hasattr(rule_set, "_parser_instance"):
            rule_set._parser_instance = None


@dataclass(frozen=True)
class RobotsRules:
    """What one host's robots.txt says to ``user_agent``.

    ``crawl_delay`` is the group's Crawl-delay in seconds (None if it gives
    none, or one that is not a finite number of seconds); ``sitemaps`` lists
    its ``Sitemap:`` lines; ``text`` is what was parsed (a host parked out
    of memory keeps it, and is parsed again when it comes back).
    """

    user_agent: str
    parsed: Protego | None = field(default=None, repr=False)
    crawl_delay: float | None = None
    sitemaps: tuple[str, ...] = ()
    text: str = field(default="", repr=False)

    @classmethod
    def parse(cls, text: str | bytes, user_agent: str) -> RobotsRules:
        if isinstance(text, bytes):
            text = decode_robots(text)
        try:
            parsed = Protego.parse(text)
            delay = parsed.crawl_delay(user_agent)
            sitemaps = tuple(str(s) for s in parsed.sitemaps)
        except Exception as exc:  # protego's bug must not stop a crawl: no rules
            log.warning(
                "robots.txt could not be parsed (%s: %s); no rules", type(exc).__name__, exc
            )
            return cls(user_agent, text=text)
        _untie(parsed)
        seconds = float(delay) if delay is not None else None
        if seconds is not None and not (math.isfinite(seconds) and seconds >= 0):
            seconds = None
        return cls(user_agent, parsed, seconds, sitemaps, text)

    def allows(self, url: str) -> bool:
        """May ``url`` (canonical, of this host) be fetched?"""
        if self.parsed is None:
            return True
        try:
            return bool(self.parsed.can_fetch(url, self.user_agent))
        except Exception as exc:  # as in parse(): a matcher bug allows, and says so
            log.warning("robots.txt rule check failed for %s (%s); allowed", url, exc)
            return True
