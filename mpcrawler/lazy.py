"""Names of a package imported at their first use (PEP 562's module
``__getattr__``): a package keeps its names while a process that needs
few of them (a worker's) does not import the modules behind the rest."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["attributes"]


def attributes(namespace: dict[str, Any], where: dict[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` (``namespace``: its ``globals()``): each
    name of ``where`` imported at its first use from the module named there
    (relative to the package), and kept in the package from then on."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
