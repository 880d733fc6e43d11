"""The manual's generated reference follows the option table: a new or
changed option without ``python docs/make_reference.py`` fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def script(name: str) -> Any:
    """The module of ``docs/NAME.py``, loaded from its file."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_option_reference_is_up_to_date() -> None:
    module = script("make_reference")
    written = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    assert written == module.reference(), "docs/options.md is stale: python docs/make_reference.py"


def test_every_option_is_in_the_reference() -> None:
    from mpcrawler.settings import OPTIONS, flag_of

    written = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    for name in OPTIONS:
        assert f"| `{flag_of(name)}" in written, name


def test_the_structure_picture_is_up_to_date() -> None:
    """how-it-works.md's picture of which folder imports which is the code's."""
    module = script("make_structure")
    written = module.TARGET.read_text(encoding="utf-8")
    assert written == module.rewritten(written), "stale: python docs/make_structure.py"
    assert "master --> frontier" in written and "watch --> master" not in written
