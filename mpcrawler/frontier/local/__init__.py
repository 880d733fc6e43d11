"""The embedded frontier: a disk-backed queue (UrlQueueManager) and a seen set
in the job dir, crash-safe through a journal; no server needed."""

from .frontier import LocalFrontier

__all__ = ["LocalFrontier"]
