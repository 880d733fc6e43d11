"""One run's deliveries: its ``--out`` sinks and its ``--upload``.

The crawler makes a :class:`Deliveries` for the run, hands ``sinks`` to
its pipelines (after the journal), and, once the job has finished and its
outputs are closed, calls ``finish()``: the files the crawl completed go to
the object store, the manifest last.  A job that finished before (``job in
J is already finished``) still ``catch_up()``: a sink new to it, or one
that failed at the end of the last run, gets what it lacks from the
journal, and the upload what it missed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...settings import Settings
from ..pipelines import JsonLinesPipeline
from . import kind_of, make_sink
from .base import Sink

__all__ = ["Deliveries"]


class Deliveries:
    """The sinks and the uploader of one run of a job."""

    def __init__(self, settings: Settings, state_dir: Path, job_id: str) -> None:
        self.settings = settings
        self.sinks: list[Sink] = [
            make_sink(spec, state_dir, job_id, settings.outputs.sink_batch)
            for spec in settings.outputs.out
            if kind_of(spec) != "jsonl"
        ]
        self.uploader = None
        if settings.outputs.upload:
            from .s3 import Uploader

            uploader = self.uploader = Uploader(
                settings.outputs.upload, settings.outputs.s3_endpoint_url, state_dir
            )
            for sink in self.sinks:  # a Parquet part goes up as it is complete
                sink.on_file = lambda path, name: uploader.upload(path, name)

    def catch_up(self, journal: Path) -> None:
        """A finished job's sinks get what they lack of ``journal``."""
        if not self.sinks:
            return
        output = JsonLinesPipeline(journal)
        output.open()
        try:
            for sink in self.sinks:
                sink.bind(output)
                sink.open()
                sink.close()
        finally:
            output.close()

    def finish(self, journal: Path, stats: Path, about: dict[str, Any]) -> None:
        """Upload what the finished job completed, then the manifest."""
        if self.uploader is None:
            return
        self.uploader.finish(self._files(journal, stats), about)

    def _files(self, journal: Path, stats: Path) -> list[tuple[Path, str]]:
        """What goes up, each with its name under the prefix."""
        s = self.settings
        files = [(journal, journal.name)]
        for sink in self.sinks:
            files += sink.files()
        if s.archive.warc_dir and Path(s.archive.warc_dir).is_dir():
            files += [
                (path, f"warc/{path.name}")
                for path in sorted(Path(s.archive.warc_dir).iterdir())
                if path.name.endswith((".warc", ".warc.gz", ".cdxj"))
            ]
        if s.archive.wacz:
            files.append((Path(s.archive.wacz), Path(s.archive.wacz).name))
        files.append((stats, "stats.json"))
        return files
