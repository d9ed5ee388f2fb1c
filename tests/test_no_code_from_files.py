"""No reader executes code: every YAML read is safe, every array read refuses pickles, and
nothing unpickles, evaluates or imports by a name read from a file (issue: trust
boundaries). The source of every mapped package is walked, with a stated allow-list;
the walk is checked on snippets that must be caught. A ``--set`` value that is not YAML
is one user error."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def unsafe(tree: ast.AST) -> list[str]:
    """The calls of one module that could run code from what they read."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        keywords = {k.arg: k.value for k in node.keywords}
        if name == "yaml.load" and _safe_loader(keywords.get("Loader")):
            continue
        if name in ("yaml.load", "yaml.unsafe_load", "yaml.full_load", "yaml.load_all") or name in (
            "pickle.load",
            "pickle.loads",
            "pd.read_pickle",
            "eval",
            "exec",
        ):
            found.append(name)
        elif name in ("np.load", "numpy.load"):
            flag = keywords.get("allow_pickle")
            if isinstance(flag, ast.Constant) and flag.value is True:
                found.append("np.load(allow_pickle=True)")
        elif name == "__import__" or name.endswith("import_module"):
            arg = node.args[0] if node.args else None
            if not (isinstance(arg, ast.Constant) or _built_in_table(arg)):
                found.append(f"{name}(<name from data>)")
    return found


def _safe_loader(loader: ast.AST | None) -> bool:
    """A ``Loader=`` that can only be one of PyYAML's safe loaders (``yaml.SafeLoader``,
    libyaml's ``yaml.CSafeLoader``, or a choice between them)."""
    if loader is None:
        return False
    names = {n.attr for n in ast.walk(loader) if isinstance(n, ast.Attribute)}
    loaders = names - {"__with_libyaml__"}
    return bool(loaders) and loaders <= {"SafeLoader", "CSafeLoader"}


def _built_in_table(arg: ast.AST | None) -> bool:
    """An import by a name taken from udora's own tables (``BUILTIN_METHODS``, the
    capability folders it lists itself, a plugin's entry point that pip installed)."""
    return arg is not None and any(
        isinstance(n, ast.Name) and n.id in ALLOWED_IMPORT_NAMES for n in ast.walk(arg)
    )


# Names whose values come from udora's own code, installed metadata or the command line,
# never from a results, release or task folder: the built-in method table, a section
# module found by pkgutil, a plugin entry point's module, udora's own package names
# (provenance), and `score --estimator module:Class`, code the user asks to run.
ALLOWED_IMPORT_NAMES = {
    "module",
    "name",
    "info",
    "_LAZY",
    "target",
    "ep",
    "mod",
    "package",
    "module_name",
}


def _modules() -> dict[str, Path]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = {}
    for folder in config["tool"]["setuptools"]["package-dir"].values():
        for path in (ROOT / folder).rglob("*.py"):
            found[str(path.relative_to(ROOT))] = path
    return found


def test_no_source_reads_a_file_in_a_way_that_runs_code():
    modules = _modules()
    assert len(modules) > 150
    problems = {
        name: calls
        for name, path in modules.items()
        if (calls := unsafe(ast.parse(path.read_text(), name)))
    }
    assert problems == {}, problems


@pytest.mark.parametrize(
    "snippet",
    [
        "import yaml\nyaml.load(text)",
        "import yaml\nyaml.load(text, Loader=yaml.Loader)",
        "import yaml\nyaml.load(text, Loader=yaml.CSafeLoader if fast else yaml.UnsafeLoader)",
        "import pickle\npickle.load(fh)",
        "import pandas as pd\npd.read_pickle(path)",
        "import numpy as np\nnp.load(path, allow_pickle=True)",
        "eval(text)",
        "import importlib\nimportlib.import_module(record['module'])",
    ],
)
def test_the_walk_catches_each_unsafe_read(snippet):
    assert unsafe(ast.parse(snippet))


@pytest.mark.parametrize(
    "snippet",
    [
        "import yaml\nyaml.safe_load(text)",
        "import yaml\nyaml.load(text, Loader=yaml.CSafeLoader)",
        "import yaml\n"
        "yaml.load(text, Loader=yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)",
        "import numpy as np\nnp.load(path)",
        "import numpy as np\nnp.load(path, allow_pickle=False)",
        "import importlib\nimportlib.import_module('udora.methods.blr')",
    ],
)
def test_the_walk_passes_safe_reads(snippet):
    assert unsafe(ast.parse(snippet)) == []


def test_a_set_value_that_is_not_yaml_is_one_user_error():
    cli = "from udora.experiments.cli.main import main; main()"
    args = ["run", "--preset", "concrete", "--method", "blr", "--set", "width=[1,"]
    proc = subprocess.run([sys.executable, "-c", cli, *args], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--set width=[1,: the value is not a YAML scalar or list" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
