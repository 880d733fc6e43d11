"""Which URLs a crawl wants, and in which form: the URL rules.

``UrlRules`` is one value, built from the settings and the crawl's
:class:`~mpcrawler.web.urls.Scope`, that every component asks the same two
questions:

- ``canonical(href, base)``: the URL's identity, that is its canonical form
  (:func:`~mpcrawler.web.urls.canonicalize`) with the query cleaned up
  (``QueryRules``: session ids stripped, ``--strip-query`` parameters
  removed, ``--sort-query``);
- ``refusal(url)``: None if the crawl may fetch it, else the rule that
  refuses it (``RULES``, the names ``stats.json`` counts links under).

``exclude`` holds the patterns ``control exclude`` added to a running crawl
(kept in the job, not in its settings): they refuse as ``exclude``, and the
frontier drops the queued URLs they match (``excluded``).

The worker asks them of every link and sitemap entry, the master of every
seed and redirect target, and ``check-url`` of its argument: one rule
everywhere.  Pure functions of their arguments; no I/O.
"""

from __future__ import annotations

import fnmatch
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

from ..recent import Recent
from .patterns import PatternSet
from .urls import Scope, canonicalize, hostname_of, is_subdomain

if TYPE_CHECKING:
    from ..settings.worker import WorkerConfig

__all__ = [
    "DEFAULT_REJECT_EXT",
    "RULES",
    "SESSION_ID_NAMES",
    "FirstSeen",
    "QueryRules",
    "UrlRules",
    "extension_of",
    "path_trap",
    "rule_flag",
]

# Why a URL is not crawled, in the order they are checked.
RULES = (
    "deny_domain",
    "scope",
    "reject_regex",
    "exclude",
    "accept_regex",
    "reject_ext",
    "path_trap",
)

# A path that repeats itself or keeps growing is a crawler trap more often
# than a page (a relative link that resolves under itself, a calendar, a
# soft-404 part that answers any path): Heritrix's PathologicalPathDecideRule
# and TooManyPathSegmentsDecideRule, with their defaults.
MAX_PATH_REPEATS = 2  # a run of segments repeated more than this, one after another
MAX_PATH_SEGMENTS = 20

# Links skipped by their path's extension unless --reject-ext says otherwise
# (with --warc: none, an archive wants everything).  Scrapy's
# IGNORED_EXTENSIONS, less what a web crawl reads (nothing here is HTML):
# archives, images, audio, video, office documents and executables.
_REJECT_EXT_GROUPS = {
    "archives": "7z 7zip apk bz2 cab dmg gz jar rar tar tgz xz zip zst",
    "images": "ai avif bmp cdr drw dxf eps gif heic ico jpeg jpg mng pct png ps psp pst svg tif "
    "tiff webp",
    "audio": "aac aiff au flac m4a mid mp3 ogg opus ra wav wma",
    "video": "3gp asf asx avi flv m4v mkv mov mp4 mpg qt rm swf webm wmv",
    "documents": "doc docx epub odg odp ods odt pdf pps ppt pptx xls xlsx",
    "other": "bin css deb dll eot exe iso msi otf rpm rss ttf woff woff2",
}
DEFAULT_REJECT_EXT = frozenset(e for group in _REJECT_EXT_GROUPS.values() for e in group.split())

# Query parameters that carry a session, not a resource (Heritrix's
# StripSessionIDs): stripped unless --keep-session-ids.  ``sid`` is a common
# word, so it goes only when its value looks like a token (16+ letters or
# digits); the others whatever their value.  ``aspsessionid`` is a prefix
# (ASP appends 8 letters).
SESSION_ID_NAMES = ("jsessionid", "phpsessid", "aspsessionid*", "sid", "cfid", "cftoken")
_TOKEN = re.compile(r"[0-9A-Za-z]{16,}")
# The path-parameter form: /cart;jsessionid=0AB1...?x=1
_PATH_SESSION = re.compile(r";(?:jsessionid|phpsessid|sid)=[^/?;]*", re.IGNORECASE)


def _is_session_id(name: str, value: str) -> bool:
    name = name.lower()
    if name == "sid":
        return bool(_TOKEN.fullmatch(value))
    return name in ("jsessionid", "phpsessid", "cfid", "cftoken") or name.startswith("aspsessionid")


@dataclass(frozen=True)
class QueryRules:
    """How a canonical URL's query is cleaned: ``strip`` are glob patterns
    of parameter names (case-insensitive) to remove; ``sort`` sorts what
    remains; ``session_ids`` strips session ids (query and path forms)."""

    strip: tuple[str, ...] = ()
    sort: bool = False
    session_ids: bool = True

    def __bool__(self) -> bool:
        return bool(self.strip or self.sort or self.session_ids)

    def apply(self, url: str) -> str:
        """``url`` (canonical) with its query cleaned up."""
        if self.session_ids and ";" in url:
            query_at = url.find("?")
            path = url if query_at < 0 else url[:query_at]
            cleaned = _PATH_SESSION.sub("", path)
            if cleaned != path:
                url = cleaned + ("" if query_at < 0 else url[query_at:])
        query_at = url.find("?")
        if query_at < 0:
            return url
        params = url[query_at + 1 :].split("&")
        kept = [p for p in params if not (p and self._drops(p))]
        if self.sort:
            kept.sort()
        if len(kept) == len(params) and not self.sort:
            return url
        if len(kept) < len(params):  # something went: so do empty pieces
            kept = [p for p in kept if p]
        return url[:query_at] + ("?" + "&".join(kept) if kept else "")

    def _drops(self, param: str) -> bool:
        name, _, value = param.partition("=")
        name = unquote(name).lower()
        if self.session_ids and _is_session_id(name, value):
            return True
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.strip)


def extension_of(url: str) -> str:
    """The lower-case extension of a canonical URL's last path segment
    (``/a/b.PDF?x`` -> ``pdf``), or ''."""
    start = url.find("/", url.find("://") + 3)
    if start < 0:
        return ""
    end = len(url)
    for mark in "?;":
        at = url.find(mark, start)
        if at >= 0:
            end = min(end, at)
    segment = url[url.rfind("/", start, end) + 1 : end]
    dot = segment.rfind(".")
    return segment[dot + 1 :].lower() if dot > 0 else ""


def path_trap(url: str, max_repeats: int, max_segments: int) -> str | None:
    """Why the path of ``url`` (canonical) looks like a crawler trap, or
    None: more than ``max_segments`` segments, or a run of segments repeated
    more than ``max_repeats`` times one after another (``/a/b/a/b/a/b/``
    repeats ``a/b/`` 3 times)."""
    start = url.find("/", url.find("//") + 2)
    if start < 0:
        return None
    end = url.find("?", start)
    segments = url[start + 1 : end if end >= 0 else len(url)].split("/")
    if not segments[-1]:
        segments.pop()  # a trailing slash
    count = len(segments)
    if count > max_segments:
        return f"{count} path segments, more than {max_segments}"
    if count <= max_repeats or len(set(segments)) == count:
        return None  # nothing repeats
    copies = max_repeats + 1
    for size in range(1, count // copies + 1):
        for at in range(count - size * copies + 1):
            run = segments[at : at + size]
            if all(segments[at + n * size : at + (n + 1) * size] == run for n in range(1, copies)):
                return f"the path repeats {'/'.join(run)}/ more than {max_repeats} times"
    return None


@dataclass(frozen=True)
class UrlRules:
    """The crawl's URL rules: its scope, the regex and extension filters,
    and the query clean-up (see the module's docstring)."""

    scope: Scope
    accept: tuple[str, ...] = ()
    reject: tuple[str, ...] = ()
    reject_ext: frozenset[str] = frozenset()
    query: QueryRules = field(default_factory=QueryRules)
    exclude: tuple[str, ...] = ()  # `control exclude` patterns
    max_path_repeats: int = MAX_PATH_REPEATS
    max_path_segments: int = MAX_PATH_SEGMENTS
    filter_embeds: bool = False  # --accept-regex and --reject-ext refuse embeds too

    def __post_init__(self) -> None:
        # Matched in linear time (mpcrawler.web.patterns): a hostile URL
        # cannot make a pattern backtrack.  ValueError for one RE2 cannot take.
        accept = PatternSet(self.accept, "--accept-regex")
        reject = PatternSet(self.reject, "--reject-regex")
        # None where there are none: refusal() asks each link, so no call for them
        object.__setattr__(self, "_compiled", (accept or None, reject or None))
        object.__setattr__(self, "_exclude", PatternSet(self.exclude, "exclude"))

    @classmethod
    def from_settings(
        cls, settings: WorkerConfig, scope: Scope, exclude: Sequence[str] = ()
    ) -> UrlRules:
        """The rules of a crawl with these settings (a worker's, or the
        master's part that a worker is sent) and the patterns ``control
        exclude`` added."""
        return cls(
            scope=scope,
            exclude=tuple(exclude),
            accept=tuple(settings.accept_regex),
            reject=tuple(settings.reject_regex),
            reject_ext=frozenset(settings.effective_reject_ext()),
            max_path_repeats=settings.max_path_repeats,
            max_path_segments=settings.max_path_segments,
            filter_embeds=settings.filter_embeds,
            query=QueryRules(
                strip=tuple(settings.strip_patterns()),
                sort=settings.sort_query,
                session_ids=not settings.keep_session_ids,
            ),
        )

    def canonical(self, url: str, base: str | None = None) -> str:
        """The URL's identity: canonical, its query cleaned up.  Raises
        InvalidURL as :func:`~mpcrawler.web.urls.canonicalize` does."""
        return self.clean(canonicalize(url, base))

    def clean(self, url: str) -> str:
        """A canonical URL with its query cleaned up."""
        return self.query.apply(url) if self.query else url

    def refusal(self, url: str, sitemap: bool = False, embed: bool = False) -> str | None:
        """Why the crawl does not fetch ``url`` (canonical): one of RULES, or
        None.  The extensions do not apply to a ``sitemap`` (``.xml.gz``).
        An ``embed``, a page's requisite (``--page-requisites``), comes from
        any host whatever the scope, and --accept-regex and --reject-ext
        refuse it only with --filter-embeds; the other rules hold."""
        scope = self.scope
        if scope.deny and any(is_subdomain(hostname_of(url), d) for d in scope.deny):
            return "deny_domain"
        if not embed and not scope.allows(url):
            return "scope"
        accept, reject = self._compiled  # type: ignore[attr-defined]
        if reject is not None and reject.any(url):
            return "reject_regex"
        if self.exclude and self.excluded(url):
            return "exclude"
        filtered = not embed or self.filter_embeds
        if filtered and accept is not None and not accept.any(url):
            return "accept_regex"
        if filtered and self.reject_ext and not sitemap and extension_of(url) in self.reject_ext:
            return "reject_ext"
        if path_trap(url, self.max_path_repeats, self.max_path_segments):
            return "path_trap"
        return None

    def allows(self, url: str) -> bool:
        return self.refusal(url) is None

    def embed_refusal(self, url: str) -> str | None:
        """Why the crawl does not fetch ``url`` (canonical) as an embed."""
        return self.refusal(url, embed=True)

    def excluded(self, url: str) -> bool:
        """A ``control exclude`` pattern matches ``url``: not fetched, even if queued."""
        return bool(self._exclude.any(url))  # type: ignore[attr-defined]

    def rejecting(self, url: str) -> str | None:
        """The first --reject-regex pattern that matches ``url`` (check-url)."""
        reject = self._compiled[1]  # type: ignore[attr-defined]
        return None if reject is None else reject.first(url)  # type: ignore[no-any-return]


def rule_flag(rule: str) -> str:
    """The option behind a rule, as a user would look for it."""
    return {
        "scope": "--scope",
        "deny_domain": "--deny-domain",
        "accept_regex": "--accept-regex (it matches none)",
        "nofollow": "nofollow",
        "exclude": "control exclude",
        "path_trap": "--max-path-repeats or --max-path-segments",
    }.get(rule, "--" + rule.replace("_", "-"))


class FirstSeen:
    """A bounded memory of keys met: ``first(key)`` is True the first time
    (and again once ``size / 2`` to ``size`` newer keys have pushed it
    out: :class:`~mpcrawler.recent.Recent`).  It keeps each key's hash,
    not the key (64 bits of this process's ``hash``: a URL of 80
    characters is 129 bytes, its hash 32); two keys of one hash count as
    one, which costs a refusal counted once less.  Thread-safe."""

    def __init__(self, size: int = 100_000) -> None:
        self.size = size
        self._keys: Recent[int] = Recent(size)
        self._lock = threading.Lock()

    def first(self, key: str) -> bool:
        hashed = hash(key)
        with self._lock:
            if hashed in self._keys:
                return False
            self._keys.add(hashed)
            return True
