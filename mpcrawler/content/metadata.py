"""A page's metadata (``--extract``): author, dates, description, site
name, canonical URL, image and tags, as the page itself says them.

A pure function over the lxml tree an analyzer parsed, called before the
main content is extracted (which cuts the tree).  Each field comes from the
first source, in order of trust, that says it:

1. JSON-LD (``<script type="application/ld+json">``): the page's article
   (an object whose ``@type`` is an Article, a NewsArticle, a BlogPosting...),
   else its web page, else any object, ``@graph`` lists walked;
2. Open Graph (``og:*``, ``article:*``);
3. Dublin Core (``DC.*``, ``dcterms.*``);
4. other ``<meta>`` names (``author``, ``description``, ``keywords``,
   ``date``, ``citation_*``, ``parsely-*``, ``twitter:*``...), and
   ``<link rel=canonical>`` and ``rel=image_src``;
5. ``<time datetime>`` (published: the one marked ``datePublished`` or
   ``pubdate``, else the first in the page's ``article`` or ``header``);
6. the visible byline (``rel=author``, ``itemprop=author``, a class or id
   that names a byline or an author), a short line without its "By".

Dates are written in ISO 8601: a date alone as ``YYYY-MM-DD``, a time with
its offset as the page gave it; a date the page writes in another form
(RFC 2822, "May 5, 2020", "5 May 2020") is converted, and one before 1990
or after next year is dropped.  URLs are made absolute against the page's.

Bounded, whatever the page: at most ``MAX_SCRIPTS`` JSON-LD scripts of
``MAX_SCRIPT_BYTES`` each are read, their objects walked to ``MAX_NODES``;
a field's text is cut to ``MAX_TEXT`` characters, and ``tags`` to
``MAX_TAGS``.  Broken JSON is skipped.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import email.utils
import json
import re
from collections.abc import Iterator
from typing import Any

from ada_url import join_url

__all__ = ["FIELDS", "byline_name", "iso_date", "page_metadata"]

FIELDS = (
    "headline", "author", "published", "modified", "description", "site_name", "canonical",
    "image", "tags",
)  # fmt: skip
MAX_SCRIPTS = 16
MAX_SCRIPT_BYTES = 1 << 20
MAX_NODES = 2000
MAX_TEXT = 1000
MAX_TAGS = 32
MAX_BYLINE = 100  # characters: a longer "author" box is a bio, not a byline

# JSON-LD types, most trusted first: the page's article, then the page.
_ARTICLE_TYPES = frozenset(
    {"article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle",
     "opinionnewsarticle", "reviewnewsarticle", "techarticle", "scholarlyarticle", "report",
     "socialmediaposting", "liveblogposting", "posting", "review", "recipe", "howto"}
)  # fmt: skip
_LD_FIELDS = (
    ("headline", "headline"),
    ("datePublished", "published"),
    ("dateCreated", "published"),
    ("dateModified", "modified"),
    ("description", "description"),
)
_PAGE_TYPES = frozenset({"webpage", "itempage", "aboutpage", "collectionpage", "profilepage"})

# <meta name|property> (lower case) -> field, by source (each list in order of trust)
_OPEN_GRAPH = {
    "og:title": "headline",
    "og:description": "description",
    "og:site_name": "site_name",
    "og:url": "canonical",
    "og:image": "image",
    "og:image:url": "image",
    "og:image:secure_url": "image",
    "article:published_time": "published",
    "article:modified_time": "modified",
    "og:updated_time": "modified",
    "article:author": "author",
    "article:tag": "tags",
}
_DUBLIN_CORE = {
    "dc.title": "headline",
    "dcterms.title": "headline",
    "dc.creator": "author",
    "dcterms.creator": "author",
    "dc.date": "published",
    "dc.date.issued": "published",
    "dcterms.issued": "published",
    "dcterms.created": "published",
    "dcterms.date": "published",
    "dcterms.modified": "modified",
    "dc.date.modified": "modified",
    "dc.description": "description",
    "dcterms.description": "description",
    "dc.publisher": "site_name",
    "dcterms.publisher": "site_name",
    "dc.subject": "tags",
    "dcterms.subject": "tags",
}
_META = {
    "twitter:title": "headline",
    "parsely-title": "headline",
    "citation_title": "headline",
    "sailthru.title": "headline",
    "author": "author",
    "byl": "author",
    "citation_author": "author",
    "parsely-author": "author",
    "sailthru.author": "author",
    "description": "description",
    "twitter:description": "description",
    "application-name": "site_name",
    "twitter:image": "image",
    "twitter:image:src": "image",
    "thumbnail": "image",
    "keywords": "tags",
    "news_keywords": "tags",
    "parsely-tags": "tags",
    "date": "published",
    "pubdate": "published",
    "publishdate": "published",
    "publish-date": "published",
    "publish_date": "published",
    "published_time": "published",
    "datepublished": "published",
    "article.published": "published",
    "citation_publication_date": "published",
    "citation_date": "published",
    "parsely-pub-date": "published",
    "sailthru.date": "published",
    "last-modified": "modified",
    "lastmod": "modified",
    "datemodified": "modified",
    "article.updated": "modified",
}
_ITEMPROP = {
    "datepublished": "published",
    "datecreated": "published",
    "datemodified": "modified",
    "description": "description",
    "author": "author",
    "keywords": "tags",
}
# ("yline" and "uthor": any case of their first letter, at the cost of one
# contains() each; translate() to lower case cost a pass of its own per element)
_BYLINE_XPATH = (
    "//*[@rel='author' or @itemprop='author' or contains(@class, 'yline') "
    "or contains(@class, 'uthor') or contains(@id, 'yline')]"
)
_BY = re.compile(r"^\s*(?:by|von|par|por|door|di|av)\s*[:\-]?\s+", re.I)
_BY_INSIDE = re.compile(r"\s(?:by|von|par|por)\s+(?=[A-ZÀ-Þ])", re.I)
# where a byline's name ends: a digit (a date), a separator, "|", " - ", an " on "
_NOT_NAME = re.compile(
    r"\d|[|•·\u2014\u2013@]|\s[-,]\s"
    r"|\s(?:on|updated|published|posted|edited|photos?|reporting)\s",
    re.I,
)
_MONTH_AT_END = re.compile(  # a date's month, when a digit followed it
    r"\s+(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?$",
    re.I,
)
_NOT_BYLINES = ("about", "last updated", "updated", "posted", "published", "follow")
MAX_NAME_WORDS = 8  # a byline longer than this is a sentence
_SPACES = re.compile(r"\s+")
_TITLE_SEPARATOR = re.compile(r"\s+(?:[|\-\u2013\u2014»·]|::)\s+")
_WRAPPERS = re.compile(r"^\s*(?://\s*)?(?:<!\[CDATA\[|<!--)|(?://\s*)?(?:\]\]>|-->)\s*$")
_TEXT_DATES = ("%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y", "%B %d %Y", "%Y/%m/%d", "%d.%m.%Y")


def page_metadata(root: Any, base: str) -> dict[str, Any]:
    """The fields of FIELDS the page says (only those), from the lxml tree
    ``root`` (not changed), URLs made absolute against ``base``."""
    tags: dict[str, list[Any]] = {"meta": [], "link": [], "script": [], "time": []}
    for element in root.iter("meta", "link", "script", "time"):  # one walk of the tree
        tags[element.tag].append(element)
    found: dict[str, Any] = {}
    _take(found, _json_ld(tags["script"]))
    metas = _metas(tags["meta"])
    for table in (_OPEN_GRAPH, _DUBLIN_CORE, _META):
        _take(found, _from_metas(metas, table))
    _take(found, _links(tags["link"]))
    if "published" not in found or "modified" not in found:
        _take(found, _times(tags["time"]))
    if "author" not in found:
        _take(found, _byline(root))
    if "headline" not in found:
        _take(found, {"headline": _title_alone(root, found.get("site_name"))})
    return _cleaned(found, base)


def _title_alone(root: Any, site: Any) -> str | None:
    """The page's ``<title>`` without the site's name: the part of it, cut
    at a separator (" | ", " - ", " — ", " :: ", " » "), that is not the
    site's name, or else the first part if it is long enough to be one."""
    title = next((t for t in root.iter("title")), None)
    text = _one_line(" ".join(title.itertext())) if title is not None else ""
    parts = [p.strip() for p in _TITLE_SEPARATOR.split(text) if p.strip()]
    if len(parts) < 2:
        return text or None
    site_words = _words(site) if isinstance(site, str) else ""
    kept = [p for p in parts if _words(p) != site_words]
    if site_words and len(kept) < len(parts):
        return " - ".join(kept) if len(kept) > 1 else kept[0] if kept else text
    return parts[0] if len(parts[0].split()) >= 3 else text


def _words(text: str) -> str:
    return re.sub(r"\W+", " ", text).strip().lower()


def _take(found: dict[str, Any], offered: dict[str, Any]) -> None:
    """Fields ``found`` lacks, from ``offered`` (a less trusted source)."""
    for name, value in offered.items():
        if name not in found and value:
            found[name] = value


# ---------------------------------------------------------------- JSON-LD
def _json_ld(scripts: list[Any]) -> dict[str, Any]:
    """The fields of the most trusted JSON-LD object of the page's ``scripts``."""
    objects: list[dict[str, Any]] = []
    scripts = [s for s in scripts if (s.get("type") or "").strip().lower() == "application/ld+json"]
    for script in scripts[:MAX_SCRIPTS]:
        text = script.text or ""
        if len(text) > MAX_SCRIPT_BYTES:
            continue
        try:
            data = json.loads(_WRAPPERS.sub("", text))
        except ValueError:
            continue
        objects.extend(_objects(data))
    if not objects:
        return {}
    ranked = sorted(objects, key=_rank)
    found: dict[str, Any] = {}
    for item in ranked:
        _take(found, _ld_fields(item))
    return found


def _objects(data: Any) -> Iterator[dict[str, Any]]:
    """Every JSON-LD object in ``data`` (``@graph`` lists and nesting
    walked), at most MAX_NODES visited."""
    stack, seen = [data], 0
    while stack and seen < MAX_NODES:
        node = stack.pop()
        seen += 1
        if isinstance(node, list):
            stack.extend(reversed(node[:MAX_NODES]))
        elif isinstance(node, dict):
            if "@type" in node:
                yield node
            graph = node.get("@graph")
            if isinstance(graph, list):
                stack.extend(reversed(graph[:MAX_NODES]))
            main = node.get("mainEntity")
            if isinstance(main, (dict, list)):
                stack.append(main)


def _types(item: dict[str, Any]) -> set[str]:
    kind = item.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return {k.lower() for k in kinds if isinstance(k, str)}


def _rank(item: dict[str, Any]) -> int:
    kinds = _types(item)
    return 0 if kinds & _ARTICLE_TYPES else 1 if kinds & _PAGE_TYPES else 2


def _names(value: Any) -> list[str]:
    """Names in a JSON-LD person, organisation, or list of them."""
    values = value if isinstance(value, list) else [value]
    names = []
    for item in values[:20]:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            names.append(item["name"])
    return [n for n in (_one_line(n) for n in names) if n and not _is_url(n)]


def _url_of(value: Any) -> str | None:
    """A JSON-LD image: a URL, an ImageObject, or a list of them (the first)."""
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, dict):
        value = value.get("url") or value.get("contentUrl")
    return value if isinstance(value, str) else None


def _ld_fields(item: dict[str, Any]) -> dict[str, Any]:
    kinds = _types(item)
    fields: dict[str, Any] = {}
    if kinds & (_ARTICLE_TYPES | _PAGE_TYPES) or not kinds & {"organization", "person"}:
        if authors := _names(item.get("author") or item.get("creator")):
            fields["author"] = ", ".join(dict.fromkeys(authors))
        for key, name in _LD_FIELDS:
            if isinstance(item.get(key), str) and name not in fields:
                fields[name] = item[key]
        publisher = _names(item.get("publisher"))
        if publisher:
            fields["site_name"] = publisher[0]
        if image := _url_of(item.get("image") or item.get("thumbnailUrl")):
            fields["image"] = image
        keywords = item.get("keywords")
        if isinstance(keywords, str):
            fields["tags"] = keywords
        elif isinstance(keywords, list):
            fields["tags"] = [k for k in keywords if isinstance(k, str)]
        if isinstance(item.get("url"), str) and kinds & _ARTICLE_TYPES:
            fields["canonical"] = item["url"]
    if "website" in kinds and isinstance(item.get("name"), str):
        fields["site_name"] = item["name"]
    return fields


# ------------------------------------------------------------------ meta
def _metas(metas: list[Any]) -> list[tuple[str, str]]:
    """Each ``<meta>``'s (name, property or itemprop, lower case, ``dc:``
    written ``dc.``; content); an attribute of several names gives each."""
    found = []
    for meta in metas:
        content = meta.get("content")
        if content is None:
            continue
        for attribute in ("property", "name", "itemprop"):
            for key in (meta.get(attribute) or "").lower().split():
                if key.startswith(("dc:", "dcterms:")):
                    key = key.replace(":", ".", 1)
                found.append((key, content))
    return found


def _from_metas(metas: list[tuple[str, str]], table: dict[str, str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, content in metas:
        name = table.get(key) or (_ITEMPROP.get(key) if table is _META else None)
        if name is None or not content.strip() or (name == "author" and _is_url(content)):
            continue  # (article:author is often the author's page, not a name)
        if name == "tags":
            fields.setdefault("tags", []).append(content)
        elif name == "author" and name in fields and table is _OPEN_GRAPH:
            fields["author"] += ", " + content  # several article:author
        else:
            fields.setdefault(name, content)
    return fields


def _links(links: list[Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for link in links:
        rels = (link.get("rel") or "").lower().split()
        href = link.get("href")
        if not href:
            continue
        if "canonical" in rels:
            fields.setdefault("canonical", href)
        elif "image_src" in rels:
            fields.setdefault("image", href)
    return fields


def _times(times: list[Any]) -> dict[str, Any]:
    """``<time datetime>``: the one marked published (or modified), else the
    first in the page's article or header."""
    fields: dict[str, Any] = {}
    first = None
    for time in times:
        stamp = time.get("datetime")
        if not stamp:
            continue
        prop = (time.get("itemprop") or "").lower()
        if prop in _ITEMPROP and _ITEMPROP[prop] in ("published", "modified"):
            fields.setdefault(_ITEMPROP[prop], stamp)
        elif time.get("pubdate") is not None:
            fields.setdefault("published", stamp)
        elif first is None and any(
            a.tag in ("article", "header", "main") for a in time.iterancestors()
        ):
            first = stamp
    if first is not None:
        fields.setdefault("published", first)
    return fields


def _byline(root: Any) -> dict[str, Any]:
    """The visible byline: the name in the first author or byline element
    that has one (its ``itemprop=name`` if marked)."""
    for element in root.xpath(_BYLINE_XPATH)[:50]:
        if element.tag in ("meta", "link", "script", "style", "body", "html"):
            continue
        named = element.xpath(".//*[@itemprop='name']")
        if named:
            text = named[0].get("content") or " ".join(named[0].itertext())
        else:
            text = " ".join(element.itertext())
        if name := byline_name(text):
            return {"author": name}
    return {}


def byline_name(text: str) -> str | None:
    """The name in a byline's text: after its "By", before a date, a
    separator or a job title's comma; None if what is left is not a name."""
    text = _one_line(text)
    if by := _BY_INSIDE.search(text):
        text = text[by.end() :]
    text = _BY.sub("", text)
    end = _NOT_NAME.search(text)
    if end is not None:
        dated = text[end.start()].isdigit()
        text = text[: end.start()].strip(" ,.;:")
        if dated:
            text = _MONTH_AT_END.sub("", text).strip(" ,.;:")
    words = len(text.split())
    if not 2 < len(text) <= MAX_BYLINE or words > MAX_NAME_WORDS or _is_url(text):
        return None
    return None if text.lower().startswith(_NOT_BYLINES) else text


def _is_url(text: str) -> bool:
    return "://" in text or text.lower().startswith("www.")


# ----------------------------------------------------------------- values
def _one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip()[:MAX_TEXT]


def iso_date(text: str, today: dt.date | None = None) -> str | None:
    """``text`` (ISO 8601, RFC 2822, or a date in words) as ISO 8601, or
    None: not a date, or one before 1990 or after next year."""
    text = text.strip()
    if not text:
        return None
    parsed: dt.datetime | dt.date | None = None
    candidate = text.replace("Z", "+00:00") if text.endswith("Z") else text
    with contextlib.suppress(ValueError):
        parsed = dt.datetime.fromisoformat(candidate)
    if parsed is None and re.fullmatch(r"\d{4}-\d{2}-\d{2}", text[:10]):
        try:
            parsed = dt.date.fromisoformat(text[:10])
        except ValueError:
            parsed = None
    if parsed is None:
        try:
            parsed = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            parsed = None
    if parsed is None:
        words = _SPACES.sub(" ", re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", text))
        for pattern in _TEXT_DATES:
            try:
                parsed = dt.datetime.strptime(words, pattern).date()
                break
            except ValueError:
                continue
    if parsed is None:
        return None
    year_now = (today or dt.date.today()).year
    if not 1990 <= parsed.year <= year_now + 1:
        return None
    if isinstance(parsed, dt.datetime):
        if parsed.time() == dt.time(0) and parsed.tzinfo is None and len(text) <= 10:
            return parsed.date().isoformat()
        return parsed.isoformat()
    return parsed.isoformat()


def _tags(value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    tags: list[str] = []
    for item in values:
        if isinstance(item, str):
            tags += [t for t in (_one_line(p) for p in re.split(r"[,;]", item)) if t]
    return list(dict.fromkeys(tags))[:MAX_TAGS]


def _absolute(url: str, base: str) -> str | None:
    try:
        return str(join_url(base, url.strip()))
    except ValueError:
        return None


def _cleaned(found: dict[str, Any], base: str) -> dict[str, Any]:
    """The fields in their record's form: dates in ISO 8601, URLs absolute,
    texts on one line, tags a list; a value that is none of these dropped."""
    cleaned: dict[str, Any] = {}
    for name in FIELDS:
        value = found.get(name)
        if not value:
            continue
        if name in ("published", "modified"):
            value = iso_date(value) if isinstance(value, str) else None
        elif name in ("canonical", "image"):
            value = _absolute(value, base) if isinstance(value, str) else None
        elif name == "tags":
            value = _tags(value)
        elif isinstance(value, str):
            value = _one_line(value)
            if name == "author":
                value = _BY.sub("", value).strip(" ,;")
        else:
            value = None
        if value:
            cleaned[name] = value
    return cleaned
