"""The import graph of the source folders: no cycle, no upward import (docs/design.md,
"Layout").

Every ``import`` and ``from ... import`` of a ``udora`` name, at module level or inside a
function, is an edge; names are resolved to the source folders as pyproject.toml maps them.
The walk must find at least as many import statements as a plain text search of the
import lines does, so it cannot pass by seeing nothing.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Lower layers first; a module may import its own layer (acyclically) and those below.
LAYERS = [
    ("udora",),  # udora/: the version and the user-error type, below every layer
    ("udora.oracle", "udora.presets", "udora.release"),
    ("udora.scoring",),
    ("udora.methods",),
    ("udora.experiments.tasks",),
    ("udora.experiments", "udora.experiments.run"),
    ("udora.experiments.grid", "udora.experiments.results"),
    (
        "udora.experiments.tuning",
        "udora.experiments.studies",
        "udora.experiments.diagnostics",
        "udora.experiments.meta",
        "udora.experiments.preset_tools",
        "udora.experiments.open",
        "udora.experiments.rankings",
        "udora.experiments.publish",
        "udora.experiments.classification",
        "udora.experiments.acquisition",
    ),
    ("udora.experiments.report",),
    ("udora.experiments.cli",),
]
TEXT_IMPORT = re.compile(r"^\s*(from\s+udora(\.\w+)*\s+import\b|import\s+udora\b)")


def _modules() -> dict[str, Path]:
    """{dotted module name: file} for every .py file under the mapped source folders."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mapped = config["tool"]["setuptools"]["package-dir"]
    found = {}
    for package, folder in mapped.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            name = ".".join((package, *parts))
            found[name.removesuffix(".__init__")] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str:
    """The module a dotted name lives in: itself, or its longest prefix that is a module."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _edges(modules: dict[str, Path]) -> tuple[dict[str, set[str]], int]:
    """({module: modules it imports}, number of import statements naming udora)."""
    edges: dict[str, set[str]] = {m: set() for m in modules}
    statements = 0
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == "udora"]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                if base.split(".")[0] != "udora":
                    continue
                targets = [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            if targets:
                statements += 1
            for target in targets:
                resolved = _resolve(target, modules)
                assert resolved in modules, f"{path}: imports {target}, which is no module"
                if resolved != module:
                    edges[module].add(resolved)
    return edges, statements


def _layer(module: str) -> int:
    best, level = -1, None
    for i, group in enumerate(LAYERS):
        for prefix in group:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), i
    assert level is not None, f"{module} is in no layer of LAYERS"
    return level


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path of nodes, or None (iterative depth-first search)."""
    state: dict[str, int] = {}
    for start in sorted(graph):
        if state.get(start):
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path, state[start] = [start], 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(child) == 1:
                return [*path[path.index(child) :], child]
            elif not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(graph[child]))))
    return None


@pytest.fixture(scope="module")
def graph():
    modules = _modules()
    edges, statements = _edges(modules)
    return modules, edges, statements


def test_the_walk_sees_every_import_line_a_text_search_finds(graph):
    modules, edges, statements = graph
    lines = sum(
        bool(TEXT_IMPORT.match(line))
        for path in modules.values()
        for line in path.read_text().splitlines()
    )
    assert len(modules) > 120 and lines > 300  # the source tree, not an empty folder
    assert statements >= lines
    assert sum(map(len, edges.values())) > 300


def test_no_module_imports_itself_back(graph):
    _, edges, _ = graph
    assert _cycle(edges) is None, f"import cycle: {' -> '.join(_cycle(edges))}"


def test_no_folder_imports_itself_back(graph):
    """Folders of one layer may import each other, but never in a circle."""
    _, edges, _ = graph

    def folder(m: str) -> str:
        return ".".join(m.split(".")[:3])

    folders: dict[str, set[str]] = {}
    for module, targets in edges.items():
        folders.setdefault(folder(module), set()).update(
            folder(t) for t in targets if folder(t) != folder(module)
        )
    assert _cycle(folders) is None, f"folder cycle: {' -> '.join(_cycle(folders))}"


def test_imports_run_downwards_only(graph):
    _, edges, _ = graph
    upward = sorted(
        f"{m} -> {t}" for m, targets in edges.items() for t in targets if _layer(t) > _layer(m)
    )
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_folders_stay_small(graph):
    """No folder of ``experiments/`` over 12 modules and subpackages (docs/design.md;
    ``oracle/`` and ``methods/`` hold one module per kernel part and method, and are left
    as they are). Module length is a guide for splitting by concept, not a test."""
    modules, _, _ = graph
    per_folder: dict[Path, int] = {}
    for path in modules.values():
        if path.name != "__init__.py" and "experiments" in path.relative_to(ROOT).parts[:1]:
            per_folder[path.parent] = per_folder.get(path.parent, 0) + 1
    entries = {
        p: n + sum(1 for c in p.iterdir() if c.is_dir() and (c / "__init__.py").is_file())
        for p, n in per_folder.items()
    }
    big = {str(p.relative_to(ROOT)): n for p, n in entries.items() if n > 12}
    assert not big, f"folders over 12 modules and subpackages: {big}"


def test_every_source_folder_is_a_listed_package():
    """A package folder missing from pyproject.toml's list installs from a checkout
    (editable) but not from a wheel: a fresh ``pip install .`` would lack it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set()
    for package, folder in config["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((package, *parts)))
    assert found == listed, (
        f"not listed: {sorted(found - listed)}; listed, absent: {sorted(listed - found)}"
    )
