"""The ground truth: presets, GP tasks and the exact per-point targets."""

from udora.oracle.preset import Preset, list_presets, load_preset
from udora.oracle.prior import GPPrior, TaskKnowledge
from udora.oracle.standardise import Standardiser
from udora.oracle.targets import Targets, posterior_targets
from udora.oracle.task import OracleTask, build_task

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
