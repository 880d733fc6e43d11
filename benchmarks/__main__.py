"""``python -m benchmarks [NAME [ARGS...]]``: the one runner of the benchmarks.

Without NAME, lists each benchmark with the question it answers (the first
line of its docstring, read without importing it).  With NAME (``web`` for
``bench_web.py``, or the file's name), runs that script's ``main`` with
ARGS as its command line, exactly as ``python benchmarks/bench_NAME.py
ARGS`` does.  An unknown NAME is one line and exit 2.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PREFIXES = ("bench_", "soak_")


def scripts() -> dict[str, Path]:
    """Each benchmark by its short name (``web``; ``soak_nodes`` keeps its own)."""
    found = {}
    for path in sorted(HERE.glob("*.py")):
        if path.stem.startswith(PREFIXES):
            found[path.stem.removeprefix("bench_")] = path
    return found


def question(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split())


def main(argv: list[str]) -> int:
    known = scripts()
    if not argv or argv[0] in ("-h", "--help", "list"):
        width = max(map(len, known))
        for name, path in known.items():
            print(f"{name:<{width}}  {question(path)}")
        return 0
    name = argv[0].removesuffix(".py").removeprefix("bench_")
    path = known.get(name) or known.get(argv[0].removesuffix(".py"))
    if path is None:
        print(
            f"benchmarks: no benchmark {argv[0]!r} (python -m benchmarks lists them)",
            file=sys.stderr,
        )
        return 2
    sys.path.insert(0, str(HERE.parent))
    module = importlib.import_module(f"benchmarks.{path.stem}")
    sys.argv = [str(path), *argv[1:]]
    result = module.main()
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
