"""Classification predictions made outside udora: their forms read and checked, and scored
exactly as a built-in classification run is (docs/evaluate_any_model.md, "Classification").

The forms (:data:`udora.experiments.open.tasks.CLASSIFICATION_FORMS`), C the task's
classes in the preset's order:

- ``split``: ``prob`` (N, C), ``aleatoric`` and ``epistemic`` (N,) in nats, optionally
  ``aleatoric_brier`` and ``epistemic_brier`` (N,) together and ``member_probs``
  (K, N, C) (a built-in run's ``predictions.npz`` is a split);
- ``members`` (``member_probs`` (K, N, C)) and ``samples`` (``prob_samples`` (S, N, C),
  posterior samples of the class probabilities): combined as a built-in ensemble is
  (:meth:`ClassificationPrediction.from_members`: the mean, AU the expected entropy, EU
  the mutual information, and the Brier-scale parts);
- ``probs``: ``prob`` (N, C) alone, total-only: its total is the entropy ``H(q)``, and
  only the metrics that need no AU/EU split are kept (:func:`_probs_metrics`); every other
  is NaN.

A ``.csv`` or ``.parquet`` file gives ``prob`` as the columns ``prob_0`` .. ``prob_<C-1>``;
the (K, N, C) forms need a ``.npz``. The point axis is the one after K, in pool order or
keyed by ``row_id``; the prediction type's own checks (probabilities in [0, 1], rows
summing to 1, nats >= 0) name the field of a bad value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from udora.errors import UserError
from udora.experiments.open.tasks import (
    CLASSIFICATION_FORMS,
    TOTAL_ONLY,
    PublicTask,
    find_form,
    pool_order,
)

BRIER = ("aleatoric_brier", "epistemic_brier")  # optional in the split form, both or none
SPLIT_OPTIONAL = {*BRIER, "member_probs"}  # a built-in run's predictions.npz has them all
STACKED = ("member_probs", "prob_samples")


@dataclass(frozen=True)
class ClassPredictions:
    """One classification prediction on a task's pool, in pool order: the file's ``form``
    and the checked :class:`~udora.methods.classification.prediction.ClassificationPrediction`
    (for ``probs``: AU ``H(q)``, EU 0, so its total is ``H(q)``)."""

    form: str
    prediction: Any

    @property
    def split(self) -> bool:
        """Whether the form has an AU/EU split (``probs`` has not)."""
        return self.form not in TOTAL_ONLY["classification"]

    def arrays(self) -> dict[str, np.ndarray]:
        """What the run folder keeps (``predictions.npz``): the prediction's fields; for
        ``probs`` only ``prob`` and its total."""
        if not self.split:
            return {"prob": self.prediction.prob, "total": self.prediction.total}
        return self.prediction.to_arrays()


def _table_probabilities(fields: dict[str, Any], task: PublicTask, where: str) -> dict[str, Any]:
    """``prob_<c>`` columns of a table as ``prob`` (N, C), one column per class of
    ``task``."""
    columns = sorted((int(m[1]), k) for k in fields if (m := re.fullmatch(r"prob_(\d+)", str(k))))
    if not columns:
        return fields
    C = len(task.classes)
    if [c for c, _ in columns] != list(range(C)):
        raise UserError(
            f"{where}: the columns prob_<c> must be prob_0 .. prob_{C - 1}, one per class of "
            f"the task ({', '.join(map(str, task.classes))}); got "
            f"{', '.join(k for _, k in columns)}"
        )
    out = {k: v for k, v in fields.items() if not re.fullmatch(r"prob_\d+", str(k))}
    out["prob"] = np.stack([np.asarray(fields[k], dtype=np.float64) for _, k in columns], axis=1)
    return out


def _array(fields: dict[str, Any], name: str, task: PublicTask, where: str, order) -> np.ndarray:
    """Field ``name`` as float64 of its form's shape over the task's N points and C
    classes, in pool order."""
    value = np.asarray(fields[name])
    if value.dtype.kind not in "biuf":
        raise UserError(f"{where}: field {name!r} holds {value.dtype} values, not numbers")
    value = value.astype(np.float64)
    N, C = task.n_pool, len(task.classes)
    shape = {"prob": (N, C), **dict.fromkeys(STACKED, ("K", N, C))}.get(name, (N,))
    fits = value.ndim == len(shape) and all(
        want == "K" or got == want for got, want in zip(value.shape, shape, strict=True)
    )
    if not fits:
        want = "(" + ", ".join(map(str, shape)) + ")"
        raise UserError(
            f"{where}: field {name!r} has shape {value.shape}; expected {want} for the "
            f"{N} pool rows and {C} classes ({', '.join(task.classes)})"
        )
    if order is None:
        return value
    return value[:, order] if name in STACKED else value[order]


def parse(fields: dict[str, Any], task: PublicTask, where: str = "predictions") -> ClassPredictions:
    """Check ``fields`` against the classification ``task`` and put them in pool order
    (module doc); one UserError naming the file and field for anything wrong."""
    from udora.methods.classification.prediction import ClassificationPrediction
    from udora.methods.prediction import PredictionError
    from udora.oracle.classification.targets import entropy

    fields = _table_probabilities(dict(fields), task, where)
    form = find_form(
        fields,
        where,
        CLASSIFICATION_FORMS,
        frozenset(SPLIT_OPTIONAL),
        prefer_split=True,  # a split holds prob, and may hold member_probs
        what="classification prediction",
    )
    order = pool_order(fields, task, where)
    optional = SPLIT_OPTIONAL if form == "split" else set()
    names = [*CLASSIFICATION_FORMS[form], *sorted(k for k in optional if k in fields)]
    a = {name: _array(fields, name, task, where, order) for name in names}
    try:
        if form in ("members", "samples"):
            stacked = a[next(iter(CLASSIFICATION_FORMS[form]))]
            if stacked.shape[0] < 2:
                raise UserError(f"{where}: the {form} form needs K >= 2; got {stacked.shape[0]}")
            keep = form == "members"  # many posterior samples are not stored with the run
            prediction = ClassificationPrediction.from_members(stacked, keep_members=keep)
        elif form == "split":
            prediction = ClassificationPrediction(**a)
        else:
            q = a["prob"]
            prediction = ClassificationPrediction(
                prob=q, aleatoric=entropy(np.clip(q, 0.0, 1.0)), epistemic=np.zeros(len(q))
            )
    except PredictionError as err:  # named by the file's field, not the prediction type's
        text = str(err)
        found = re.match(r"ClassificationPrediction\.(\w+(?:, \w+)*): ", text)
        if found is not None:  # one field, or several ("aleatoric_brier, epistemic_brier")
            named = found.group(1).split(", ")
            if form in ("members", "samples") and named == ["member_probs"]:
                named = [next(iter(CLASSIFICATION_FORMS[form]))]
            head = "field" if len(named) == 1 else "fields"
            text = f"{head} {', '.join(map(repr, named))}: {text[found.end() :]}"
        raise UserError(f"{where}: {text}") from None
    return ClassPredictions(form, prediction)


def _probs_metrics() -> tuple[str, ...]:
    """The classification metrics a ``probs`` prediction gets: those whose needs
    (:mod:`udora.scoring.registry`) a predictive without an AU/EU split supplies."""
    from udora.scoring.registry import metric, scored

    has = TOTAL_ONLY["classification"]["probs"] | {"oracle", "outcomes"}
    return tuple(n for n in scored("classification") if metric(n).needs <= has)


def score(
    predictions: ClassPredictions, oracle: Any
) -> tuple[dict[str, float], dict[str, float], dict[str, np.ndarray]]:
    """(metrics, their Monte Carlo standard errors, curves) of ``predictions`` against the
    classification task ``oracle``, by the kind's own scorer, as a built-in run is scored;
    for ``probs``, the metrics outside :func:`_probs_metrics` are NaN and there are no
    curves."""
    from udora.experiments.tasks.kinds import run_kind

    kind = run_kind("classification")
    p = predictions.prediction
    metrics = kind.score(oracle, p)
    se = kind.standard_errors(oracle, p) if kind.standard_errors is not None else {}
    curves = kind.curves(oracle, p) if kind.curves is not None else {}
    if predictions.split:
        return metrics, se, curves
    kept = set(_probs_metrics())
    nan = float("nan")
    return (
        {k: (v if k in kept else nan) for k, v in metrics.items()},
        {k: (v if k in kept else nan) for k, v in se.items()},
        {},
    )
