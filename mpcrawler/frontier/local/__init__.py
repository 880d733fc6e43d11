"""The embedded frontier: a disk-backed queue (UrlQueueManager) and a seen set
in the job dir, crash-safe through a journal; no server needed.

Its interface to the rest: ``LocalFrontier``; ``damage`` (what of a job dir's
frontier, seen set, counts and schedule disagrees with its records and
``job.json``: :mod:`.integrity`) and ``repair`` (a frontier rebuilt from the
records, the damaged files set aside: :mod:`.repair`).
"""

from .frontier import LocalFrontier
from .integrity import damage
from .repair import Repair, repair

__all__ = ["LocalFrontier", "Repair", "damage", "repair"]
