"""The ground truth: presets, GP tasks and the exact per-point targets.

``OracleTask`` and ``build_task`` load on first use: they need JAX, and reading or
validating a preset must not (a bad argument on the command line answers at once).
"""

from typing import Any

from udora.oracle import regression  # noqa: F401  (registers the regression kind)
from udora.oracle.classification import kind as _classification  # noqa: F401  (its kind)
from udora.oracle.preset import Preset, list_presets, load_preset
from udora.oracle.prior import GPPrior, TaskKnowledge
from udora.oracle.standardise import Standardiser
from udora.oracle.targets import Targets, posterior_targets

__all__ = [
    "GPPrior",
    "OracleTask",
    "Preset",
    "Standardiser",
    "Targets",
    "TaskKnowledge",
    "build_task",
    "list_presets",
    "load_preset",
    "posterior_targets",
]


def __getattr__(name: str) -> Any:
    if name in ("OracleTask", "build_task"):
        from udora.oracle import task

        return getattr(task, name)
    raise AttributeError(f"module 'udora.oracle' has no attribute {name!r}")
