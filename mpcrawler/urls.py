"""URL canonicalisation and crawl scope.

Owns the one canonical form of a URL that every other component compares:
the worker canonicalises the links it extracts, the master canonicalises
seeds and redirect targets, and the seen set stores a digest of the result.
Everything here is a pure function of its arguments, so it is safe in any
process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

__all__ = ["InvalidURL", "Scope", "canonicalize", "host_of", "is_subdomain"]

DEFAULT_PORTS = {"http": 80, "https": 443}
FETCHABLE_SCHEMES = frozenset(DEFAULT_PORTS)

# RFC 3986 unreserved characters never need escaping; any %XX that decodes to
# one of them is decoded.  Everything else that is not allowed literally in a
# component is escaped, so two spellings of one URL meet in one string.
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SUB_DELIMS = b"!$&'()*+,;="
_PATH_SAFE = frozenset(_UNRESERVED | frozenset(_SUB_DELIMS) | frozenset(b":@/"))
_QUERY_SAFE = frozenset(_PATH_SAFE | frozenset(b"?"))
_HEX = frozenset(b"0123456789abcdefABCDEF")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f]")


class InvalidURL(ValueError):
    """The text is not a URL that can be fetched (bad syntax, scheme or host)."""


def _normalize_component(text: str, safe: frozenset[int]) -> str:
    """Percent-encode ``text`` as UTF-8, keeping ``safe`` bytes literal.

    Existing escapes are kept (hex upper-cased) unless they decode to an
    unreserved character, which is written literally.  A ``%`` that does not
    start a valid escape is itself escaped.
    """
    data = text.encode("utf-8", "surrogatepass")
    out: list[str] = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if b == 0x25 and i + 2 < n and data[i + 1] in _HEX and data[i + 2] in _HEX:
            value = int(data[i + 1 : i + 3], 16)
            out.append(chr(value) if value in _UNRESERVED else f"%{value:02X}")
            i += 3
            continue
        out.append(chr(b) if b in safe else f"%{b:02X}")
        i += 1
    return "".join(out)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, on an absolute path."""
    if "." not in path:
        return path
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
            continue
        if segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
            continue
        output.append(segment)
    result = "/".join(output)
    return result if result.startswith("/") else "/" + result


def _normalize_host(host: str) -> str:
    host = host.strip().rstrip(".").lower()
    if not host:
        raise InvalidURL("URL has no host")
    if host.startswith("["):  # IPv6 literal
        return host
    try:
        host.encode("ascii")
    except UnicodeEncodeError:
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise InvalidURL(f"invalid international host name {host!r}") from exc
    if any(c in host for c in " %<>\\^`{|}\"'"):
        raise InvalidURL(f"invalid host {host!r}")
    return host


def canonicalize(url: str, base: str | None = None) -> str:
    """Return the canonical form of ``url`` (resolved against ``base`` first).

    Scheme and host are lower-cased, a default port and the fragment are
    dropped, the path's dot segments are removed, percent-encoding is
    normalised (non-ASCII as UTF-8, hex upper-case, unreserved decoded),
    and surrounding whitespace is stripped.  An empty path becomes ``/``.

    Raises :class:`InvalidURL` for anything that is not an absolute http or
    https URL with a host.
    """
    text = url.strip()
    # Browsers drop tabs and newlines inside URLs (WHATWG URL spec).
    text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    if base is not None:
        try:
            text = urljoin(base, text)
        except ValueError as exc:
            raise InvalidURL(f"cannot resolve {url!r}: {exc}") from exc
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"malformed URL {url!r}: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in FETCHABLE_SCHEMES:
        raise InvalidURL(f"not an http(s) URL: {url!r}")
    if parts.hostname is None:
        raise InvalidURL(f"URL has no host: {url!r}")
    host = _normalize_host(parts.hostname)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    netloc = host
    if port is not None and port != DEFAULT_PORTS[scheme]:
        netloc = f"{host}:{port}"
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if userinfo:
        netloc = f"{_normalize_component(userinfo, _PATH_SAFE - {ord('@'), ord('/')})}@{netloc}"
    path = _normalize_component(parts.path, _PATH_SAFE) or "/"
    if not path.startswith("/"):
        path = "/" + path
    path = _remove_dot_segments(path)
    query = _normalize_component(parts.query, _QUERY_SAFE)
    if _CONTROL_OR_SPACE.search(path + query):  # pragma: no cover - escaped above
        raise InvalidURL(f"control characters in URL {url!r}")
    return urlunsplit((scheme, netloc, path, query, ""))


def host_of(url: str) -> str:
    """The ``host[:port]`` part of a canonical URL: the unit of politeness."""
    return urlsplit(url).netloc.rpartition("@")[2]


def is_subdomain(host: str, domain: str) -> bool:
    """True if ``host`` (no port) is ``domain`` or one of its subdomains."""
    return host == domain or host.endswith("." + domain)


@dataclass(frozen=True)
class Scope:
    """Which canonical URLs a crawl may fetch.

    ``hosts`` are exact ``host[:port]`` values (the seeds' hosts);
    ``domains`` are host names whose subdomains are also allowed, on any port.
    """

    hosts: frozenset[str]
    domains: frozenset[str] = frozenset()

    @classmethod
    def from_seeds(cls, seeds: Iterable[str], domains: Iterable[str] = ()) -> Scope:
        return cls(
            hosts=frozenset(host_of(s) for s in seeds),
            domains=frozenset(d.strip().strip(".").lower() for d in domains if d.strip()),
        )

    def allows(self, url: str) -> bool:
        netloc = host_of(url)
        if netloc in self.hosts:
            return True
        if not self.domains:
            return False
        hostname = netloc.rsplit(":", 1)[0] if not netloc.endswith("]") else netloc
        return any(is_subdomain(hostname, d) for d in self.domains)

    def to_dict(self) -> dict[str, list[str]]:
        return {"hosts": sorted(self.hosts), "domains": sorted(self.domains)}

    @classmethod
    def from_dict(cls, data: dict[str, list[str]]) -> Scope:
        return cls(frozenset(data["hosts"]), frozenset(data.get("domains", ())))
