"""``crawl``: the settings from the arguments (seeds, credentials, paths
checked before anything is written), the crawl run, its summary printed;
and ``--print-config``."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..configfile import to_toml
from ..errors import FrontierError, MpcrawlerError, UsageError
from ..output.sinks import kind_of
from ..settings import (
    OPTIONS,
    Settings,
)
from ..web.redact import redact_url
from ..web.urls import InvalidURL, host_key, split_credentials
from .parser import EXIT_BUDGET, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_NOTHING, EXIT_OK, OUTCOMES

if TYPE_CHECKING:
    from ..master.crawler import CrawlResult


def read_seeds(
    args: argparse.Namespace,
) -> tuple[list[str], dict[str, int], dict[str, list[str]]]:
    """The seeds, the priorities the seeds file gave some of them
    (``URL<TAB>PRIORITY``; a seed without one has priority 0), and the
    credentials the seeds carried, by host (taken out of the URLs here)."""
    seeds: list[str] = []
    priorities: dict[str, int] = {}
    credentials: dict[str, list[str]] = {}

    def take(text: str) -> str:
        url, creds = split_credentials(text)
        if creds is not None:
            credentials.setdefault(host_key(url), list(creds))
        return url

    for seed in args.seeds:
        try:
            seeds.append(take(seed))
        except InvalidURL as exc:
            raise UsageError(f"malformed seed URL {redact_url(seed)!r}: {exc.reason}") from None
    if args.seeds_file:
        try:
            lines = Path(args.seeds_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read seeds file {args.seeds_file}: {exc}") from None
        bad = []
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            text, tab, priority = text.partition("\t")
            try:
                url = take(text.strip())
                if tab:
                    priorities[url] = int(priority.strip())
                seeds.append(url)
            except (InvalidURL, ValueError):
                bad.append(str(number))
        if bad:
            raise UsageError(
                f"malformed line(s) {', '.join(bad)} in {args.seeds_file}: "
                "each line is a URL, optionally a TAB and an integer priority"
            )
    if not seeds:
        raise UsageError("no seed URLs given")
    return seeds, priorities, credentials


def http_credentials(
    args: argparse.Namespace, seeds: list[str], credentials: dict[str, list[str]]
) -> dict[str, list[str]]:
    """The seeds' own credentials, and --http-user's (its password from
    --http-password-file or MPCRAWLER_HTTP_PASSWORD) for the other seed hosts."""
    if args.http_user is None:
        if args.http_password_file:
            raise UsageError("--http-password-file goes with --http-user")
        return credentials
    password = os.environ.get("MPCRAWLER_HTTP_PASSWORD", "")
    if args.http_password_file:
        try:
            password = Path(args.http_password_file).read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read --http-password-file: {exc}") from None
    return {host_key(s): [args.http_user, password] for s in seeds} | credentials


def _check_writable(path: Path, what: str) -> None:
    """Fail now, not after the crawl, if ``path`` cannot be appended to.
    Leaves nothing behind that was not there, and never makes ``path`` itself
    appear, even for a moment (a reader of the job dir would see it come and go)."""
    existed = path.exists()
    new_dir = next((p for p in reversed(path.parents) if not p.exists()), None)
    probe = path if existed else path.with_name(f".{path.name}.{os.getpid()}.write-test")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(probe, "a", encoding="utf-8"):
            pass
        if not existed:
            probe.unlink()
    except OSError as exc:
        raise UsageError(f"cannot write {what} {path}: {exc.strerror or exc}") from None
    finally:
        if new_dir is not None:  # the crawl makes it when it starts
            shutil.rmtree(new_dir, ignore_errors=True)


def settings_from_args(args: argparse.Namespace) -> Settings:
    seeds, seed_priorities, credentials = read_seeds(args)
    return Settings(
        credentials=http_credentials(args, seeds, credentials),
        seeds=seeds,
        seed_priorities=seed_priorities,
        **{name: getattr(args, name) for name in OPTIONS},
    )


def check_paths(settings: Settings) -> None:
    """Usage errors for a job dir, output, log or rejected log that cannot be written."""
    if settings.startup.job_dir:
        job = Path(settings.startup.job_dir)
        if job.exists() and not job.is_dir():
            raise UsageError(f"job dir {job} is not a directory")
        _check_writable(job / ".write-test", "job dir")
    if (journal := settings.output_path()) is not None:
        _check_writable(journal, "output")
    for spec in settings.outputs.out:
        kind = kind_of(spec)
        if kind in ("jsonl.gz", "jsonl.zst"):
            _check_writable(Path(spec), "output")
        elif kind == "parquet":
            folder = Path(spec[len("parquet:") :] if spec.lower().startswith("parquet:") else spec)
            if folder.exists() and not folder.is_dir():
                raise UsageError(f"--out {spec}: a Parquet dataset is a directory, and this is not")
            _check_writable(folder / "part", "Parquet dataset")
    if settings.startup.log_file:
        _check_writable(Path(settings.startup.log_file), "log file")
    if settings.filters.rejected_log:
        _check_writable(Path(settings.filters.rejected_log), "rejected log")


def pairs(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())


def format_summary(stats: dict[str, Any]) -> str:
    lines = [
        f"pages      {stats['pages']}  ({stats['pages_per_s']} pages/s in {stats['elapsed_s']} s)",
        *(
            [f"embeds     {pairs(stats['embeds'])}  ({stats['embeds_per_s']} embeds/s)"]
            if "embeds" in stats
            else []
        ),
        f"errors     {stats['errors']}"
        + (f"  {kinds}" if (kinds := pairs(stats["errors_by_kind"])) else ""),
        "statuses   " + pairs(stats["statuses"]),
        *(
            [f"changes    {pairs(stats['changes'])}  ({stats['bytes_saved']} body bytes saved)"]
            if stats.get("changes")
            else []
        ),
        "frontier   " + pairs(stats["frontier"]),
        "states     "
        + " ".join(f"{k}={stats[k]}" for k in ("buffered", "downloading", "parsing") if k in stats),
        f"workers    {stats['workers']} x {stats['threads']} slots, "
        f"{stats['worker_restarts']} restarts",
    ]
    by_type: dict[str, dict[str, int]] = {}
    for module in stats["modules"]:
        total = by_type.setdefault(
            module["type"], {"instances": 0, "called": 0, "accepted": 0, "completed": 0}
        )
        total["instances"] += 1
        for key in ("called", "accepted", "completed"):
            total[key] += module[key]
    for name, total in sorted(by_type.items()):
        lines.append(
            f"module     {name} x{total['instances']}: called={total['called']} "
            f"accepted={total['accepted']} completed={total['completed']}"
        )
    if stats.get("tls_verification") is False:
        lines.append("tls        certificates NOT verified (--insecure)")
    lines.append(f"output     {stats['out']}")
    lines += [f"sink       {m['sink']}" for m in stats["modules"] if "sink" in m]
    return "\n".join(lines)


def run_crawl(settings: Settings) -> int:
    from ..master.forkserver import start_forkserver

    start_forkserver(settings.startup.downloader)  # the workers' imports, beside the master's
    from ..master.crawler import Crawler, configure_logging

    try:
        crawler = Crawler(settings)  # checks the settings and imports the plug-ins
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if settings.shared.redis:  # unreachable: one line, exit 1, nothing written
        from ..frontier.redis.client import connect

        connect(settings.shared.redis).close()
    check_paths(settings)
    configure_logging(settings.startup.log_file)
    try:
        result = crawler.run()
    except FrontierError as exc:  # a job directory this version cannot use
        raise UsageError(str(exc)) from None
    except UsageError:  # exit 2: nothing ran
        raise
    except MpcrawlerError:  # said by main, in one line; the hook hears of it first
        _on_finish(settings, EXIT_ERROR, None)
        raise
    code = report_end(result)
    _on_finish(settings, code, result)
    return code


def report_end(result: CrawlResult) -> int:
    """Print the run's summary and how it ended; its exit status."""
    if result.already_finished:
        print(f"job in {result.job_dir} is already finished; nothing to do", flush=True)
    if "modules" in result.stats:
        print(format_summary(result.stats), flush=True)
    else:
        print(f"pages      {result.stats.get('pages')}", flush=True)
    if result.budget is not None:
        print(
            f"stopped: {result.budget} reached; rerun the same command to go on"
            + (f" from {result.job_dir}" if result.job_dir else ""),
            file=sys.stderr,
            flush=True,
        )
        return EXIT_BUDGET
    if result.fetched_nothing is not None:
        print(
            f"mpcrawler: error: {result.fetched_nothing}; rerun the same command to try its "
            "seeds again",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_NOTHING
    if result.interrupted:
        print(
            f"interrupted: rerun the same command to resume from {result.job_dir}"
            if result.job_dir
            else "interrupted",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_INTERRUPTED
    return EXIT_OK


def _on_finish(settings: Settings, code: int, result: CrawlResult | None) -> None:
    """--on-finish: the command, once the run has ended (``result``: None
    if it failed); its failure said on stderr, the exit status unchanged."""
    if not settings.outputs.on_finish:
        return
    from ..output import onfinish

    job_dir = Path(settings.startup.job_dir) if settings.startup.job_dir else None
    if result is None:
        variables = onfinish.environment(code, OUTCOMES[code], job_dir, None, {})
    else:
        stats = {"pages": result.stats.get("pages", 0), "errors": result.stats.get("errors", 0)}
        variables = onfinish.environment(
            code, OUTCOMES[code], result.job_dir, result.out, stats, result.budget
        )
    problem = onfinish.run(settings.outputs.on_finish, variables)
    if problem is not None:
        print(f"mpcrawler: {problem}", file=sys.stderr, flush=True)


def effective_settings(args: argparse.Namespace) -> Settings:
    """The settings a crawl with ``args`` runs with: checked (a UsageError
    if not possible), broad-crawl defaults applied.  No seed is needed."""
    if not args.seeds and not args.seeds_file:
        settings = Settings(**{name: getattr(args, name) for name in OPTIONS})
    else:
        settings = settings_from_args(args)
    try:
        settings.validate()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    settings.apply_scope_defaults()
    return settings


def run_print_config(args: argparse.Namespace) -> int:
    """--print-config: the settings a crawl would run with, as TOML."""
    print(to_toml(effective_settings(args)), end="", flush=True)
    return EXIT_OK
