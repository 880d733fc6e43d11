"""Write the picture of the code's structure in docs/guide/how-it-works.md:
each folder of ``mpcrawler/`` (a layer or a feature) and which folders its
modules import at run time, as a Mermaid graph, read from the code itself.

    python docs/make_structure.py          # rewrite the picture
    python docs/make_structure.py --check  # exit 1 if it is stale

``tests/unit/test_docs.py`` fails when the picture is stale.  Imports
under ``if TYPE_CHECKING:`` and inside functions (made when needed: a
browser, warcio) are not drawn; the top-level modules of the package
(settings, messages, errors, ...) are one box, ``core``, that every folder
uses.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "mpcrawler"
TARGET = HERE / "guide" / "how-it-works.md"
BEGIN, END = "<!-- structure: python docs/make_structure.py -->", "<!-- structure end -->"


def _box(module: str) -> str:
    """The folder a dotted module name is drawn in."""
    parts = module.split(".")[1:]
    if len(parts) <= 1:
        return "core"
    if parts[0] == "frontier" and len(parts) > 2 and parts[1] in ("local", "redis"):
        return f"frontier/{parts[1]}"
    if parts[0] == "output" and len(parts) > 2 and parts[1] == "sinks":
        return "output/sinks"
    return parts[0]


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules ``name`` imports at its top level."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up) + (f".{node.module}" if node.module else "")
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            while target and target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target in modules and target != name:
                found.add(target)
    return found


def picture() -> str:
    """The Mermaid graph: a box a folder, an arrow where one imports another."""
    modules = _modules()
    edges: set[tuple[str, str]] = set()
    for name, path in modules.items():
        for target in _imports(name, path, modules):
            a, b = _box(name), _box(target)
            if a != b and b != "core":
                edges.add((a, b))
    boxes = sorted({_box(name) for name in modules})
    lines = ["```mermaid", "graph LR"]
    lines += [f'    {box.replace("/", "_")}["{box}"]' for box in boxes]
    lines += [f"    {a.replace('/', '_')} --> {b.replace('/', '_')}" for a, b in sorted(edges)]
    lines.append("```")
    return "\n".join(lines)


def rewritten(text: str) -> str:
    """``text`` (the guide) with its picture made anew."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + picture() + "\n" + text[end:]


def main() -> int:
    text = TARGET.read_text(encoding="utf-8")
    new = rewritten(text)
    if "--check" in sys.argv[1:]:
        if new != text:
            print(f"{TARGET} is stale: run python docs/make_structure.py", file=sys.stderr)
        return int(new != text)
    TARGET.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
