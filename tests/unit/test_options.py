"""The option table: every crawl option is written once, and the parser, the
checks, --help and the crawling guide all follow it."""

from __future__ import annotations

import math
import typing

import pytest
from support import ROOT

from mpcrawler.cli import build_parser, settings_from_args
from mpcrawler.cli.parser import GROUPS
from mpcrawler.settings import OPTION_HINTS, OPTIONS, UPPER_BOUNDS, Settings, flag_of


def crawl_args(*args: str) -> Settings:
    return settings_from_args(build_parser().parse_args(["crawl", "http://a.test/", *args]))


def test_every_option_has_help_and_a_line_in_the_crawling_guide() -> None:
    guide = (ROOT / "docs" / "guide" / "crawling.md").read_text(encoding="utf-8")
    for name, how in OPTIONS.items():
        assert how.help, name
        assert f"`{flag_of(name)}" in guide, flag_of(name)


def test_crawl_help_groups_every_option_and_says_its_default() -> None:
    """Each option sits in its table group's --help section (none in the
    general block), the sections in GROUPS' order; each shows a value in
    one style, and its default when it has one."""
    crawl = build_parser()._subparsers._group_actions[0].choices["crawl"]  # type: ignore[union-attr]
    section = {
        action.dest: group.title
        for group in crawl._action_groups
        for action in group._group_actions
    }
    defaults = Settings()
    for name, how in OPTIONS.items():
        assert section[name] == GROUPS[how.group], name
        default = getattr(defaults, name)
        action = next(a for a in crawl._actions if a.dest == name)
        if default not in (None, False, [], ""):
            assert "default" in (action.help or ""), name
        if action.nargs != 0 and not action.choices:
            assert action.metavar and action.metavar != name.upper(), name  # not MAX_PAGES
    titles = [g.title for g in crawl._action_groups if g.title in GROUPS.values()]
    assert titles == list(GROUPS.values())
    text = crawl.format_help()
    assert text.startswith("usage: mpcrawler crawl [OPTION]... [SEED]...\n")


def test_the_parser_gives_each_option_to_its_setting() -> None:
    defaults = crawl_args()
    assert {n: getattr(defaults, n) for n in OPTIONS} == {
        n: getattr(Settings(), n) for n in OPTIONS
    }
    given = crawl_args(
        "--no-robots",
        "--allow-domain",
        "b.test",
        "--allow-domain",
        "c.test",
        "--warc",
        "w",
        "--warc-size",
        "2M",
        "--delay",
        "0.5",
        "--scope",
        "domains",
        "--lease-timeout",
        "3",
    )
    assert given.robots is False and given.allow_domains == ["b.test", "c.test"]
    assert (given.warc_dir, given.warc_size, given.delay) == ("w", 2 << 20, 0.5)
    assert (given.scope, given.lease_timeout) == ("domains", 3.0)


def test_every_option_of_bytes_takes_k_m_and_g() -> None:
    """One size parser for every size: a body's cap as a WARC file's."""
    sizes = sorted(n for n, how in OPTIONS.items() if how.metavar == "BYTES")
    assert {"max_bytes", "warc_size", "max_total_bytes"} <= set(sizes)
    for name in sizes:
        for text in ("40M", "40MB", "40MiB", "40m", str(40 << 20)):
            given = crawl_args(flag_of(name), text)
            assert getattr(given, name) == 40 << 20, (name, text)


@pytest.mark.parametrize("name", sorted(n for n, how in OPTIONS.items() if how.maximum))
def test_each_upper_bound_is_checked(name: str) -> None:
    most = UPPER_BOUNDS[name]
    hint = OPTION_HINTS[name]
    kind = float if hint is float or float in typing.get_args(hint) else int
    Settings(**{name: kind(most)}).validate()
    for bad in (most + 1, math.inf) if kind is float else (int(most) + 1,):
        with pytest.raises(ValueError, match=rf"^{flag_of(name)} must be at most"):
            Settings(**{name: kind(bad)}).validate()


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("workers", 0, "must be at least 1"),
        ("max_pages", 0, "must be at least 1"),
        ("max_depth", -1, "must not be negative"),
        ("delay", math.nan, "must not be negative"),
        ("timeout", 0.0, "must be more than 0"),
        ("hang_timeout", 0.0, "must be more than 0"),
        ("scope", "everywhere", "must be one of hosts, domains, any"),
    ],
)
def test_each_lower_bound_and_choice_is_checked(name: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=rf"^{flag_of(name)} {message}"):
        Settings(**{name: value}).validate()


def test_the_parser_reads_no_settings_types(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every crawl's start builds the parser: it takes the options' types
    from the table (OPTION_HINTS, read once at import), never from the
    classes again (each read takes milliseconds; once an option, they cost
    0.4 s of the master's CPU at every start)."""
    calls = []
    real = typing.get_type_hints
    monkeypatch.setattr(typing, "get_type_hints", lambda *a, **k: calls.append(1) or real(*a, **k))
    build_parser()
    build_parser()
    assert calls == []
    assert set(OPTION_HINTS) == set(OPTIONS)
