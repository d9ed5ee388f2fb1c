"""Installed plugins without pip: a distribution's metadata and modules in one folder.

:func:`write_distribution` writes ``<name>-<version>.dist-info/`` (``METADATA``,
``entry_points.txt`` with a ``[udora.methods]`` section) and the plugin modules into a
folder; with that folder on ``sys.path`` (or ``PYTHONPATH`` for a subprocess)
``importlib.metadata`` finds the distribution exactly as it finds one pip installed, and
the shared virtual environment is never touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DIST_NAME, DIST_VERSION = "udora-fake-plugins", "0.1"
CLI = "from udora.experiments.cli.main import main; main()"

# One usable plugin and several broken ones, each broken in one way.
PLUGINS_MODULE = '''"""Plugins for udora's tests: Mean works, each other one is broken."""

import numpy as np
from pydantic import Field

from udora.methods.base import MethodConfig, Prediction, UQMethod, check_x, check_xy


class MeanConfig(MethodConfig):
    """A variance floor."""

    floor: float = Field(default=1e-3, gt=0.0)


class Mean(UQMethod):
    """The training mean everywhere, the training variance as AU (a usable plugin)."""

    family = "other"
    Config = MeanConfig

    def fit(self, X, y, *, seed, knowledge=None):
        X, y = check_xy(X, y)
        self.mean_, self.var_, self.d_ = float(y.mean()), float(y.var()), X.shape[1]
        self.fitted_ = True
        return self

    def predict(self, X):
        self._check_fitted()
        m = check_x(X, self.d_).shape[0]
        eu = np.full(m, self.config.floor)
        return Prediction(np.full(m, self.mean_), np.full(m, self.var_), eu)


class NoDefaultConfig(MethodConfig):
    """Its field k has no default."""

    k: int


class NoDefault(Mean):
    """A plugin whose config field k has no default."""

    Config = NoDefaultConfig


class BadFamily(Mean):
    """A plugin with a family that is not one of FAMILIES."""

    family = "forests"


class BadLibraries(Mean):
    """A plugin that names its library as a string, not a tuple of names."""

    libraries = "flax"


class BadQuickConfig(MeanConfig):
    """A quick budget that names a field the config does not have."""

    QUICK = {"n_epochs": 3}


class BadQuick(Mean):
    """A plugin whose QUICK names an unknown field."""

    Config = BadQuickConfig
'''

RAISING_MODULE = '"""A plugin whose import fails."""\n\nimport udora_no_such_dependency  # noqa\n'

ENTRY_POINTS = {
    "fake_mean": "udora_fake_plugins:Mean",
    "fake_nomodule": "udora_no_such_module:X",
    "fake_raises": "udora_fake_raising:Thing",
    "fake_noclass": "udora_fake_plugins:NoSuchClass",
    "fake_nodefault": "udora_fake_plugins:NoDefault",
    "fake_family": "udora_fake_plugins:BadFamily",
    "fake_libraries": "udora_fake_plugins:BadLibraries",
    "fake_quick": "udora_fake_plugins:BadQuick",
}
MODULES = {"udora_fake_plugins": PLUGINS_MODULE, "udora_fake_raising": RAISING_MODULE}
BROKEN = sorted(set(ENTRY_POINTS) - {"fake_mean"})


def write_distribution(
    root: Path, entry_points: dict[str, str] = ENTRY_POINTS, modules: dict[str, str] = MODULES
) -> Path:
    """Write the distribution's metadata and ``modules`` (name -> source) into ``root``."""
    info = root / f"{DIST_NAME.replace('-', '_')}-{DIST_VERSION}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {DIST_NAME}\nVersion: {DIST_VERSION}\n"
    )
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[udora.methods]\n{lines}")
    for name, source in modules.items():
        (root / f"{name}.py").write_text(source)
    return root


def udora(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``udora ARGS`` in a subprocess that sees the distribution in ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-c", CLI, *args], capture_output=True, text=True, timeout=120, env=env
    )


def table_rows(stdout: str) -> dict[str, str]:
    """The rows of a ``udora methods`` table by method name."""
    return {line.split("│")[1].strip(): line for line in stdout.splitlines() if "│" in line}
