"""Evaluate any model on udora's tasks (docs/evaluate_any_model.md): tasks as a method
outside udora sees them, prediction fields from scikit-learn-style estimators, and
:func:`evaluate`, which scores them exactly as a built-in run is scored."""

from udora.experiments.open.adapters import bagged_fields, classifier_fields, sklearn_fields
from udora.experiments.open.api import evaluate
from udora.experiments.open.tasks import export_task, load_task, read_task

__all__ = [
    "bagged_fields",
    "classifier_fields",
    "evaluate",
    "export_task",
    "load_task",
    "read_task",
    "sklearn_fields",
]
