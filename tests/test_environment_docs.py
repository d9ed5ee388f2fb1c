"""Every environment variable udora reads is documented in README.md's "Configuration"
table, and the table names no variable the code does not read.

The code's reads are found in the syntax tree: ``os.environ.get(NAME)``,
``os.getenv(NAME)`` and ``os.environ[NAME]`` in a load, with ``NAME`` a string or a
module-level string constant (``ENV = "UDORA_TASK_CACHE"``). Writes (``os.environ[NAME] =``)
are not reads.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("src/udora", "oracle", "scoring", "methods", "experiments")


def _name(node: ast.AST, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def reads(tree: ast.Module) -> set[str]:
    """The environment variables one module reads."""
    constants = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        for t in n.targets
        if isinstance(t, ast.Name) and isinstance(n.value.value, str)
    }
    found = set()
    for node in ast.walk(tree):
        arg = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            get = isinstance(func, ast.Attribute) and func.attr == "get" and _is_environ(func.value)
            getenv = isinstance(func, ast.Attribute) and func.attr == "getenv"
            if get or getenv:
                arg = node.args[0]
        elif (
            isinstance(node, ast.Subscript)
            and _is_environ(node.value)
            and isinstance(node.ctx, ast.Load)
        ):
            arg = node.slice
        if arg is not None:
            name = _name(arg, constants)
            assert name is not None, f"an environment read udora cannot name: {ast.dump(arg)}"
            found.add(name)
    return found


def code_reads() -> set[str]:
    out = set()
    for folder in SOURCES:
        for path in (ROOT / folder).rglob("*.py"):
            out |= reads(ast.parse(path.read_text(), str(path)))
    return out


def documented() -> set[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Configuration") :]
    end = section.find("\n## ", 5)
    section = section if end < 0 else section[:end]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])}


def test_every_variable_read_is_documented_and_no_other():
    code, docs = code_reads(), documented()
    assert code == docs, {"read, not documented": code - docs, "documented, not read": docs - code}
    assert {"UDORA_DATA_DIR", "UDORA_OFFLINE", "UDORA_TASK_CACHE"} <= code  # the walk sees


def test_the_walk_finds_reads_and_ignores_writes():
    tree = ast.parse(
        'import os\nENV = "B"\nos.environ.get("A")\nos.getenv(ENV)\nx = os.environ["C"]\n'
        'os.environ["D"] = "1"\n'
    )
    assert reads(tree) == {"A", "B", "C"}
