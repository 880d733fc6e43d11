"""mpcrawler: a multiprocess web crawler on a crash-safe disk-backed frontier.

The names below are imported on first use (PEP 562), so ``import
mpcrawler.frontier`` or ``python -m mpcrawler`` loads only what it needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Analysis": "analyzer",
    "Analyzer": "analyzer",
    "HtmlAnalyzer": "analyzer",
    "CrawlResult": "crawler",
    "Crawler": "crawler",
    "DownloadError": "downloader",
    "Downloader": "downloader",
    "HttpDownloader": "downloader",
    "Response": "downloader",
    "SeenSet": "frontier",
    "UrlInfo": "frontier",
    "UrlQueueManager": "frontier",
    "JsonLinesPipeline": "pipelines",
    "Pipeline": "pipelines",
    "Settings": "settings",
}

__all__ = [
    "Analysis",
    "Analyzer",
    "CrawlResult",
    "Crawler",
    "DownloadError",
    "Downloader",
    "HtmlAnalyzer",
    "HttpDownloader",
    "JsonLinesPipeline",
    "Pipeline",
    "Response",
    "SeenSet",
    "Settings",
    "UrlInfo",
    "UrlQueueManager",
    "__version__",
]

if TYPE_CHECKING:
    from .analyzer import Analysis, Analyzer, HtmlAnalyzer
    from .crawler import Crawler, CrawlResult
    from .downloader import Downloader, DownloadError, HttpDownloader, Response
    from .frontier import SeenSet, UrlInfo, UrlQueueManager
    from .pipelines import JsonLinesPipeline, Pipeline
    from .settings import Settings


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
