"""mpcrawler: a multiprocess web crawler on a crash-safe disk-backed frontier."""

__version__ = "0.1.0"

from .analyzer import Analysis, Analyzer, HtmlAnalyzer
from .crawler import Crawler, CrawlResult
from .downloader import Downloader, DownloadError, HttpDownloader, Response
from .frontier import SeenSet, UrlInfo, UrlQueueManager
from .pipelines import JsonLinesPipeline, Pipeline
from .settings import Settings

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
