"""The URL rules, query clean-up, page robots directives, cookies.txt, the
DNS cache, config files and politeness groups: pure decisions (issue 25)."""

from __future__ import annotations

import argparse
import re

import pytest

from mpcrawler.cli import build_parser
from mpcrawler.configfile import load_config, to_toml
from mpcrawler.errors import UsageError
from mpcrawler.master.scheduler import Scheduler
from mpcrawler.robots.page import (
    agent_token,
    apply_nofollow,
    canonical_from_link_header,
    page_directives,
    rel_tokens,
)
from mpcrawler.settings import Settings
from mpcrawler.web.cookies import parse_cookies
from mpcrawler.web.dns import DnsCache, read_hosts_file
from mpcrawler.web.filters import (
    DEFAULT_REJECT_EXT,
    FirstSeen,
    QueryRules,
    UrlRules,
    extension_of,
    path_trap,
)
from mpcrawler.web.urls import Scope

SID = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    "url, cleaned",
    [
        ("http://h/p", "http://h/p"),
        ("http://h/p?", "http://h/p?"),  # nothing stripped: the URL as it was
        ("http://h/p?a=1&&b=2", "http://h/p?a=1&&b=2"),
        (f"http://h/p?PHPSESSID={SID}", "http://h/p"),
        (f"http://h/p?a=1&jsessionid={SID}&b=2", "http://h/p?a=1&b=2"),
        (f"http://h/p;jsessionid={SID.upper()}?a=1", "http://h/p?a=1"),
        (f"http://h/p;JSESSIONID={SID}", "http://h/p"),
        ("http://h/p?ASPSESSIONIDQQGGGNCU=ABCDEFGHIJKLMNOPQRSTUVWX", "http://h/p"),
        ("http://h/p?sid=7", "http://h/p?sid=7"),  # a short sid is a real parameter
        (f"http://h/p?sid={SID}", "http://h/p"),
        ("http://h/p?cfid=1&cftoken=2&x", "http://h/p?x"),
    ],
)
def test_session_ids_are_stripped(url: str, cleaned: str) -> None:
    assert QueryRules().apply(url) == cleaned
    assert QueryRules(session_ids=False).apply(url) == url


def test_strip_and_sort_query() -> None:
    rules = QueryRules(strip=("utm_*", "gclid"), sort=True, session_ids=False)
    assert rules.apply("http://h/?utm_source=a&b=2&a=1&gclid=x&UTM_MEDIUM=y") == "http://h/?a=1&b=2"
    assert rules.apply("http://h/?utm_source=a") == "http://h/"
    assert rules.apply("http://h/?b&a") == "http://h/?a&b"
    assert not QueryRules(session_ids=False) and QueryRules()


@pytest.mark.parametrize(
    "url, ext",
    [
        ("http://h/a/b.PDF?x=1", "pdf"),
        ("http://h/a/b.tar.gz", "gz"),
        ("http://h/a.d/b", ""),
        ("http://h/.hidden", ""),
        ("http://h", ""),
        ("http://h/x.zip;v=1", "zip"),
        ("http://h/x?file=y.pdf", ""),
    ],
)
def test_extension_of(url: str, ext: str) -> None:
    assert extension_of(url) == ext


def test_the_rules_say_which_refuses_in_order() -> None:
    scope = Scope.from_seeds(["http://a.test/"], deny=["bad.a.test"], mode="domains")
    rules = UrlRules(
        scope,
        accept=(r"/docs/",),
        reject=(r"/docs/search",),
        reject_ext=frozenset({"pdf"}),
    )
    assert rules.refusal("http://bad.a.test/docs/x") == "deny_domain"
    assert rules.refusal("http://b.test/docs/x") == "scope"
    assert rules.refusal("http://a.test/docs/search.pdf") == "reject_regex"
    assert rules.refusal("http://a.test/blog/x.pdf") == "accept_regex"
    assert rules.refusal("http://a.test/docs/x.pdf") == "reject_ext"
    assert rules.refusal("http://www.a.test/docs/x.html") is None
    assert rules.canonical("HTTP://A.test/docs/x?jsessionid=1#f") == "http://a.test/docs/x"


def test_default_extensions_follow_warc() -> None:
    assert "pdf" in DEFAULT_REJECT_EXT and "html" not in DEFAULT_REJECT_EXT
    assert Settings().effective_reject_ext() == sorted(DEFAULT_REJECT_EXT)
    assert Settings(warc_dir="w").effective_reject_ext() == []
    assert Settings(reject_ext=" .PDF, zip,").effective_reject_ext() == ["pdf", "zip"]
    assert Settings(reject_ext="").effective_reject_ext() == []
    assert Settings().accepted_types() == {"text/html", "application/xhtml+xml"}
    assert Settings(warc_dir="w").accepted_types() is None
    assert Settings(accept_type="text/html, *").accepted_types() is None
    # an extension of a type asked for is never skipped: with '*', none is
    assert Settings(accept_type="*").effective_reject_ext() == []
    pdf = Settings(accept_type="text/html,application/pdf").effective_reject_ext()
    assert "pdf" not in pdf and "zip" in pdf


@pytest.mark.parametrize(
    "settings, message",
    [
        (Settings(reject_regex=["("]), "--reject-regex '(': not a regular expression (missing )"),
        (Settings(headers=["NoColon"]), "--header 'NoColon': not 'Name: value'"),
        (Settings(proxy="ftp://p:1"), "--proxy ftp://p:1: not a proxy URL"),
        (Settings(accept_type="html"), "--accept-type 'html': not a content type"),
        (Settings(cookies="/nonexistent/c.txt"), "--cookies /nonexistent/c.txt"),
    ],
)
def test_bad_filter_and_request_settings(settings: Settings, message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        settings.validate()


def test_secrets_are_redacted_in_settings_data() -> None:
    settings = Settings(
        headers=["Authorization: Bearer s", "X-Plain: v", "cookie: c=1"],
        proxy="http://user:pw@proxy:3128",
    )
    data = settings.to_dict()
    assert data["headers"] == ["Authorization: ***", "X-Plain: v", "cookie: ***"]
    assert data["proxy"] == "http://user:***@proxy:3128"
    assert settings.to_dict(secrets=True)["headers"][0] == "Authorization: Bearer s"


@pytest.mark.parametrize(
    "metas, headers, expected",
    [
        ([("robots", "noindex, NOFOLLOW")], [], ("nofollow", "noindex")),
        ([("ROBOTS", "none")], [], ("nofollow", "noindex")),
        ([("mpcrawler", "nofollow")], [], ("nofollow",)),
        ([("googlebot", "nofollow")], [], ()),
        ([], ["noindex"], ("noindex",)),
        ([], ["googlebot: nofollow"], ()),
        ([], ["googlebot: nofollow, mpcrawler: noindex"], ("noindex",)),
        ([], ["max-snippet: 20, nofollow"], ("nofollow",)),
        ([], ["unavailable_after: 2030-01-01, noarchive"], ("noarchive",)),
        ([("robots", "all, index, follow")], [], ()),
    ],
)
def test_page_directives(
    metas: list[tuple[str, str]], headers: list[str], expected: tuple[str, ...]
) -> None:
    assert page_directives(metas, headers, "mpcrawler") == expected


def test_agent_rel_and_link_header() -> None:
    assert agent_token("MPCrawler/1.0 (+https://x)") == "mpcrawler"
    assert rel_tokens(["External", "nofollow"]) == {"external", "nofollow"}
    assert rel_tokens("ugc  NoFollow") == {"ugc", "nofollow"}
    assert rel_tokens(None) == frozenset()
    header = '<https://h/a.css>; rel="preload", <https://h/page>; rel="canonical"'
    assert canonical_from_link_header(header) == "https://h/page"
    assert canonical_from_link_header("<https://h/x>; rel=next") is None
    assert canonical_from_link_header(None) is None


def test_cookies_txt() -> None:
    text = (
        "# Netscape HTTP Cookie File\n"
        "\n"
        "h.test\tFALSE\t/\tFALSE\t0\ta\t1\n"
        "#HttpOnly_.h.test\tTRUE\t/x\tTRUE\t4102444800\tb\t2\n"
        "h.test\tTRUE\t/\tFALSE\t100\told\tgone\n"
        "h.test\tFALSE\t/\tFALSE\t0\tempty\n"
    )
    cookies = parse_cookies(text, now=1000)
    assert [(c.domain, c.path, c.secure, c.name, c.value) for c in cookies] == [
        ("h.test", "/", False, "a", "1"),
        (".h.test", "/x", True, "b", "2"),
        ("h.test", "/", False, "empty", ""),
    ]
    with pytest.raises(ValueError, match="line 1: not 7 TAB-separated fields"):
        parse_cookies("h.test FALSE / FALSE 0 a 1")
    with pytest.raises(ValueError, match="line 1: expiry 'soon'"):
        parse_cookies("h.test\tFALSE\t/\tFALSE\tsoon\ta\t1")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_dns_cache_honours_ttls_and_its_bound() -> None:
    clock, asked = FakeClock(), []
    answers = {"a.test": ("10.0.0.1", 30.0), "b.test": ("10.0.0.2", 1e9)}

    def lookup(name: str, timeout: float) -> tuple[str | None, float]:
        asked.append(name)
        return answers.get(name, (None, 0.0))

    cache = DnsCache(size=2, clock=clock, hosts={"local.test": "127.0.0.5"}, lookup=lookup)
    assert cache.address("A.test") == "10.0.0.1" and cache.address("a.test") == "10.0.0.1"
    assert asked == ["a.test"]
    answers["a.test"] = ("10.0.0.9", 30.0)
    clock.now = 29.9
    assert cache.address("a.test") == "10.0.0.1"  # within its TTL
    clock.now = 30.1
    assert cache.address("a.test") == "10.0.0.9" and asked == ["a.test", "a.test"]
    assert cache.address("local.test") == "127.0.0.5" and asked.count("local.test") == 0
    assert cache.address("::1") == "::1" and cache.address("127.000.0.1".replace("000", "0"))
    assert len(cache) == 2  # a.test went: the least recently used past the bound
    cache.address("b.test")
    clock.now = 1e6
    cache.address("b.test")
    assert asked.count("b.test") == 2  # a huge TTL is capped at a day


def test_hosts_file(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "hosts"  # type: ignore[operator]
    path.write_text("::1 localhost ip6\n127.0.0.1 localhost # v4\n# 1.2.3.4 no\n10.0.0.1 a b\n")
    assert read_hosts_file(str(path)) == {
        "localhost": "127.0.0.1",
        "ip6": "::1",
        "a": "10.0.0.1",
        "b": "10.0.0.1",
    }


def test_first_seen_is_bounded() -> None:
    seen = FirstSeen(size=2)
    assert seen.first("a") and not seen.first("a") and seen.first("b") and seen.first("c")
    assert seen.first("a")  # pushed out by b and c


def test_politeness_groups() -> None:
    by_host = Scheduler(politeness_key="host")
    assert by_host.table.group_key("http://h.test") == by_host.table.group_key(
        "https://h.test:8443"
    )
    assert by_host.table.group_key("http://a.h.test") != by_host.table.group_key("http://h.test")
    by_domain = Scheduler(politeness_key="domain")
    assert by_domain.table.group_key("http://a.example.co.uk") == "example.co.uk"
    assert by_domain.table.group_key("https://b.example.co.uk:81") == "example.co.uk"
    assert by_domain.table.group_key("http://[::1]:8080") == "::1"


def test_two_hosts_of_one_group_share_its_slots_and_delay() -> None:
    clock = FakeClock()
    scheduler = Scheduler(host_concurrency=1, delay=2.0, robots=False, clock=clock)
    for url in ("http://h.test/a", "https://h.test/b", "http://other.test/c"):
        scheduler.submit(scheduler.new_request(url))
    assigned, _ = scheduler.dispatch(10)
    assert sorted(r.url for r in assigned) == ["http://h.test/a", "http://other.test/c"]
    [first] = [r for r in assigned if "h.test" in r.url]
    scheduler.finished(first, started=0.0)
    assert scheduler.dispatch(10)[0] == []  # the https host waits for the group's delay
    clock.now = 2.0
    assert [r.url for r in scheduler.dispatch(10)[0]] == ["https://h.test/b"]


def _parser() -> argparse.ArgumentParser:
    sub = build_parser()._subparsers._group_actions[0].choices["crawl"]  # type: ignore[union-attr]
    return sub  # type: ignore[no-any-return]


def test_config_values_are_converted_as_flags(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "c.toml"  # type: ignore[operator]
    path.write_text(
        'warc-size = "2M"\nrevisit_after = "1d"\nno-robots = true\nheader = "X: 1"\n'
        "delay = 1\nsitemaps = false\n"
    )
    values = load_config(str(path), _parser())
    assert values == {
        "warc_size": 2 << 20,
        "revisit_after": 86400.0,
        "robots": False,
        "headers": ["X: 1"],
        "delay": 1.0,
        "sitemaps": False,
    }
    path.write_text('scope = "galaxy"\n')
    with pytest.raises(UsageError, match="scope must be one of hosts, domains, any"):
        load_config(str(path), _parser())


def test_printed_config_reads_back(tmp_path: pytest.TempPathFactory) -> None:
    settings = Settings(seeds=["http://h.test/"], reject_regex=['a"b\\'], delay=0.5)
    path = tmp_path / "p.toml"  # type: ignore[operator]
    path.write_text(to_toml(settings))
    values = load_config(str(path), _parser())
    assert values["reject_regex"] == ['a"b\\'] and values["delay"] == 0.5
    assert values["seeds"] == ["http://h.test/"] and "max_pages" not in values


def test_an_older_job_dir_resumes_with_the_defaults(tmp_path: pytest.TempPathFactory) -> None:
    from mpcrawler.errors import JobConflict
    from mpcrawler.output.jobdir import JobDir

    new = Settings(seeds=["http://a.test/"]).to_dict()
    older = {k: v for k, v in new.items() if k not in ("strip_query", "keep_session_ids")}
    JobDir(str(tmp_path)).check_compatible(older, new)
    with pytest.raises(JobConflict, match="strip-query=\\[\\], not \\['utm_\\*'\\]"):
        changed = Settings(seeds=["http://a.test/"], strip_query=["utm_*"]).to_dict()
        JobDir(str(tmp_path)).check_compatible(older, changed)


def test_apply_nofollow() -> None:
    links: list[tuple[str, str | None, int]] = [("a", None, 0), ("b", "scope", 1), ("c", None, 2)]
    assert apply_nofollow(links, ("nofollow",), set()) == [
        ("a", "nofollow", 0),
        ("b", "scope", 1),
        ("c", "nofollow", 2),
    ]
    assert apply_nofollow(links, ("noindex",), {"c"}) == [
        ("a", None, 0),
        ("b", "scope", 1),
        ("c", "nofollow", 2),
    ]
    assert apply_nofollow(links, (), set()) is links


@pytest.mark.parametrize(
    "path, why",
    [
        ("/a/b/a/b/a/b/", "the path repeats a/b/ more than 2 times"),
        ("/docs/x/x/x/page", "the path repeats x/ more than 2 times"),
        ("/" + "/".join(map(str, range(21))), "21 path segments, more than 20"),
        ("/a/b/a/b/", None),  # twice is allowed, as Heritrix does
        ("/2026/01/01/", None),
        ("/a/b/c?next=/x/x/x/x", None),  # the query is not the path
        ("/", None),
        ("", None),
    ],
)
def test_paths_that_loop_or_keep_growing_are_traps(path: str, why: str | None) -> None:
    url = "http://h.test" + path
    assert path_trap(url, 2, 20) == why
    rules = UrlRules(Scope.from_seeds(["http://h.test/"]))
    assert rules.refusal(url) == ("path_trap" if why else None)
    looser = UrlRules(
        Scope.from_seeds(["http://h.test/"]), max_path_repeats=5, max_path_segments=50
    )
    assert looser.refusal(url) is None
