"""User-supplied modules, as a user would write them, for the plug-in tests."""

from __future__ import annotations

import os
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
