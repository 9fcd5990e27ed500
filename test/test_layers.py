"""The package's layers point one way, its modules form no import cycles, and no module grows
past what a reader takes in (800 lines).

Layers, lowest first: ``core`` (with the helpers that import nothing of the package) ←
``pddl``, ``motion``, ``sim`` ← ``planners`` ← ``domains`` ← ``workflow``, ``learning``,
``config``, ``execution`` ← ``runtime`` ← ``eval``, ``service`` ← ``ros``, ``cli``. A module
may import its own layer or a lower one, at module level or inside a function alike (an
import inside a function still ties the layers together), so a cycle cannot hide behind a
deferred import.
Type-only imports (``if TYPE_CHECKING:``) do not count: they never run.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = "camp_planner"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE

LAYERS: dict[str, int] = {
    "core": 0,
    "progress": 0,
    "diagnostics": 0,
    "data": 0,
    "pddl": 1,
    "motion": 1,
    "sim": 1,
    "planners": 2,
    "domains": 3,
    "workflow": 4,
    "learning": 4,
    "config": 4,
    "execution": 4,
    "runtime": 5,
    "eval": 6,
    "service": 6,
    "ros": 7,
    "cli": 7,
    "csi_command": 7,
    "scene_command": 7,
}

MAX_MODULE_LINES = 800


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: Iterable[str]) -> set[str]:
    """The package's modules that ``path`` imports, anywhere in it (``from a import b``
    counts as importing ``a.b`` when that is a module, else ``a``)."""
    known = set(modules)
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == PACKAGE}
    return {m for m in found if m in known}


def _runtime_nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node of ``tree`` outside ``if TYPE_CHECKING:`` blocks (imports for type hints
    only never run, so they tie no layers together)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in SRC.rglob("*.py")}
    return {m: imports_of(p, paths) - {m} for m, p in paths.items()}


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) < 2:
        return 0  # the package's own __init__
    return LAYERS[parts[1]]


def upward(graph: Mapping[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, targets in graph.items() for b in targets if layer(b) > layer(a)}


def cycles(graph: Mapping[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                found.add(frozenset(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_top_level_part_of_the_package_has_a_layer() -> None:
    parts = {p.stem if p.is_file() else p.name for p in SRC.iterdir()}
    parts -= {"__init__", "__pycache__", "py"}
    assert {p for p in parts if not p.startswith(".")} - set(LAYERS) == set()


def test_imports_go_down_the_layers() -> None:
    found = upward(import_graph())
    assert found == set(), "imports that go up a layer"


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert not found, f"import cycles: {[sorted(c) for c in found]}"


def test_the_checks_catch_an_upward_import_and_a_cycle() -> None:
    graph = import_graph()
    graph["camp_planner.core.mdp"] = graph["camp_planner.core.mdp"] | {"camp_planner.ros.cli"}
    assert ("camp_planner.core.mdp", "camp_planner.ros.cli") in upward(graph)
    graph["camp_planner.core.context"] = {"camp_planner.core.relevance"}
    graph["camp_planner.core.relevance"] = {"camp_planner.core.context"}
    pair = frozenset({"camp_planner.core.context", "camp_planner.core.relevance"})
    assert any(pair <= c for c in cycles(graph))


def test_no_module_is_longer_than_a_reader_takes_in() -> None:
    long = {
        str(path.relative_to(SRC)): n
        for path in sorted(SRC.rglob("*.py"))
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these along their seams: {long}"


def test_test_modules_have_unique_names() -> None:
    """pytest imports test modules by their file name (the test folders are not packages):
    two ``test_x.py`` in different folders stop the whole run at collection."""
    names = Counter(p.name for p in Path(__file__).resolve().parent.rglob("test_*.py"))
    assert not [n for n, k in names.items() if k > 1]
