"""One call to score any model's predictions on udora's tasks, in Python
(docs/evaluate_any_model.md): :func:`evaluate` takes predictions (a :class:`Predictions`,
a dict of fields or a predictions file) with their task, or an estimator with the presets
and seeds to fit it on, and returns one table row per (preset, seed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.open.adapters import sklearn_fields
from udora.experiments.open.classification import ClassPredictions
from udora.experiments.open.forms import Predictions, parse
from udora.experiments.open.score import score_file, score_predictions
from udora.experiments.open.tasks import PublicTask, load_task, read_task

__all__ = ["evaluate", "load_task"]
PARSED = (Predictions, ClassPredictions)  # what parse() gives, by task kind
ID_COLUMNS = ("preset", "seed", "method", "form", "task_hash")


def _row(task: PublicTask, method: str, form: str, metrics: Mapping[str, Any]) -> dict:
    """One table row: the task's identity, the method, the form and every metric (a
    missing one, None in a record, as NaN)."""
    values = {k: (float("nan") if v is None else float(v)) for k, v in metrics.items()}
    ident = (task.preset, task.seed, method, form, task.task_hash)
    return {**dict(zip(ID_COLUMNS, ident, strict=True)), **values}


def _as_task(task: PublicTask | str | Path | None, what: str) -> PublicTask:
    if task is None:
        raise UserError(
            f"evaluate: {what} needs task= (a PublicTask of load_task, or a "
            f"task folder of `udora export`)"
        )
    return task if isinstance(task, PublicTask) else read_task(task)


def _is_estimator(what: Any) -> bool:
    predicts = ("predict", "pred_dist", "predict_proba")
    return hasattr(what, "fit") and any(hasattr(what, name) for name in predicts)


def _scored(predictions: Any, task: PublicTask, method: str, data_dir: str | Path | None) -> dict:
    metrics, _ = score_predictions(predictions, task, data_dir)
    return _row(task, method, predictions.form, metrics)


def evaluate(
    what: Any,
    task: PublicTask | str | Path | None = None,
    *,
    presets: str | Iterable[str | Path] | None = None,
    seeds: int | Iterable[int] = (0,),
    data_dir: str | Path | None = None,
    method: str = "estimator",
) -> pd.DataFrame:
    """Score ``what`` exactly as a built-in run is scored.

    ``what`` is one of:

    - a :class:`Predictions` or a dict of prediction fields (arrays (N,) or (K, N) in pool
      order, with ``task_hash`` or ``row_id``), on ``task``;
    - a path to a predictions file (``.npz``, ``.csv``, ``.parquet``), on ``task``;
    - an estimator (``fit``/``predict(X, return_std=True)``, or NGBoost's ``pred_dist``):
      a clone is fitted with :func:`sklearn_fields` on ``task``, or on each of ``presets``
      (names or YAML paths) at each of ``seeds``.

    ``task`` is a :class:`PublicTask` or a folder of ``udora export``. Returns a DataFrame,
    one row per (preset, seed): columns ``preset, seed, method, form, task_hash`` and every
    metric (NaN where undefined, or where a total-only form has no value: score.py).
    Bad input is a UserError (a ValueError) naming the field."""
    if isinstance(what, type):
        raise UserError(
            f"evaluate: got the class {what.__name__}; pass an instance, {what.__name__}()"
        )
    if _is_estimator(what) and not isinstance(what, (*PARSED, Mapping, str, Path)):
        return _evaluate_estimator(what, task, presets, seeds, data_dir, method)
    if presets is not None:
        raise UserError(
            "evaluate: presets= is for an estimator; predictions are scored on their one task="
        )
    if isinstance(what, PARSED):
        return pd.DataFrame([_scored(what, _as_task(task, "Predictions"), method, data_dir)])
    if isinstance(what, Mapping):
        found = _as_task(task, "a dict of fields")
        return pd.DataFrame([_scored(parse(dict(what), found), found, method, data_dir)])
    if isinstance(what, (str, Path)):
        found = _as_task(task, "a predictions file")
        record = score_file(what, found, method, data_dir=data_dir)
        return pd.DataFrame([_row(found, method, record["external"]["form"], record["metrics"])])
    raise UserError(
        f"evaluate: expected Predictions, a dict of fields, a predictions file "
        f"or an estimator; got {type(what).__name__}"
    )


def _evaluate_estimator(estimator, task, presets, seeds, data_dir, method) -> pd.DataFrame:
    """Fit a clone of ``estimator`` on each task and score it (:func:`evaluate`)."""
    from sklearn.base import clone

    if (task is None) == (presets is None):
        raise UserError("evaluate: give an estimator either task= or presets= (with seeds=)")
    if task is not None:
        tasks: Iterable[PublicTask] = [_as_task(task, "an estimator")]
    else:
        names = [presets] if isinstance(presets, (str, Path)) else list(presets)
        seed_list = [int(seeds)] if isinstance(seeds, (int, np.integer)) else list(seeds)
        tasks = (load_task(p, s, data_dir) for p in names for s in seed_list)
    rows = []
    for found in tasks:
        fields = sklearn_fields(clone(estimator, safe=False), found)
        rows.append(
            _scored(parse(fields, found, type(estimator).__name__), found, method, data_dir)
        )
    return pd.DataFrame(rows)
