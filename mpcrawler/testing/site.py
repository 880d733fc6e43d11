"""The built-in test site: a deterministic web of pages served on loopback.

Used by ``demo``, ``serve-site``, the tests and the benchmarks.  Page 0 is
``/`` and page *i* is ``/page/i``.  Every page links to its two children in a
binary tree (so every page is reachable from ``/``), to ``fanout`` more pages
chosen by a seeded generator, back home, to a few spellings of the same URLs
(fragments, relative paths, an upper-case scheme), to an off-site host
(``127.0.0.2``, same port) and to mailto/javascript links that must be
ignored.  Pages are padded with text to ``size`` bytes; ``latency`` seconds
of delay are added to every response.  The server counts every request it
serves by path (``hits``), so tests can check what was fetched and how often,
and logs each (``log``: path, status, body bytes sent, the validators asked).

With ``embeds=True`` every page also needs requisites, as a real page does:
a stylesheet (which ``@import``s another, with a background image and a
font), a script, an image of its own and a logo from the off-site host
(``/cdn/logo.png``, a CDN), all under ``/static/`` (``assets``), so an
archive of the site replays whole only with them.

Between crawls a test may change the site: ``edit`` a page (a new edition:
new bytes, new validators), ``add`` a page linked from another (which is
edited), ``delete`` one (404).  Pages carry an ``ETag`` and a
``Last-Modified`` and answer conditional requests with 304, as nginx does;
``conditional=False`` makes the server ignore them (the same 200 every
time), ``validators=False`` leaves the headers out.  ``session_ids=True``
puts a new ``;jsessionid=`` in every link of every answer, as a servlet
does for a client without cookies.

Each page has a name and text of its own, in a pair of seeded word lists
of its own (``name``), so no two pages have the same text, nor nearly
(``texts="pairs"``: 4,096 pairs, so page *i* and page *i* + 4,096 are near
alike).  ``texts="distinct"`` gives each page three word lists (262,144
triples: a site of 100,000 pages with no two near alike); ``texts="alike"``
builds every page on one template (19/20 of its text the same on
every page, the rest its own, as a forum's or a shop's pages are).
With ``traps=True`` the site also has what eats a crawler's budget by its
content, linked from ``/``: ``/copy/i`` (page
*i*'s exact copy), ``/near/i`` (page *i* with one sentence more), a soft-404
part (``/soft/``: every path under it answers 200 with one "not found" page,
whose relative links grow the path) and an endless calendar
(``/cal/YYYY/MM``, each month linking the next and the last); and the same
two traps made of short pages, of fewer than ten words: ``/empty/``
("Nothing here, but welcome anyway.") and ``/events/YYYY/MM`` ("No events
in MM/YYYY").  With ``soft_404s=True`` every path the site does not have
answers 200 with that ``/empty/`` page: a host-wide soft 404.

With ``app=N`` the site also has a single-page application of N pages,
linked from ``/``: ``/app/`` and ``/app/i`` all answer the same empty shell
(``<div id="root">`` and a script), and its script fetches the page's data
(``/app/api/i.json``) and only then builds the page: its title, text, an
image (``/app/pic.png``) and its links (its children ``/app/2i+1`` and
``/app/2i+2``, and the static page ``/page/i``).  A crawler that does not
run scripts finds no link in it.
"""

from __future__ import annotations

import collections
import email.utils
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple, TypeVar

__all__ = ["Hit", "SiteServer", "TestSite", "serve_site", "serving"]

BORN = 1_767_225_600  # 2026-01-01T00:00:00Z: every page's first Last-Modified
GATE_LIMIT = 60.0  # seconds a closed gate holds an answer at most (a test that forgot it)

_WORDS = [
    "crawler",
    "frontier",
    "politeness",
    "robots",
    "scheduler",
    "worker",
    "process",
    "queue",
    "disk",
    "cache",
    "waiting",
    "finding",
    "analyzer",
    "pipeline",
    "downloader",
    "request",
    "response",
    "link",
    "page",
    "site",
    "host",
    "depth",
    "weight",
    "priority",
    "checkpoint",
    "record",
    "throughput",
    "latency",
]


_SYLLABLES = [
    *("ka", "lo", "mi", "ne", "su", "ta", "ro", "vi", "de", "po"),
    *("an", "el", "ir", "os", "um", "ba", "ge", "hu", "ja", "ze"),
]


VOCABULARIES = 64  # word lists of the pages' text: 4,096 pairs
TEXTS = ("pairs", "distinct", "alike")  # how the pages' texts differ (TestSite's ``texts``)
_TEMPLATE = -1  # the word list of the text every page of ``texts="alike"`` shares


class TestSite:
    """The page graph and page bodies, independent of any server."""

    __test__ = False  # not a pytest class

    def __init__(
        self,
        pages: int = 500,
        size: int = 30_000,
        fanout: int = 12,
        offsite_host: str = "127.0.0.2",
        seed: int = 7,
        embeds: bool = False,
        images: int = 10,
        traps: bool = False,
        app: int = 0,
        texts: str = "pairs",
        soft_404s: bool = False,
    ) -> None:
        if pages < 1:
            raise ValueError("pages must be at least 1")
        if texts not in TEXTS:
            raise ValueError(f"texts must be one of {', '.join(TEXTS)}")
        self.texts = texts
        self.pages = pages
        self.size = size
        self.fanout = fanout
        self.offsite_host = offsite_host
        self.seed = seed
        rng = random.Random(seed)
        words = [rng.randrange(len(_WORDS)) for _ in range(max(64, size // 6))]
        sentences = []
        for i in range(0, len(words), 12):
            sentences.append(" ".join(f"{{{k}}}" for k in words[i : i + 12]) + ".")
        self._template = "\n".join(
            f"<p>{' '.join(sentences[i : i + 5])}</p>" for i in range(0, len(sentences), 5)
        )
        self._fillers: dict[int, tuple[list[str], str]] = {}  # by word list (``_filled``)
        self.editions: dict[int, int] = {}  # page -> times edited
        self.added: list[int] = []  # pages added, numbered from ``pages`` on
        self.added_links: dict[int, list[int]] = collections.defaultdict(list)
        self.deleted: set[int] = set()
        self.embeds = embeds
        self.images = images  # embeds=True: the site's own images, shared by its pages in turn
        self.assets = _assets(images) if embeds else {}  # path -> (content type, body)
        self.traps = traps
        self.app = app  # pages of the single-page application under /app/
        self.soft_404s = soft_404s  # a path it does not have: 200, the /empty/ page

    def edit(self, i: int) -> None:
        """Page ``i`` gets a new edition (other bytes, newer validators)."""
        self.editions[i] = self.editions.get(i, 0) + 1

    def add(self, linked_from: int) -> int:
        """A new page, linked from page ``linked_from`` (edited); its index."""
        index = self.pages + len(self.added)
        self.added.append(index)
        self.added_links[linked_from].append(index)
        self.edit(linked_from)
        return index

    def delete(self, i: int) -> None:
        """Page ``i`` answers 404 from now on."""
        self.deleted.add(i)

    def validators(self, i: int) -> tuple[str, str]:
        """(ETag, Last-Modified) of page ``i``'s current edition."""
        edition = self.editions.get(i, 0)
        modified = email.utils.formatdate(BORN + 3600 * edition, usegmt=True)
        return f'"p{i}-e{edition}"', modified

    @staticmethod
    def path(i: int) -> str:
        return "/" if i == 0 else f"/page/{i}"

    def paths(self) -> list[str]:
        return [self.path(i) for i in range(self.pages)]

    def links(self, i: int) -> list[int]:
        """The pages page ``i`` links to (children first, then the seeded
        ones, then pages added since)."""
        if i >= self.pages:
            return [0]
        out = [c for c in (2 * i + 1, 2 * i + 2) if c < self.pages]
        rng = random.Random(self.seed * 1_000_003 + i)
        out += [rng.randrange(self.pages) for _ in range(min(self.fanout, self.pages))]
        return out + self.added_links.get(i, [])

    def body(self, i: int, port: int, session: str | None = None) -> bytes:
        """Page ``i``'s HTML; with a ``session``, every link carries it as
        ``;jsessionid=`` (a servlet's URL rewriting for a client without
        cookies)."""
        hrefs = []
        for n, j in enumerate(self.links(i)):
            if n % 5 == 3 and i != 0 and j != 0:
                hrefs.append(f"{j}")  # relative to /page/
            elif n % 5 == 4:
                hrefs.append(f"{self.path(j)}#section-{n}")
            else:
                hrefs.append(self.path(j))
        hrefs += [
            "/",
            f"HTTP://127.0.0.1:{port}{self.path(i)}",
            f"http://{self.offsite_host}:{port}/offsite/{i}",
            "mailto:crawler@example.invalid",
            "javascript:void(0)",
        ]
        if session is not None:
            hrefs = [_with_session(h, session) for h in hrefs]
        nav = "\n".join(f'<li><a href="{h}">link {n}</a></li>' for n, h in enumerate(hrefs))
        if self.app and i == 0:
            nav += '\n<li><a href="/app/">the application</a></li>'
        if self.traps and i == 0:
            nav += "\n" + "\n".join(
                f'<li><a href="{h}">{h}</a></li>'
                for h in (
                    *("/copy/1", "/copy/2", "/near/3", "/soft/start/", "/cal/2026/01"),
                    *("/empty/start/", "/events/2031/03"),
                )
            )
        edition = self.editions.get(i, 0)
        requisites = figures = ""
        if self.embeds:
            requisites = (
                '<link rel="stylesheet" href="/static/site.css">'
                '<link rel="icon" href="/static/icon.png">'
                '<script src="/static/site.js"></script>'
            )
            figures = (
                f'<p><img src="/static/img/{i % self.images}.png" width="64" height="64" alt="">'
                f'<img src="http://{self.offsite_host}:{port}/cdn/logo.png" width="64" '
                'height="64" alt="logo"></p>\n'
            )
        head = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>Page {i}</title>{requisites}"
            "<style>body{font-family:sans-serif}li{margin:2px}</style></head>\n"
            f"<body><h1>Page {i}: {self.name(i)}</h1>\n{figures}"
            f"<nav><ul>\n{nav}\n</ul></nav>\n<main>\n"
            + (f"<p>Edition {edition}</p>\n" if edition else "")
        )
        tail = "\n</main></body></html>\n"
        room = max(0, self.size - len(head) - len(tail))
        return (head + self._text(i, room) + tail).encode("utf-8")

    def _vocabularies(self, i: int) -> tuple[int, ...]:
        """Page ``i``'s word lists: a pair of its own (of 2 x VOCABULARIES),
        or with ``texts`` other than "pairs" a triple (of 3 x VOCABULARIES)."""
        pair = (i % VOCABULARIES, VOCABULARIES + i // VOCABULARIES % VOCABULARIES)
        if self.texts == "pairs":
            return pair
        return (*pair, 2 * VOCABULARIES + i // VOCABULARIES**2 % VOCABULARIES)

    def _filled(self, vocabulary: int) -> tuple[list[str], str]:
        """Word list number ``vocabulary`` (as many words as _WORDS, each of
        three seeded syllables), and the filler in it (``size`` characters
        at least)."""
        rng = random.Random(self.seed * 3_000_017 + vocabulary)
        words = ["".join(rng.choice(_SYLLABLES) for _ in range(3)) for _ in _WORDS]
        text = self._template.format(*words)
        while len(text) < self.size:
            text += text
        return words, text

    def _filler(self, vocabulary: int) -> tuple[list[str], str]:
        found = self._fillers.get(vocabulary)
        if found is None:
            found = self._fillers[vocabulary] = self._filled(vocabulary)
        return found

    def name(self, i: int) -> str:
        """Page ``i``'s name: words of its word lists (no two pages have one)."""
        lists = [self._filler(v)[0] for v in self._vocabularies(i)]
        if self.texts != "pairs":
            return " ".join(words[j] for words in lists for j in (0, 7, 14))
        k = i // VOCABULARIES**2
        return " ".join([*lists[0][k % 7 :: 7], *lists[1][k % 5 :: 5]])

    def _text(self, i: int, room: int) -> str:
        """``room`` characters of page ``i``'s text: a part in each of its
        word lists, so pages share few of their words (their fingerprints
        are far apart, as real pages' are); with ``texts="alike"``, the
        template's text first and a twentieth of ``room`` in the page's lists."""
        template = ""
        if self.texts == "alike":
            template = self._filler(_TEMPLATE)[1][: room - room // 20]
            room -= len(template)
        fillers = [self._filler(v)[1] for v in self._vocabularies(i)]
        parts, at = [], 0
        for n, filler in enumerate(fillers, 1):
            end = room * n // len(fillers)
            parts.append(filler[: end - at])
            at = end
        return template + "".join(parts)

    def empty_page(self) -> bytes:
        """The short "not found" page of ``/empty/`` (and, with
        ``soft_404s``, of every path the site does not have)."""
        head = "<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>Welcome</title></head>"
        links = "".join(f'<a href="{w}/">{w}</a> ' for w in ("north", "south", "east"))
        text = "Nothing here, but welcome anyway."
        return (head + f"<body><p>{text}</p>{links}</body></html>").encode()

    def trap_body(self, path: str, port: int) -> bytes | None:
        """The answer of a path of the ``traps`` part (None: not one)."""
        if not self.traps:
            return None
        head = "<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>{}</title></head><body>"
        if path.startswith(("/copy/", "/near/")) and path[6:].isdigit():
            i = int(path[6:])
            if not 0 < i < self.pages:
                return None
            body = self.body(i, port)
            if path.startswith("/near/"):
                body = body.replace(b"<main>", b"<main><p>One sentence more, near.</p>", 1)
            return body
        if path.startswith("/soft/"):
            links = "".join(f'<a href="{w}/">{w}</a> ' for w in ("north", "south", "east"))
            text = " ".join(["Sorry, the page you asked for is not here any more."] * 3)
            return (head.format("Not found") + f"<p>{text}</p>{links}</body></html>").encode()
        if path.startswith("/empty/"):
            return self.empty_page()
        parts = path.split("/")
        if len(parts) == 4 and parts[1] == "events" and parts[2].isdigit() and parts[3].isdigit():
            year, month = int(parts[2]), int(parts[3])
            after = (year + month // 12, month % 12 + 1)
            before = (year - (month == 1), (month - 2) % 12 + 1)
            nav = "".join(f'<a href="/events/{y}/{m:02d}">&lt;</a> ' for y, m in (before, after))
            text = f"<p>No events in {month:02d}/{year}</p>"
            return (head.format("Events") + text + nav + "</body></html>").encode()
        if len(parts) == 4 and parts[1] == "cal" and parts[2].isdigit() and parts[3].isdigit():
            year, month = int(parts[2]), int(parts[3])
            after = (year + month // 12, month % 12 + 1)
            before = (year - (month == 1), (month - 2) % 12 + 1)
            days = " ".join(str(d) for d in range(1, 29))
            nav = "".join(
                f'<a href="/cal/{y}/{m:02d}">{y}-{m:02d}</a> ' for y, m in (before, after)
            )
            title = f"Calendar {year}-{month:02d}"
            text = f"<h1>{title}</h1><p>Events this month: none. Days: {days}</p>"
            return (head.format(title) + text + nav + "</body></html>").encode()
        return None

    def app_answer(self, path: str) -> tuple[bytes, str] | None:
        """The answer (body, content type) of a path of the application
        (None: not one of its paths)."""
        if not self.app or not path.startswith("/app/"):
            return None
        rest = path[5:]
        if rest == "" or (rest.isdigit() and rest == str(int(rest)) and int(rest) < self.app):
            return _APP_SHELL, "text/html; charset=utf-8"
        if rest == "app.js":
            return _APP_SCRIPT, "text/javascript"
        if rest == "pic.png":
            return _png(8, 8, (40, 120, 200)), "image/png"
        number = rest.removeprefix("api/").removesuffix(".json")
        if rest.startswith("api/") and number.isdigit() and int(number) < self.app:
            i = int(number)
            children = [f"/app/{c}" for c in (2 * i + 1, 2 * i + 2) if c < self.app]
            data = {
                "title": f"App page {i}",
                "text": f"App page {i}: {self.name(i % self.pages)}. " + self._text(i, 400),
                "links": [*children, self.path(i % self.pages)],
            }
            import json

            return json.dumps(data).encode(), "application/json"
        return None

    def page_index(self, path: str) -> int | None:
        """The page at ``path``, or None (not a page, or deleted)."""
        index = None
        if path == "/":
            index = 0
        elif path.startswith("/page/"):
            rest = path[6:]
            if rest.isdigit() and rest == str(int(rest)) and int(rest) > 0:
                number = int(rest)
                index = number if number < self.pages + len(self.added) else None
        return None if index in self.deleted else index


_APP_SHELL = b"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>App</title>
<script src="/app/app.js" defer></script></head>
<body><div id="root"></div>
<noscript>You need to enable JavaScript to run this app.</noscript></body></html>
"""
_APP_SCRIPT = rb"""(function () {
  var page = location.pathname.replace(/^\/app\/?/, "") || "0";
  fetch("/app/api/" + page + ".json").then(function (r) { return r.json(); }).then(function (d) {
    document.title = d.title;
    var root = document.getElementById("root");
    var h1 = document.createElement("h1"); h1.textContent = d.title; root.appendChild(h1);
    var p = document.createElement("p"); p.textContent = d.text; root.appendChild(p);
    var img = document.createElement("img"); img.src = "/app/pic.png"; root.appendChild(img);
    var ul = document.createElement("ul");
    d.links.forEach(function (href) {
      var li = document.createElement("li"), a = document.createElement("a");
      a.href = href; a.textContent = href; li.appendChild(a); ul.appendChild(li);
    });
    root.appendChild(ul);
  });
})();
"""


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A PNG of one colour, made here (no image library needed)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def _assets(images: int) -> dict[str, tuple[str, bytes]]:
    """The requisites of an embeds=True site, by path (``/cdn/`` is served
    by every host, and linked on the off-site one)."""
    assets = {
        f"/static/img/{n}.png": ("image/png", _png(64, 64, (n * 37 % 256, 120, n * 91 % 256)))
        for n in range(images)
    }
    assets["/cdn/logo.png"] = ("image/png", _png(64, 64, (220, 60, 40)))
    assets["/static/icon.png"] = ("image/png", _png(16, 16, (40, 120, 200)))
    assets["/static/bg.png"] = ("image/png", _png(8, 8, (245, 240, 225)))
    assets["/cdn/rule.png"] = ("image/png", _png(4, 4, (90, 90, 90)))
    assets["/static/site.css"] = (
        "text/css",
        b'@import url("extra.css");\n'
        b"body { background: #f5f0e1 url(bg.png) repeat; color: #223; }\n"
        b"h1 { border-bottom: 4px solid #5a5a5a; }\n",
    )
    assets["/static/extra.css"] = (
        "text/css",
        b"@font-face { font-family: Site; src: url(/static/site.woff2) format('woff2'); }\n"
        b"nav { background: url('/cdn/rule.png') repeat-x bottom; padding-bottom: 6px; }\n",
    )
    assets["/static/site.woff2"] = ("font/woff2", b"wOF2 not a real font: a requisite all the same")
    assets["/static/site.js"] = (
        "text/javascript",
        b"document.documentElement.setAttribute('data-js', 'ran');\n",
    )
    return assets


def _with_session(href: str, session: str) -> str:
    if not href.lower().startswith(("http", "/")) and not href[:1].isdigit():
        return href  # mailto:, javascript:
    cut = min((at for at in (href.find("#"), href.find("?")) if at >= 0), default=len(href))
    return f"{href[:cut]};jsessionid={session}{href[cut:]}"


class Hit(NamedTuple):
    """One request as the server saw it."""

    path: str
    status: int
    body_bytes: int  # bytes of body sent
    if_none_match: str | None
    if_modified_since: str | None
    at: float = 0.0  # when the request arrived (monotonic)


class SiteServer(ThreadingHTTPServer):
    """A threaded HTTP/1.1 server for a TestSite, counting requests by path."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(
        self,
        site: TestSite,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        robots: str | None = None,
        *,
        conditional: bool = True,
        validators: bool = True,
        session_ids: bool = False,
    ) -> None:
        self.site = site
        self.latency = latency
        self.robots = robots
        self.conditional = conditional
        self.validators = validators
        self.session_ids = session_ids  # every answer gives a new session id to its links
        self.sessions = 0
        self.hits: collections.Counter[str] = collections.Counter()
        self.log: list[Hit] = []
        self.hits_lock = threading.Lock()
        # Cleared, it holds every answer but the home page's and robots.txt's
        # until it is set again (a test that needs a crawl still running).
        self.gate = threading.Event()
        self.gate.set()
        super().__init__((host, port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-response is routine for a crawler's test site."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.server_address[0]}:{self.port}/"


class _Handler(BaseHTTPRequestHandler):
    """Serves the test site's pages, sitemaps, robots.txt and assets."""

    server: SiteServer
    arrived = 0.0
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out without a 40 ms stall

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_HEAD(self) -> None:
        """As GET, without the body (wget -N --no-if-modified-since asks so)."""
        self.do_GET()

    def do_GET(self) -> None:
        self.arrived = time.monotonic()  # before the latency
        server = self.server
        path = self.path.split("?", 1)[0].split(";", 1)[0]
        with server.hits_lock:
            server.hits[self.path] += 1
        if server.latency:
            time.sleep(server.latency)
        if path not in ("/", "/robots.txt"):
            server.gate.wait(GATE_LIMIT)
        if path == "/robots.txt" and server.robots is not None:
            self._send(200, server.robots.encode(), "text/plain")
            return
        asset = server.site.assets.get(path)
        if asset is not None:
            self._send(200, asset[1], asset[0])
            return
        app = server.site.app_answer(path)
        if app is not None:
            self._send(200, *app)
            return
        trap = server.site.trap_body(path, server.port)
        if trap is not None:
            self._send(200, trap, "text/html; charset=utf-8")
            return
        index = server.site.page_index(path)
        if index is None and server.site.soft_404s:
            self._send(200, server.site.empty_page(), "text/html; charset=utf-8")
            return
        if index is None:
            self._send(404, b"<html><title>Not found</title></html>", "text/html")
            return
        headers: list[tuple[str, str]] = []
        if server.validators:
            etag, modified = server.site.validators(index)
            headers = [("ETag", etag), ("Last-Modified", modified)]
            if server.conditional and self._not_modified(etag, modified):
                self._send(304, b"", "", headers)
                return
        session = None
        if server.session_ids:
            with server.hits_lock:
                server.sessions += 1
                session = f"{server.sessions:032X}"
        body = server.site.body(index, server.port, session)
        self._send(200, body, "text/html; charset=utf-8", headers)

    def _not_modified(self, etag: str, modified: str) -> bool:
        """RFC 9110 13.2.2: If-None-Match first; If-Modified-Since only without it."""
        match = self.headers.get("If-None-Match")
        if match is not None:
            return match.strip() == "*" or etag in [t.strip() for t in match.split(",")]
        since = email.utils.parsedate_tz(self.headers.get("If-Modified-Since") or "")
        if since is None:
            return False
        return email.utils.mktime_tz(since) >= email.utils.mktime_tz(
            email.utils.parsedate_tz(modified)  # type: ignore[arg-type]
        )

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in headers or ():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        sent = b"" if self.command == "HEAD" else body
        self.wfile.write(sent)
        server = self.server
        with server.hits_lock:
            server.log.append(
                Hit(
                    self.path,
                    status,
                    len(sent),
                    self.headers.get("If-None-Match"),
                    self.headers.get("If-Modified-Since"),
                    self.arrived,
                )
            )


@contextmanager
def serve_site(
    site: TestSite,
    host: str = "127.0.0.1",
    port: int = 0,
    latency: float = 0.0,
    robots: str | None = None,
    **options: bool,
) -> Iterator[SiteServer]:
    """Serve ``site`` from a background thread for the duration of the block
    (``options``: SiteServer's ``conditional`` and ``validators``)."""
    with serving(SiteServer(site, host, port, latency, robots, **options)) as server:
        yield server


ServerT = TypeVar("ServerT", bound=ThreadingHTTPServer)


@contextmanager
def serving(server: ServerT) -> Iterator[ServerT]:
    """Run any HTTP server from a background thread for the duration of the block."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
