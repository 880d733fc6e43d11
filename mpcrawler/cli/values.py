"""The values of the command line's options: numbers within bounds (made by
one factory), sizes with K, M or G, durations with s, m, h or d.  argparse
says what is wrong with a value in one line."""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

__all__ = [
    "_duration",
    "_integer",
    "_non_negative_float",
    "_non_negative_int",
    "_number",
    "_port",
    "_positive_int",
    "_size",
    "number",
]


def number(kind: type, minimum: float | None = None, maximum: float | None = None, name: str = ""):
    """A converter of an argument to ``kind`` (int or float) within
    ``minimum`` and ``maximum``; argparse says what is wrong in one line
    (``name``: what a value past ``maximum`` is not, as "a port")."""
    noun = "an integer" if kind is int else "a number"

    def convert(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {noun}: {text!r}") from None
        if minimum is not None and not value >= minimum:  # NaN too
            bound = "not be negative" if minimum == 0 else f"be at least {minimum:g}"
            raise argparse.ArgumentTypeError(f"must {bound}: {text!r}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"not {name} ({minimum:g} to {maximum:g}): {text!r}")
        return value

    return convert


_integer = number(int)
_number = number(float)
_positive_int = number(int, minimum=1)
_non_negative_int = number(int, minimum=0)
_non_negative_float = number(float, minimum=0)
_port = number(int, minimum=0, maximum=65535, name="a port")

_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"\s*([-+]?[0-9]+)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)


def _size(text: str) -> int:
    """Bytes, with an optional K, M, G or T (powers of 1024), and B or iB
    after it: ``1G``, ``500M``, ``600KB``, ``5GB``, ``2GiB``, ``4096``."""
    found = _SIZE.fullmatch(text)
    if found is None:
        raise argparse.ArgumentTypeError(f"not a size (4096, 600K, 500MB, 5GB): {text!r}")
    return int(_integer(found.group(1))) * _SIZE_UNITS[found.group(2).upper()]


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(text: str) -> float:
    """Seconds, as a number with an optional unit: ``0``, ``30s``, ``10m``, ``6h``, ``1d``."""
    number, unit = text.strip(), "s"
    if number[-1:].lower() in _DURATION_UNITS:
        number, unit = number[:-1], number[-1].lower()
    try:
        value = float(number)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a duration (0, 30s, 10m, 6h, 1d): {text!r}")
    return value * _DURATION_UNITS[unit]
