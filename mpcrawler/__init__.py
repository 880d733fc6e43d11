"""mpcrawler: a multiprocess web crawler on a crash-safe disk-backed frontier.

The names below are imported on first use (PEP 562), so ``import
mpcrawler.frontier`` or ``python -m mpcrawler`` loads only what it needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .__version__ import __version__

_EXPORTS = {
    "Analysis": "worker.analyzer",
    "Analyzer": "worker.analyzer",
    "HtmlAnalyzer": "worker.analyzer",
    "CrawlResult": "master.crawler",
    "Crawler": "master.crawler",
    "DownloadError": "errors",
    "MpcrawlerError": "errors",
    "Downloader": "worker.downloader",
    "HttpDownloader": "worker.http",
    "Response": "worker.downloader",
    "Frontier": "frontier",
    "Link": "messages",
    "LocalFrontier": "frontier",
    "SeenSet": "frontier",
    "UrlInfo": "frontier",
    "UrlQueueManager": "frontier",
    "JsonLinesPipeline": "output.pipelines",
    "Pipeline": "output.pipelines",
    "Settings": "settings",
    "extract": "extractor",
}

__all__ = [
    "Analysis",
    "Analyzer",
    "CrawlResult",
    "Crawler",
    "DownloadError",
    "Downloader",
    "Frontier",
    "HtmlAnalyzer",
    "HttpDownloader",
    "JsonLinesPipeline",
    "Link",
    "LocalFrontier",
    "MpcrawlerError",
    "Pipeline",
    "Response",
    "SeenSet",
    "Settings",
    "UrlInfo",
    "UrlQueueManager",
    "__version__",
    "extract",
]

if TYPE_CHECKING:
    from .errors import DownloadError, MpcrawlerError
    from .extractor import extract
    from .frontier import Frontier, LocalFrontier, SeenSet, UrlInfo, UrlQueueManager
    from .master.crawler import Crawler, CrawlResult
    from .messages import Link
    from .output.pipelines import JsonLinesPipeline, Pipeline
    from .settings import Settings
    from .worker.analyzer import Analysis, Analyzer, HtmlAnalyzer
    from .worker.downloader import Downloader, Response
    from .worker.http import HttpDownloader


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
