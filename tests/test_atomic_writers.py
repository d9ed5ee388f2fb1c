"""Every file udora publishes goes through oracle/atomic.py (docs/design.md, "The life of a
run", step 7): no module of the source folders writes a file in place.

An in-place write that a crash or Ctrl-C interrupts leaves a truncated file that a reader
then trusts; the helpers write a temporary sibling and rename it. The scan walks the
syntax tree of every module under the folders pyproject.toml maps (oracle/atomic.py, the
helper itself, aside) and reports each call that writes to a path:

- ``x.write_text(...)``, ``x.write_bytes(...)`` (pathlib; the helpers' own
  ``atomic.write_text(path, text)`` is not one);
- a pandas writer given a path (``frame.to_csv(path)``, ``to_parquet``, ...; without one
  ``to_csv`` returns the text), ``array.tofile(path)``;
- ``savefig(path)``; ``np.save``/``savez``/``savez_compressed``/``savetxt`` with a path;
- ``open(path, mode)`` (builtin, ``io``, ``gzip``, ..., or ``Path.open(mode)``) with a mode
  that writes (``w``, ``a``, ``x``, ``+``) or one the scan cannot read; ``os.open`` with a
  flag that writes; ``tempfile.NamedTemporaryFile(delete=False)`` and ``mkstemp`` (files
  that outlive the writer); ``shutil.copy``/``copy2``/``copyfile``/``copytree``.

A writer called on the file handle of a ``write_with`` callback (``write_with(path,
lambda fh: fig.savefig(fh, ...))``, or a function passed by name) is the helper at work.
Deliberate exceptions are listed, each with its reason, in :data:`ALLOWED`; an entry that
no longer matches a call fails too, so the list stays true.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPER = ROOT / "oracle" / "atomic.py"

PATH_WRITES = {"write_text", "write_bytes"}
# pandas writers (and ndarray.tofile): they write when given a path, else return a value
VALUE_WRITERS = {
    "to_csv": ("path_or_buf",),
    "to_parquet": ("path",),
    "to_feather": ("path",),
    "to_pickle": ("path",),
    "to_excel": ("excel_writer",),
    "to_hdf": ("path_or_buf",),
    "to_json": ("path_or_buf",),
    "to_html": ("buf",),
    "to_latex": ("buf",),
    "to_markdown": ("buf",),
    "to_string": ("buf",),
    "to_xml": ("path_or_buffer",),
    "to_stata": ("path",),
    "to_orc": ("path",),
    "tofile": ("fid", "file"),
}
NUMPY_WRITERS = {"save", "savez", "savez_compressed", "savetxt"}
OPEN_MODULES = {"io", "gzip", "bz2", "lzma", "codecs", "tarfile"}
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
COPIES = {"copy", "copy2", "copyfile", "copytree"}
HELPERS = {
    "write_with",
    "write_bytes",
    "write_text",
    "write_json",
    "write_npz",
    "write_parquet",
    "write_figure",
    "publish_folder",
}

# (file from the repository root, enclosing function, kind of write): why it stays in place
ALLOWED = {
    # The lock file must stay one inode: flock locks the open file, and a rename would
    # give a second process a fresh, unlocked file. It is rewritten in place under the lock
    # and a reader treats a damaged one as "another process" (experiments/grid/lock.py).
    ("experiments/grid/lock.py", "results_lock", "os.open"): "the grid's flock file",
    # A pool worker's in-flight marker: scratch in the pool's private .inflight-* folder,
    # read by the pool parent alone (which takes an empty file for pid 0) and deleted when
    # the run ends. The parent lists that folder and parses every name as a ticket, so a
    # temporary sibling would be misread (experiments/grid/local.py).
    ("experiments/grid/workers.py", "tracked", "write_text"): "a worker's scratch marker",
    # A bug's traceback: a new file of a unique name, told to the user only after it is
    # closed, so nobody can read it half-written (experiments/cli/errors.py).
    ("experiments/cli/errors.py", "write_traceback", "NamedTemporaryFile"): "a bug report",
}


@dataclass(frozen=True)
class Write:
    """One call that writes a file in place."""

    path: str  # from the repository root
    function: str  # the enclosing function's qualified name, "" at module level
    kind: str
    line: int

    def key(self) -> tuple[str, str, str]:
        return self.path, self.function.rsplit(".", 1)[-1], self.kind


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name or a chain of Attributes on one, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _target(call: ast.Call, position: int, keywords: tuple[str, ...]) -> ast.AST | None:
    """The argument at ``position`` or given by one of ``keywords``, or None."""
    for kw in call.keywords:
        if kw.arg in keywords:
            return kw.value
    return call.args[position] if len(call.args) > position else None


def _mode_writes(mode: ast.AST | None) -> bool:
    """Whether an ``open`` mode may write: a literal with w, a, x or +, or any non-literal."""
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True


class _Scan(ast.NodeVisitor):
    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.found: list[Write] = []
        self.helper_calls = 0
        self.scope: list[str] = []
        self.handles: list[set[str]] = [set()]
        self.modules: dict[str, str] = {}  # local name -> module it is bound to
        self.callbacks: set[int] = set()  # ids of lambdas given to write_with
        self.callback_names: set[str] = set()  # functions given to write_with by name
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    bound = a.name if a.asname else a.name.split(".")[0]
                    self.modules[a.asname or bound] = bound
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full in ("udora.oracle.atomic",) or a.name in OPEN_MODULES:
                        self.modules[a.asname or a.name] = full
            elif isinstance(node, ast.Call) and self._name(node.func) == "write_with":
                write = _target(node, 1, ("write",))
                if isinstance(write, ast.Lambda):
                    self.callbacks.add(id(write))
                elif isinstance(write, ast.Name):
                    self.callback_names.add(write.id)

    @staticmethod
    def _name(func: ast.AST) -> str | None:
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
        return None

    def _root_module(self, node: ast.AST) -> str | None:
        """The module a dotted receiver names (``np`` -> numpy, ``plotly.io``), or None when
        it does not start from an imported module."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        root, _, rest = dotted.partition(".")
        if root not in self.modules:
            return None
        return ".".join(filter(None, (self.modules[root], rest)))

    def _report(self, node: ast.Call, kind: str) -> None:
        self.found.append(Write(self.path, ".".join(self.scope), kind, node.lineno))

    def _is_handle(self, node: ast.AST | None) -> bool:
        return isinstance(node, ast.Name) and any(node.id in h for h in self.handles)

    def _function(self, node, name: str, is_callback: bool) -> None:
        self.scope.append(name)
        args = [*node.args.posonlyargs, *node.args.args]
        self.handles.append({args[0].arg} if is_callback and args else set())
        self.generic_visit(node)
        self.handles.pop()
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node, node.name, node.name in self.callback_names)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node, "<lambda>", id(node) in self.callbacks)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node)
        self.generic_visit(node)

    def _check(self, node: ast.Call) -> None:
        func = node.func
        name = self._name(func)
        receiver = func.value if isinstance(func, ast.Attribute) else None
        module = self._root_module(receiver) if receiver is not None else None
        if name in HELPERS and (receiver is None or module == "udora.oracle.atomic"):
            self.helper_calls += 1
            return
        if name in PATH_WRITES and receiver is not None:
            self._report(node, name)
        elif name in VALUE_WRITERS and receiver is not None and module is None:
            target = _target(node, 0, VALUE_WRITERS[name])
            if target is not None and not self._is_handle(target):
                self._report(node, name)
        elif name == "savefig":
            target = _target(node, 0, ("fname",))
            if target is not None and not self._is_handle(target):
                self._report(node, name)
        elif name in NUMPY_WRITERS and module == "numpy":
            if not self._is_handle(_target(node, 0, ("file", "fname"))):
                self._report(node, f"np.{name}")
        elif name == "open" and module == "os":
            flags = _target(node, 1, ("flags",))
            names = {n.attr for n in ast.walk(flags) if isinstance(n, ast.Attribute)}
            names |= {n.id for n in ast.walk(flags) if isinstance(n, ast.Name)}
            if names & WRITE_FLAGS:
                self._report(node, "os.open")
        elif name == "open":
            function_form = receiver is None or module in OPEN_MODULES
            mode = _target(node, 1 if function_form else 0, ("mode",))
            if _mode_writes(mode):
                self._report(node, "open")
        elif name == "NamedTemporaryFile":
            delete = _target(node, 99, ("delete",))
            if isinstance(delete, ast.Constant) and delete.value is False:
                self._report(node, name)
        elif name == "mkstemp":
            self._report(node, name)
        elif name in COPIES and module == "shutil":
            self._report(node, f"shutil.{name}")


def scan(source: str, path: str = "<snippet>") -> _Scan:
    """The in-place writes of ``source`` (and its count of helper calls)."""
    tree = ast.parse(source, path)
    found = _Scan(path, tree)
    found.visit(tree)
    return found


def _modules() -> list[Path]:
    """Every .py file under the source folders pyproject.toml maps, but the helper."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    folders = sorted(set(config["tool"]["setuptools"]["package-dir"].values()))
    files = {p for folder in folders for p in (ROOT / folder).rglob("*.py")}
    return sorted(files - {HELPER})


@pytest.fixture(scope="module")
def scans() -> list[_Scan]:
    return [scan(p.read_text(), p.relative_to(ROOT).as_posix()) for p in _modules()]


def test_no_module_writes_a_file_in_place(scans):
    writes = [w for s in scans for w in s.found]
    unexpected = [w for w in writes if w.key() not in ALLOWED]
    assert not unexpected, "write through udora.oracle.atomic (or list it, with why):\n" + (
        "\n".join(f"{w.path}:{w.line} {w.function or '<module>'}: {w.kind}" for w in unexpected)
    )


def test_every_exception_is_still_used(scans):
    used = {w.key() for s in scans for w in s.found}
    assert not set(ALLOWED) - used, "stale entries of ALLOWED"


def test_the_scan_sees_the_source_and_its_helper_calls(scans):
    assert len(scans) > 150  # every module of the mapped folders
    assert any(s.path.startswith("experiments/report/") for s in scans)
    assert sum(s.helper_calls for s in scans) >= 50  # 57 calls of the helpers when written


FORBIDDEN = """\
import gzip, os, shutil, tempfile
import numpy as np
from pathlib import Path
def f(path, frame, fig, text, arr, handle):
    path.write_text(text)
    (path / "a").write_bytes(b"")
    frame.to_csv(path, index=False)
    frame.to_parquet(path)
    frame.to_csv(path_or_buf=path)
    pd.DataFrame().to_json(path)
    arr.tofile(path)
    fig.savefig(path, dpi=130)
    plt.savefig(fname=path)
    np.save(path, arr)
    np.savez(path, x=arr)
    np.savez_compressed(path, x=arr)
    np.savetxt(path, arr)
    open(path, "w")
    open(path, "ab")
    open(path, mode="r+")
    open(path, some_mode)
    path.open("w")
    path.open(mode="x")
    gzip.open(path, "wt")
    os.open(path, os.O_WRONLY | os.O_CREAT)
    tempfile.NamedTemporaryFile("w", delete=False)
    tempfile.mkstemp()
    shutil.copyfile(path, handle)
    write_with(path, lambda fh: fig.savefig(path))
"""
FORBIDDEN_KINDS = [
    "write_text",
    "write_bytes",
    "to_csv",
    "to_parquet",
    "to_csv",
    "to_json",
    "tofile",
    "savefig",
    "savefig",
    "np.save",
    "np.savez",
    "np.savez_compressed",
    "np.savetxt",
    *["open"] * 6,
    "open",
    "os.open",
    "NamedTemporaryFile",
    "mkstemp",
    "shutil.copyfile",
    "savefig",
]

ALLOWED_SOURCE = """\
import io, json, os
import numpy as np
import plotly
from udora.oracle import atomic
from udora.oracle.atomic import write_text, write_with
def f(path, frame, fig, arr):
    write_text(path, frame.to_csv(index=False))
    atomic.write_text(path, "x")
    atomic.write_bytes(path, b"x")
    write_with(path, lambda fh: fig.savefig(fh, format="pdf"))
    write_with(path, lambda fh: np.savez(fh, x=arr))
    write_with(path, write=lambda out: frame.to_parquet(out, index=False))
    def fill(fh):
        fig.savefig(fh, format="png")
    write_with(path, fill)
    text = frame.to_string() + frame.to_markdown() + fig.to_json()
    data = json.loads(plotly.io.to_json(fig))
    open(path).read(); open(path, "rb"); path.open(); path.open("r")
    os.open(path, os.O_RDONLY)
    np.load(path); io.BytesIO()
"""


def test_the_scan_finds_each_kind_of_in_place_write():
    found = scan(FORBIDDEN).found
    assert [w.kind for w in found] == FORBIDDEN_KINDS
    assert [w.line for w in found] == list(range(5, 5 + len(FORBIDDEN_KINDS)))
    assert {w.function for w in found} == {"f", "f.<lambda>"}


def test_the_scan_passes_the_helpers_and_reads():
    found = scan(ALLOWED_SOURCE)
    assert found.found == []
    assert found.helper_calls == 7
