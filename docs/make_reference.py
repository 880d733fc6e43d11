"""Write docs/options.md, the reference of every ``crawl`` option, from the
option table (``mpcrawler.settings.OPTIONS``): the flag, its value, its
default, its bounds and its help, by --help section (``cli.parser.GROUPS``).

    python docs/make_reference.py          # rewrite docs/options.md
    python docs/make_reference.py --check  # exit 1 if it is stale

``tests/unit/test_docs.py`` fails when the file is stale.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TARGET = HERE / "options.md"


def _default(value: Any) -> str:
    if value == "this machine's":
        return "the CPU count"
    if value is None or value == [] or value == {}:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"`{value}`"


def _bounds(how: Any) -> str:
    parts = []
    if how.choices:
        parts.append("one of " + ", ".join(f"`{c}`" for c in how.choices))
    if how.minimum is not None:
        parts.append(f"at least {how.minimum:g}")
    if how.above is not None:
        parts.append(f"more than {how.above:g}")
    if how.maximum is not None:
        parts.append(f"at most {how.maximum:g}")
    if how.size:
        parts.append("bytes, K M G suffixes")
    if how.duration:
        parts.append("seconds, s m h d suffixes")
    return "; ".join(parts)


def reference() -> str:
    """The text of docs/options.md."""
    sys.path.insert(0, str(HERE.parent))
    from mpcrawler.cli.parser import GROUPS, metavar_of
    from mpcrawler.settings import OPTION_FIELDS, OPTIONS, flag_of

    defaults = OPTION_FIELDS
    lines = [
        "# Options of `mpcrawler crawl`",
        "",
        "Generated from the option table (`mpcrawler/settings/`) by",
        "`python docs/make_reference.py`; a test fails when it is stale.",
    ]
    for group, title in GROUPS.items():
        title = title[0].upper() + title[1:]
        lines += ["", f"## {title}", "", "| option | default | values | what it does |"]
        lines.append("|---|---|---|---|")
        for name, how in OPTIONS.items():
            if how.group != group:
                continue
            field = defaults[name]
            if field.default is not dataclasses.MISSING:
                value: Any = field.default
            elif field.default_factory in (list, dict):  # type: ignore[comparison-overlap]
                value = None
            else:
                value = "this machine's"  # computed where it runs (the CPU count)
            default = _default(value)
            metavar = metavar_of(name)
            flag = flag_of(name) + (f" {metavar}" if metavar else "")
            shown = "none" if value is None else str(value)
            text = how.help.replace("%(default)s", shown).replace("|", "\\|")
            lines.append(f"| `{flag}` | {default} | {_bounds(how)} | {text} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    text = reference()
    if "--check" in sys.argv[1:]:
        stale = not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text
        if stale:
            print(f"{TARGET} is stale: run python docs/make_reference.py", file=sys.stderr)
        return int(stale)
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
