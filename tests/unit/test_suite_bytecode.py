"""The suite runs on compiled bytecode: ``conftest.pytest_configure``
compiles the tree once, so the some 2,000 Python processes the suite starts
do not each compile mpcrawler again where PYTHONDONTWRITEBYTECODE is set."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import mpcrawler

PACKAGE = Path(mpcrawler.__file__).resolve().parent


def test_every_module_of_the_package_has_its_bytecode_when_the_suite_runs() -> None:
    sources = sorted(PACKAGE.rglob("*.py"))
    assert len(sources) > 100
    missing = [
        str(source.relative_to(PACKAGE))
        for source in sources
        if not Path(importlib.util.cache_from_source(str(source))).exists()
    ]
    assert missing == []
