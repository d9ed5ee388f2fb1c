"""MkDocs hook: the ``udora`` package as one folder, for mkdocstrings to read statically.

pyproject.toml maps ``udora.oracle`` to ``oracle/``, ``udora.methods`` to ``methods/``, ...
(docs/design.md, "Layout and layers"); griffe, which reads the sources without importing
them, finds ``udora`` in ``src/udora/`` but no subpackage there. This hook links the mapped
folders into one tree, ``udora/`` with ``udora/oracle`` and the rest beside its own
modules, in a temporary folder, and points the Python handler at it.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import tomllib
from pathlib import Path

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]


def package_tree(folder: Path) -> Path:
    """Link ``udora`` as a wheel would lay it out under ``folder``; return ``folder``."""
    mapped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    top = folder / "udora"
    top.mkdir()
    for path in (ROOT / mapped["package-dir"]["udora"]).glob("*.py"):
        (top / path.name).symlink_to(path)
    for package, source in mapped["package-dir"].items():
        if package != "udora":
            (top / package.removeprefix("udora.")).symlink_to(ROOT / source)
    return folder


@event_priority(100)  # before mkdocstrings reads its handlers' configuration
def on_config(config):
    folder = Path(tempfile.mkdtemp(prefix="udora-api-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    handler = config["plugins"]["mkdocstrings"].config["handlers"].setdefault("python", {})
    handler["paths"] = [str(package_tree(folder))]
    return config
