"""URL canonicalisation and crawl scope.

Owns the one canonical form of a URL that every other component compares:
the worker canonicalises the links it extracts, the master canonicalises
seeds and redirect targets, and the seen set stores a digest of the result.
Everything here is a pure function of its arguments, so it is safe in any
process.
"""

from __future__ import annotations

import functools
import ipaddress
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from ada_url import join_url, normalize_url

from ..errors import InvalidURL

__all__ = [
    "C0_AND_SPACE",
    "InvalidURL",
    "Scope",
    "canonicalize",
    "host_key",
    "host_of",
    "hostname_of",
    "is_subdomain",
    "registered_domain",
    "resolve",
    "split_credentials",
]

_FETCHABLE_PREFIXES = ("http://", "https://")  # the parser lower-cases the scheme

# What the WHATWG parser strips from both ends of its input.
C0_AND_SPACE = "".join(chr(c) for c in range(0x21))

# RFC 3986 unreserved characters: an escape of one of them is decoded, every
# other escape has its hex upper-cased (RFC 3986 section 6.2.2.1 and 6.2.2.2).
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
_ESCAPES: dict[str, str] = {}
for _hi, _lo in itertools.product("0123456789ABCDEFabcdef", repeat=2):
    _char = chr(int(_hi + _lo, 16))
    _ESCAPES[f"%{_hi}{_lo}"] = _char if _char in _UNRESERVED else f"%{_hi}{_lo}".upper()
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def _escape(match: re.Match[str]) -> str:
    return _ESCAPES[match.group()]


def resolve(url: str, base: str | None = None) -> str:
    """``url`` resolved against ``base`` and serialised by the WHATWG URL
    Standard, any scheme, nothing else changed.  Raises :class:`InvalidURL`
    ("malformed URL") for what a browser refuses."""
    try:
        return normalize_url(url) if base is None else join_url(base, url)
    except ValueError:  # refused by the parser, or not encodable (lone surrogates)
        raise InvalidURL("malformed URL", url) from None


def canonicalize(url: str, base: str | None = None) -> str:
    """The canonical form of ``url``, resolved against ``base`` if given.

    Parsing and resolution are the WHATWG URL Standard's, as browsers do them
    (by ada, the parser inside Node.js): tabs and newlines are removed, C0
    controls and spaces stripped from the ends, backslashes read as slashes,
    dot segments removed, the scheme and host lower-cased, the host parsed
    (IDNA, IPv4 numeric forms, IPv6 compression), a default port dropped, and
    each component percent-encoded with its own set.  ``tests/unit/test_urls.py``
    runs every case of the web-platform-tests ``urltestdata.json``.

    The deliberate differences from the standard's serialisation:

    - The fragment is dropped: it is never sent to the server, so URLs that
      differ only there are one resource.
    - Escapes are normalised: an escape of an RFC 3986 unreserved character
      (``A-Z a-z 0-9 - . _ ~``) is decoded, and every other escape's hex is
      upper-cased, so ``/%7euser/%2f`` and ``/~user/%2F`` are one URL.  RFC
      3986 (section 6.2.2) makes these equivalent; the standard keeps the
      spelling of the page.
    - Only http and https are accepted: any other scheme, valid or not, is
      :class:`InvalidURL` ("not an http(s) URL"), since nothing else can be
      fetched.
    - Credentials (``user:password@``) are dropped: they are not part of a
      resource's identity, and must never be written anywhere.  A seed's
      are taken at the door by :func:`split_credentials` and sent as its
      host's ``Authorization`` header.

    Raises :class:`InvalidURL` for anything a browser refuses (including an
    invalid ``base``) and for other schemes.
    """
    href = resolve(url, base)
    if not href.startswith(_FETCHABLE_PREFIXES):
        raise InvalidURL("not an http(s) URL", url)
    hash_at = href.find("#")  # every other "#" is escaped by the parser
    if hash_at >= 0:
        href = href[:hash_at]
    start, at = _userinfo_span(href)
    if start:
        href = href[:start] + href[at + 1 :]
    return _ESCAPE.sub(_escape, href) if "%" in href else href


def _userinfo_span(href: str) -> tuple[int, int]:
    """(start, index of "@") of the credentials in a serialised http(s) URL,
    or (0, 0).  In the serialisation "@" stands only there: one in a name or
    password is escaped, and a special URL's path always starts with "/"."""
    start = href.find("://") + 3
    end = href.find("/", start)
    at = href.rfind("@", start, end if end >= 0 else len(href))
    return (start, at) if at >= 0 else (0, 0)


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """(the canonical URL, its (user, password) decoded, or None).  Raises
    InvalidURL as canonicalize does."""
    href = resolve(url)
    start, at = _userinfo_span(href)
    creds = None
    if start:
        user, _, password = href[start:at].partition(":")
        creds = (unquote(user), unquote(password))
    return canonicalize(href), creds


def host_key(url: str) -> str:
    """A canonical URL's host, as ``scheme://host[:port]``: the one definition
    of "a URL's host".  It is the unit of politeness (and of robots.txt), the
    key of the per-host page budget and the frontier's per-host queues, and
    the partition key across nodes.  Pure string slicing: canonical URLs
    carry no user info and no default port."""
    end = url.find("/", url.find("://") + 3)
    return url if end < 0 else url[:end]


def host_of(url: str) -> str:
    """The ``host[:port]`` part of a canonical URL, as scope rules match it."""
    return urlsplit(url).netloc.rpartition("@")[2]


def is_subdomain(host: str, domain: str) -> bool:
    """True if ``host`` (no port) is ``domain`` or one of its subdomains."""
    return host == domain or host.endswith("." + domain)


def hostname_of(url: str) -> str:
    """The host name of a canonical URL, without port or IPv6 brackets."""
    netloc = host_of(url)
    if netloc.startswith("["):
        return netloc[1 : netloc.index("]")]
    return netloc.rsplit(":", 1)[0]


def registered_domain(hostname: str) -> str:
    """The domain a host name was registered under, by the Public Suffix List
    (``www.example.co.uk`` -> ``example.co.uk``); an IP address, a single
    label or a public suffix is its own."""
    try:
        ipaddress.ip_address(hostname)
        return hostname
    except ValueError:
        pass
    return str(_public_suffix_list().privatesuffix(hostname) or hostname)


@functools.cache
def _public_suffix_list() -> Any:
    from publicsuffixlist import PublicSuffixList  # the list ships with it: no fetch

    return PublicSuffixList()


@dataclass(frozen=True)
class Scope:
    """Which canonical URLs a crawl may fetch.

    ``mode`` is ``hosts`` (the seeds' exact ``host[:port]`` values),
    ``domains`` (also every host under the seeds' registered domains) or
    ``any``.  ``domains`` are more host names whose subdomains are allowed, on
    any port (``--allow-domain``); ``deny`` host names are refused with their
    subdomains whatever the mode (``--deny-domain``).
    """

    hosts: frozenset[str]
    domains: frozenset[str] = frozenset()
    mode: str = "hosts"
    deny: frozenset[str] = frozenset()

    @classmethod
    def from_seeds(
        cls,
        seeds: Iterable[str],
        domains: Iterable[str] = (),
        mode: str = "hosts",
        deny: Iterable[str] = (),
    ) -> Scope:
        seeds = list(seeds)
        allowed = {_domain_name(d) for d in domains if d.strip()}
        if mode == "domains":
            allowed.update(registered_domain(hostname_of(s)) for s in seeds)
        return cls(
            hosts=frozenset(host_of(s) for s in seeds),
            domains=frozenset(allowed),
            mode=mode,
            deny=frozenset(_domain_name(d) for d in deny if d.strip()),
        )

    def allows(self, url: str) -> bool:
        if self.deny and any(is_subdomain(hostname_of(url), d) for d in self.deny):
            return False
        if self.mode == "any" or host_of(url) in self.hosts:
            return True
        return bool(self.domains) and any(is_subdomain(hostname_of(url), d) for d in self.domains)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hosts": sorted(self.hosts),
            "domains": sorted(self.domains),
            "mode": self.mode,
            "deny": sorted(self.deny),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scope:
        return cls(
            frozenset(data["hosts"]),
            frozenset(data.get("domains", ())),
            data.get("mode", "hosts"),
            frozenset(data.get("deny", ())),
        )


def _domain_name(text: str) -> str:
    return text.strip().strip(".").lower()
