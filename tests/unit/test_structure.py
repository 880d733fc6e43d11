"""The code's shape, read from its files (AST), as issue 60 measures it.

- no import circle among modules (imports at a module's top level, those
  under ``if TYPE_CHECKING:`` included; those inside functions are made
  when needed and are not counted);
- a layer (``master``, ``worker``, ``frontier``, ``output``, ``cli``, ...)
  imports of a feature folder (``archive``, ``content``, ``control``,
  ``render``, ``revisits``, ``robots``) only the modules its ``INTERFACE``
  names;
- every module and class says what it owns (a docstring);
- no function over 80 lines and at most 3 over 60; no class over 400
  lines but those named in ``LARGE``, each no larger than it is now;
- a crawl without --redis imports nothing of Redis (run, not read).
"""

from __future__ import annotations

import ast
import functools
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mpcrawler

PACKAGE = Path(mpcrawler.__file__).resolve().parent
FEATURES = ("archive", "content", "control", "render", "revisits", "robots")
# classes allowed over 400 lines, and the most each may have (none now)
LARGE: dict[str, int] = {}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


@functools.cache
def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _top_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """The module's statements, into ``if``/``try`` blocks, not into functions."""
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        yield node
        if isinstance(node, ast.If | ast.Try):
            todo[:0] = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                todo[:0] = handler.body


def imports_of(module: str) -> set[str]:
    """The package's modules that ``module`` imports at its top level."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in _top_level(_tree(module)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" for alias in node.names]
            found.update(names)
            if not all(name in MODULES for name in names):  # not only submodules
                found.add(target)
    return {name for name in found if name in MODULES and name != module}


def circles(graph: dict[str, set[str]]) -> list[str]:
    """Each import circle of ``graph`` (module -> the modules it imports)."""
    found = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                found.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return found


def _feature_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FEATURES else None


def reaches(graph: dict[str, set[str]], interfaces: dict[str, tuple[str, ...]]) -> list[str]:
    """Each import, from outside a feature, of a module its interface does not name."""
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            feature = _feature_of(target)
            if feature is None or _feature_of(module) == feature or target.count(".") < 2:
                continue
            if target.split(".")[2] not in interfaces[feature]:
                found.append(f"{module} imports {target}")
    return found


def _interfaces() -> dict[str, tuple[str, ...]]:
    return {f: importlib.import_module(f"mpcrawler.{f}").INTERFACE for f in FEATURES}


def test_no_module_imports_itself_through_others() -> None:
    assert circles({module: imports_of(module) for module in MODULES}) == []


def test_a_circle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == ["a -> b -> c -> a"]


def test_the_layers_import_only_a_features_interface() -> None:
    graph = {module: imports_of(module) for module in MODULES}
    assert reaches(graph, _interfaces()) == []


def test_a_reach_into_a_feature_is_found() -> None:
    """The browser is the render feature's own: a worker module importing it reaches in."""
    graph = {
        "mpcrawler.worker.process": {"mpcrawler.render.browser", "mpcrawler.render.renderer"},
        "mpcrawler.render.renderer": {"mpcrawler.render.browser"},
    }
    found = reaches(graph, _interfaces())
    assert found == ["mpcrawler.worker.process imports mpcrawler.render.browser"]


def test_every_feature_declares_modules_it_has() -> None:
    for feature, interface in _interfaces().items():
        assert interface and all(f"mpcrawler.{feature}.{name}" in MODULES for name in interface)


def _defs(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node


def _length(node: ast.AST) -> int:
    return int(node.end_lineno or 0) - int(getattr(node, "lineno", 0)) + 1


def test_every_module_and_class_says_what_it_owns() -> None:
    silent = []
    for module, _path in MODULES.items():
        tree = _tree(module)
        if ast.get_docstring(tree) is None:
            silent.append(module)
        silent += [
            f"{module}.{node.name}"
            for node in _defs(tree)
            if isinstance(node, ast.ClassDef) and ast.get_docstring(node) is None
        ]
    assert silent == []


def test_no_room_is_too_big() -> None:
    long_functions, big_classes = [], []
    for module, _path in MODULES.items():
        for node in _defs(_tree(module)):
            if isinstance(node, ast.ClassDef):
                if _length(node) > LARGE.get(node.name, 400):
                    big_classes.append(f"{module}.{node.name}: {_length(node)} lines")
            elif _length(node) > 60:
                long_functions.append((_length(node), f"{module}.{node.name}"))
    assert big_classes == []
    assert all(length <= 80 for length, _ in long_functions), long_functions
    assert len(long_functions) <= 3, long_functions


WORKER_SIDE = ("mpcrawler.worker", "mpcrawler.render", "mpcrawler.archive.recorder")


def settings_read(module: str) -> set[str]:
    """The attributes ``module`` reads of an object named ``settings``
    (``settings.x``, ``self.settings.x``, ``worker.settings.x``)."""
    found = set()
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Attribute):
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
            if name == "settings":
                found.add(node.attr)
    return found


def test_a_worker_reads_only_its_config() -> None:
    """The worker's side reads of its settings only what ``WorkerConfig``
    holds (or derives): the master sends it nothing else."""
    from mpcrawler.settings.derived import Derived
    from mpcrawler.settings.worker import WORKER_FIELDS, WorkerConfig

    allowed = {*WORKER_FIELDS, *vars(Derived), *vars(WorkerConfig)}
    beyond = {
        f"{module}: settings.{name}"
        for module in MODULES
        if module.startswith(WORKER_SIDE)
        for name in settings_read(module) - allowed
    }
    assert beyond == set()
    assert "max_pages" not in allowed and "redis" not in allowed  # the rule can fail


def flat_reads(module: str) -> set[str]:
    """The options ``module`` reads by name of an object named ``settings``
    or ``s`` (``settings.delay``) rather than through their group
    (``settings.politeness.delay``)."""
    from mpcrawler.settings import OPTIONS

    found = set()
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Attribute) and node.attr in OPTIONS:
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
            if name in ("settings", "s"):
                found.add(node.attr)
    return found


def _reads_only_worker_config(module: str) -> bool:
    """Whether ``module`` imports WorkerConfig and not Settings: its
    settings are a worker's, flat (the URL rules, built on both sides)."""
    names = {
        alias.name
        for node in ast.walk(_tree(module))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    return "WorkerConfig" in names and "Settings" not in names


def test_the_master_reads_each_setting_through_its_group() -> None:
    """Outside the worker's side (which reads its flat WorkerConfig) and the
    settings package, a part reads a setting as ``settings.GROUP.NAME``: a
    reader sees which group it belongs to, and a group never changes under
    its reader (a setting changed is a new group, ``Settings.set``)."""
    flat = {
        f"{module}: settings.{name}"
        for module in MODULES
        if not module.startswith((*WORKER_SIDE, "mpcrawler.settings"))
        and not _reads_only_worker_config(module)
        for name in flat_reads(module)
    }
    assert flat == set()
    assert flat_reads("mpcrawler.worker.process") >= {"dedup"}  # the rule can fail


def test_a_group_never_changes_and_a_change_is_a_new_group() -> None:
    import dataclasses

    from mpcrawler.settings import GROUP_OF, OPTIONS, Settings

    settings = Settings(delay=2.0)
    group = settings.politeness
    with pytest.raises(dataclasses.FrozenInstanceError):
        group.delay = 3.0  # type: ignore[misc]
    settings.set("delay", 3.0)
    assert (group.delay, settings.politeness.delay, settings.delay) == (2.0, 3.0, 3.0)
    assert settings.politeness is not group
    assert set(GROUP_OF) == set(OPTIONS)  # every option has its group
    assert Settings.from_dict(settings.to_dict(secrets=True)) == settings


def test_a_worker_is_sent_no_secret_it_does_not_use() -> None:
    from mpcrawler.settings import Settings
    from mpcrawler.settings.worker import WorkerConfig

    settings = Settings(
        seeds=["http://a.test/"],
        redis="redis://:hidden-1@127.0.0.1:6379/0",
        crawl="c",
        out=["postgresql://u:hidden-2@127.0.0.1/db?table=pages"],
        s3_endpoint_url="http://u:hidden-3@127.0.0.1:9000",
        headers=["X-Api-Key: sent-by-the-worker"],
    )
    sent = repr(WorkerConfig.of(settings).to_dict())
    assert "hidden" not in sent
    assert "sent-by-the-worker" in sent  # what it sends, it has
    assert WorkerConfig.from_dict(settings.to_dict(secrets=True)) == WorkerConfig.of(settings)


def imported(first: str, shown: str) -> list[str]:
    """The modules a fresh interpreter holds, of those ``shown`` (an
    expression of ``m``) names, once it ran ``first`` and imported what the
    workers' forkserver preloads."""
    code = (
        f"import importlib, sys; {first};"
        "from mpcrawler.master.forkserver import preload;"
        "[importlib.import_module(m) for m in preload('http')];"
        f"print('\\n'.join(sorted(m for m in sys.modules if {shown})))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return found.split()


def test_a_crawl_without_redis_imports_nothing_of_it() -> None:
    """A crawl's master and its workers' forkserver import no module of the
    Redis frontier, nor redis-py, unless --redis opens one (the master's
    imports took 20 ms more of each crawl's start when they did)."""
    assert imported("import mpcrawler.cli.crawl, mpcrawler.master.crawler", "'redis' in m") == []


def test_the_workers_forkserver_imports_neither_the_settings_table_nor_the_local_frontier() -> None:
    """A worker reads its WorkerConfig and a request's UrlInfo: the packages
    that hold them import ``Settings`` and the local frontier at their first
    use only (``mpcrawler.lazy``), and the forkserver, whose imports every
    crawl's first worker waits for, imports neither (60 ms of its 0.25 s)."""
    heavy = "('mpcrawler.settings.crawl_settings', 'mpcrawler.frontier.local')"
    assert imported("pass", f"m.startswith({heavy})") == []


def test_a_lazy_name_is_imported_at_its_first_use_and_kept() -> None:
    import mpcrawler.frontier as frontier
    import mpcrawler.settings as settings
    from mpcrawler.frontier.local.frontier import LocalFrontier
    from mpcrawler.settings.crawl_settings import Settings

    assert frontier.LocalFrontier is LocalFrontier and "LocalFrontier" in vars(frontier)
    assert settings.Settings is Settings and "Settings" in vars(settings)
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = frontier.Nothing  # type: ignore[attr-defined]
