"""``check-url URL [SEED...] [crawl options]``: would a crawl fetch URL, and if not, why.

Without any network: it builds the crawl's ``UrlRules`` from the options
(and the seeds: those given, else the job dir's, else URL itself), prints
URL's canonical form (query clean-up included) and the verdict, naming the
rule that refuses it: ``malformed``, ``url_length``, one of
:data:`~mpcrawler.web.filters.RULES`, or ``robots`` (from the robots.txt
the crawl of ``--job-dir`` saved; not checked without one).  Exit 0 if the
URL would be fetched, 1 if it would not, 2 for a usage error.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .errors import JobConflict, JobDamaged, UsageError
from .output.jobdir import JobDir
from .robots.cache import RobotsCache
from .robots.rules import RobotsRules
from .settings import Settings
from .settings.worker import WorkerConfig
from .web.filters import UrlRules, path_trap, rule_flag
from .web.urls import InvalidURL, Scope, canonicalize, host_key

__all__ = ["run_check_url", "verdict"]


def _job_seeds(job_dir: str | None) -> list[str]:
    if not job_dir or not JobDir(job_dir).exists():
        return []
    try:
        return list(JobDir(job_dir).read()[0].get("seeds", []))
    except (JobConflict, JobDamaged, OSError) as exc:
        raise UsageError(f"--job-dir {job_dir}: {exc}") from None


def verdict(url: str, settings: Settings) -> tuple[str | None, str | None, str]:
    """(canonical URL or None, the rule that refuses it or None, a detail)."""
    scope = Scope.from_seeds(
        settings.seeds,
        settings.filters.allow_domains,
        settings.filters.scope,
        settings.filters.deny_domains,
    )
    rules = UrlRules.from_settings(WorkerConfig.of(settings), scope)
    try:
        canonical = rules.canonical(url)
    except InvalidURL as exc:
        return None, "malformed", exc.reason
    if len(canonical) > settings.filters.max_url_length:
        return (
            canonical,
            "url_length",
            f"longer than --max-url-length {settings.filters.max_url_length}",
        )
    rule = rules.refusal(canonical)
    if rule is not None:
        return canonical, rule, _detail(rule, canonical, settings, rules)
    if settings.politeness.robots and settings.startup.job_dir:
        text = RobotsCache(settings.startup.job_dir).load(host_key(canonical))
        if text is None:
            return canonical, None, "robots.txt not checked: the crawl has not read this host's"
        if not RobotsRules.parse(text, settings.requests.user_agent).allows(canonical):
            return canonical, "robots", "disallowed by robots.txt (as the crawl last read it)"
        return canonical, None, "allowed by robots.txt (as the crawl last read it)"
    return canonical, None, ""


def _detail(rule: str, url: str, settings: Settings, rules: UrlRules) -> str:
    if rule == "reject_regex":
        return f"--reject-regex {rules.rejecting(url)!r} matches"
    if rule == "accept_regex":
        return f"no --accept-regex matches ({', '.join(map(repr, settings.filters.accept_regex))})"
    if rule == "reject_ext":
        explicit = settings.filters.reject_ext is not None
        return "its extension is in " + ("--reject-ext" if explicit else "the default --reject-ext")
    if rule == "path_trap":
        why = path_trap(url, settings.filters.max_path_repeats, settings.filters.max_path_segments)
        return f"{why} ({rule_flag(rule)})"
    if rule == "scope":
        seeds = ", ".join(settings.seeds)
        return f"not within --scope {settings.filters.scope} of the seeds ({seeds})"
    return f"refused by {rule_flag(rule)}"


def run_check_url(
    args: argparse.Namespace, effective_settings: Callable[[argparse.Namespace], Settings]
) -> int:
    """The command; ``effective_settings`` is the CLI's (checked settings)."""
    try:
        canonicalize(args.url)
    except InvalidURL as exc:
        print(f"canonical  (none)\nverdict    refused by malformed: {exc.reason}")
        return 1
    if not args.seeds and not args.seeds_file:
        args.seeds = _job_seeds(args.job_dir) or [args.url]
    settings = effective_settings(args)
    canonical, rule, detail = verdict(args.url, settings)
    print(f"canonical  {canonical if canonical is not None else '(none)'}")
    if rule is None:
        print("verdict    crawled" + (f" ({detail})" if detail else ""))
        return 0
    print(f"verdict    refused by {rule}: {detail}")
    return 1
