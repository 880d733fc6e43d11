"""User-supplied Analyzer and Pipeline, through the CLI and the Python API."""

from __future__ import annotations

import json
from pathlib import Path

from plugins import CountingAnalyzer, TaggingPipeline
from support import crawl_records, read_records

from mpcrawler import Crawler, Settings
from mpcrawler.testing.site import SiteServer


def test_cli_plugins(site_300: SiteServer, tmp_path: Path) -> None:
    job = tmp_path / "job"
    records = crawl_records(
        site_300.url,
        job,
        "--max-pages",
        "40",
        "--analyzer",
        "plugins:CountingAnalyzer",
        "--pipeline",
        "plugins:TaggingPipeline",
    )
    assert len(records) == 40
    assert all(r["tag"] == "seen-by-tagger" and r["words"] > 100 for r in records)
    stats = json.loads((job / "stats.json").read_text())
    types = {m["type"] for m in stats["modules"]}
    assert {"CountingAnalyzer", "TaggingPipeline"} <= types
    tagger = next(m for m in stats["modules"] if m["type"] == "TaggingPipeline")
    assert tagger["id"].startswith("P") and tagger["completed"] == 40


def test_analyzer_and_pipeline_errors_become_record_errors(
    site_300: SiteServer, tmp_path: Path
) -> None:
    found = crawl_records(
        site_300.url,
        tmp_path / "job",
        "--analyzer",
        "plugins:FailingAnalyzer",
        "--pipeline",
        "plugins:FailingPipeline",
    )
    records = {r["url"]: r for r in found}
    sevens = [r for u, r in records.items() if u.endswith("7")]
    assert sevens and all("dislikes sevens" in r["error"] for r in sevens)
    threes = [r for u, r in records.items() if u.endswith("3")]
    assert threes and all("dislikes threes" in r["error"] for r in threes)
    # pages behind a failing analyzer lose their links, but the crawl goes on
    assert len(records) > 100
    assert all(r["error"] is None for u, r in records.items() if u[-1] not in "37")


def test_python_api(site_300: SiteServer, tmp_path: Path) -> None:
    settings = Settings(
        seeds=[site_300.url],
        workers=2,
        threads=2,
        max_pages=25,
        job_dir=str(tmp_path / "job"),
        quiet=True,
    )
    given = settings.to_dict(secrets=True)
    result = Crawler(settings, analyzer=CountingAnalyzer, pipelines=[TaggingPipeline]).run()
    assert settings.to_dict(secrets=True) == given  # the crawler completes a copy of its own
    assert result.stats["pages"] == 25
    records = read_records(result.out)
    assert len(records) == 25 and all(r["tag"] == "seen-by-tagger" for r in records)
    assert all("words" in r for r in records)
    ids = [m["id"] for m in result.stats["modules"]]
    assert len(ids) == len(set(ids))
    assert any(i.startswith("D") for i in ids) and any(i.startswith("A") for i in ids)
