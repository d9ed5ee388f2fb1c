"""The classification kind's run part (docs/design.md, "Task kinds"): its scorer, curves,
Monte Carlo standard errors and the arrays a results folder keeps of a task.

Imported by :mod:`udora.experiments.tasks.kinds`, so the kind is runnable wherever runs
are; the prediction type and the metrics register on import of their own modules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from udora.experiments.tasks.kinds import RunKind, register_run_kind
from udora.methods.classification import prediction as _prediction  # noqa: F401 (registers)
from udora.oracle.classification.preset import CLASSIFICATION
from udora.scoring import classification as scoring

# What a results folder keeps of a task: no batch means (their standard errors are kept
# beside each target, and every run records its metrics' standard errors).
KEPT = ("X", "train_idx", "y_train", "f", "y", "prob", "prob_se", "entropy", "entropy_se")
KEPT += ("square", "square_se")


def _task_arrays(task: Any) -> dict[str, np.ndarray]:
    arrays = task.to_arrays()
    return {name: arrays[name] for name in KEPT}


KIND = register_run_kind(
    RunKind(CLASSIFICATION, scoring.score, scoring.curves, _task_arrays, scoring.standard_errors)
)
