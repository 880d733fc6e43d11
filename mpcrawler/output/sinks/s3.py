"""The object store: ``--upload s3://BUCKET/PREFIX`` (``--s3-endpoint-url``).

Files are uploaded with boto3 once they are complete: each Parquet part as
it is renamed into place, and, once the job has finished and its outputs
are closed, the journal, the other file sinks, the WARC files and their
index, the WACZ and stats.json; then ``manifest.json``, last, listing every
key with its size and SHA-256.  A reader that sees the manifest sees
every file it names.

Each upload is retried (boto3's standard mode, 5 attempts).  What was
uploaded is kept in ``sinks/upload.json`` in the job dir, by key with its
file's size and modification time: a rerun uploads again only a file that
changed or was never uploaded (a key written twice holds the same bytes:
an upload is idempotent).  A failure is a SinkError (exit 1), and the
same command uploads what is missing, even for a job that finished.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from ...errors import SinkError
from ..jobdir import write_atomically
from .base import one_line, read_state

__all__ = ["Uploader"]

MANIFEST = "manifest.json"


class Uploader:
    """Uploads the crawl's complete files under one S3 prefix."""

    def __init__(self, url: str, endpoint_url: str | None, state_dir: Path) -> None:
        self.url = url
        self.bucket, _, prefix = url[len("s3://") :].partition("/")
        self.prefix = prefix.strip("/")
        self.endpoint_url = endpoint_url
        self.state_file = state_dir / "sinks" / "upload.json"
        self.done: dict[str, dict[str, Any]] = read_state(
            self.state_file, "--upload: its record", "upload"
        )
        self._client: Any = None

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def client(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "s3",
                endpoint_url=self.endpoint_url,
                config=Config(retries={"max_attempts": 5, "mode": "standard"}),
            )
        return self._client

    def upload(self, path: Path, name: str) -> None:
        """Upload ``path`` as ``PREFIX/name`` unless it was, unchanged."""
        try:
            stat = path.stat()
            seen = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
            key = self.key(name)
            if {k: self.done.get(key, {}).get(k) for k in seen} == seen:
                return
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            self.client().upload_file(str(path), self.bucket, key)
        except Exception as exc:
            raise self._failure(f"{path}", exc) from exc
        self.done[key] = {**seen, "sha256": digest.hexdigest()}
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.state_file, json.dumps(self.done))

    def finish(self, files: list[tuple[Path, str]], about: dict[str, Any]) -> None:
        """Upload ``files`` (path, name) that exist, then the manifest of
        every key this job uploaded."""
        for path, name in files:
            if path.is_file():
                self.upload(path, name)
        manifest = {
            "uploaded_at": round(time.time(), 3),
            **about,
            "files": [
                {"key": key, "size": kept["size"], "sha256": kept["sha256"]}
                for key, kept in sorted(self.done.items())
            ],
        }
        try:
            self.client().put_object(
                Bucket=self.bucket,
                Key=self.key(MANIFEST),
                Body=json.dumps(manifest, indent=1).encode("utf-8"),
                ContentType="application/json",
            )
        except Exception as exc:
            raise self._failure(MANIFEST, exc) from exc

    def _failure(self, what: str, exc: BaseException) -> SinkError:
        return SinkError(
            f"--upload {self.url}: cannot upload {what}: {one_line(exc)}; the same command "
            "uploads what is missing"
        )
