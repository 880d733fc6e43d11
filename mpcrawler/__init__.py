"""mpcrawler: a multiprocess web crawler on a crash-safe disk-backed frontier."""

__version__ = "0.1.0"

from .analyzer import Analysis, Analyzer, HtmlAnalyzer  # noqa: E402
from .crawler import Crawler, CrawlResult  # noqa: E402
from .downloader import Downloader, DownloadError, HttpDownloader, Response  # noqa: E402
from .frontier import SeenSet, UrlInfo, UrlQueueManager  # noqa: E402
from .pipelines import JsonLinesPipeline, Pipeline  # noqa: E402
from .settings import Settings  # noqa: E402

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
