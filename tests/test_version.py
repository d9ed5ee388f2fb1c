"""The version: ``udora`` is a namespace package (no ``__init__.py``: pyproject.toml maps
its subpackages from separate folders), so ``udora.experiments.__version__`` holds the
installed distribution's version and ``udora --version`` prints it."""

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import udora
import udora.experiments


def test_udora_is_a_namespace_package():
    assert getattr(udora, "__file__", None) is None  # no udora/__init__.py can hold a version
    assert not hasattr(udora, "__version__")


def test_version_is_the_installed_distributions_and_the_cli_prints_it():
    version = importlib.metadata.version("udora")
    assert udora.experiments.__version__ == version
    exe = Path(sys.executable).with_name("udora")
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert proc.stdout == f"udora {udora.experiments.__version__}\n" and not proc.stderr
