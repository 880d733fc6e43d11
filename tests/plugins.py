"""User-supplied modules, as a user would write them, for the plug-in tests."""

from __future__ import annotations

import os
import signal
from typing import Any

from mpcrawler import Analysis, HtmlAnalyzer, HttpDownloader, Pipeline, Response, Settings


class CountingAnalyzer(HtmlAnalyzer):
    """The default analysis plus a word count of the body."""

    def analyze(self, response: Response) -> Analysis:
        analysis = super().analyze(response)
        analysis.item["words"] = len(response.body.split())
        return analysis


class FailingAnalyzer(HtmlAnalyzer):
    """Raises on every page whose path ends in 7."""

    def analyze(self, response: Response) -> Analysis:
        if response.url.endswith("7"):
            raise ValueError("this analyzer dislikes sevens")
        return super().analyze(response)


class TaggingPipeline(Pipeline):
    def process(self, record: dict[str, Any]) -> dict[str, Any] | None:
        with self.track():
            record["tag"] = "seen-by-tagger"
            return record


class FailingPipeline(Pipeline):
    def process(self, record: dict[str, Any]) -> dict[str, Any] | None:
        with self.track():
            if record["url"].endswith("3"):
                raise RuntimeError("pipeline dislikes threes")
            return record


class CrashingAnalyzer(HtmlAnalyzer):
    """Kills its own worker process on /page/13, every time."""

    def analyze(self, response: Response) -> Analysis:
        if response.url.endswith("/page/13"):
            import os
            import signal

            os.kill(os.getpid(), signal.SIGKILL)
        return super().analyze(response)


class HangingAnalyzer(HtmlAnalyzer):
    """Never returns on /page/7."""

    def analyze(self, response: Response) -> Analysis:
        if response.url.endswith("/page/7"):
            import time

            time.sleep(3600)
        return super().analyze(response)


class NoStartDownloader(HttpDownloader):
    """Cannot be created while the file named by $MPCRAWLER_TEST_NO_START exists."""

    def __init__(self, settings: Settings) -> None:
        marker = os.environ.get("MPCRAWLER_TEST_NO_START", "")
        if marker and os.path.exists(marker):
            raise RuntimeError("no proxy configuration")
        super().__init__(settings)


class WarningAnalyzer(HtmlAnalyzer):
    """Raises a warning of its own on every page, as chatty libraries do."""

    def analyze(self, response: Response) -> Analysis:
        import warnings

        warnings.warn("a plug-in's own warning", UserWarning, stacklevel=1)
        return super().analyze(response)


class PriorityAnalyzer(HtmlAnalyzer):
    """Gives each link the priority in its ``p=`` query parameter, as a Link."""

    def analyze(self, response: Response) -> Analysis:
        from urllib.parse import parse_qs, urlsplit

        from mpcrawler.messages import Link

        analysis = super().analyze(response)
        links: list[str | Link] = []
        for href in analysis.links:
            assert isinstance(href, str)
            given = parse_qs(urlsplit(href).query).get("p")
            links.append(Link(href, int(given[0])) if given else href)
        analysis.links = links
        return analysis


class CrashOnceAnalyzer(PriorityAnalyzer):
    """A PriorityAnalyzer that kills its own worker on a URL whose path ends
    in /crash, the first time only (the file named by MPCRAWLER_TEST_CRASHED
    marks that it happened)."""

    def analyze(self, response: Response) -> Analysis:
        marker = os.environ["MPCRAWLER_TEST_CRASHED"]
        if "/crash?" in response.url and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return super().analyze(response)
