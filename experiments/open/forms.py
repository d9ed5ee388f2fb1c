"""A predictions file of any accepted form, read, checked and put in one shape
(:class:`Predictions`); the forms are :data:`udora.experiments.open.tasks.FORMS`.

A file is ``.npz`` (arrays by field name), ``.csv`` or ``.parquet`` (one row per pool row;
a (K, N) field is K columns ``<field>_<k>``, quantiles are columns ``q_<level>``). It must
say which pool it predicts: a ``row_id`` field (any order; rows are put in pool order) or a
``task_hash`` equal to the task's. Every problem is one UserError (a ValueError) naming the
file and the field (docs/evaluate_any_model.md, "Bad input").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.open.tasks import FORMS, PublicTask, find_form, pool_order
from udora.methods.prediction import PredictionError, check_batch_covariance
from udora.oracle import reading

STACKED = {
    "member_means": "member_mean",
    "member_variances": "member_variance",
    "latent_draws": "latent_draw",
    "samples": "sample",
}


@dataclass(frozen=True)
class Predictions:
    """One prediction on a task's pool, in pool order. ``form`` is the file's form;
    ``mean`` and ``total`` (N,) always; ``aleatoric``/``epistemic`` (N,) for the forms with
    an AU/EU split, else None; ``member_means`` (K, N) for members and draws;
    ``samples`` (S, N) and ``quantiles`` (L, N) with ``levels`` (L,) for those forms;
    ``joint_epistemic`` (B, tau, tau), optional with the split: the epistemic covariance
    at the task's joint batches (``joint.npz`` of an exported task)."""

    form: str
    mean: np.ndarray
    total: np.ndarray
    aleatoric: np.ndarray | None = None
    epistemic: np.ndarray | None = None
    member_means: np.ndarray | None = None
    samples: np.ndarray | None = None
    quantiles: np.ndarray | None = None
    levels: np.ndarray | None = None
    joint_epistemic: np.ndarray | None = None

    @property
    def split(self) -> bool:
        return self.aleatoric is not None


def _table_fields(frame: pd.DataFrame) -> dict[str, Any]:
    """A csv/parquet table as fields: plain columns, stacked ``<field>_<k>`` columns as
    (K, N), ``q_<level>`` columns as ``quantiles`` (L, N) with ``quantile_levels``."""
    out: dict[str, Any] = {}
    stacked: dict[str, list[tuple[int, str]]] = {}
    quantiles: list[tuple[float, str]] = []
    for column in frame.columns:
        name = str(column)
        match = re.fullmatch(r"(member_mean|member_variance|latent_draw|sample)_(\d+)", name)
        if match:
            stacked.setdefault(match[1], []).append((int(match[2]), name))
        elif re.fullmatch(r"q_[0-9.eE+-]+", name):
            quantiles.append((float(name[2:]), name))
        else:
            out[name] = frame[column].to_numpy()
    for field, short in STACKED.items():
        if short in stacked:
            cols = [c for _, c in sorted(stacked[short])]
            out[field] = frame[cols].to_numpy(dtype=float).T
    if quantiles:
        out["quantiles"] = frame[[c for _, c in quantiles]].to_numpy(dtype=float).T
        out["quantile_levels"] = np.array([q for q, _ in quantiles])
    if "task_hash" in out:
        values = set(map(str, out["task_hash"]))
        out["task_hash"] = values.pop() if len(values) == 1 else sorted(values)
    return out


def read_fields(path: str | Path) -> dict[str, Any]:
    """The fields of a predictions file (``.npz``, ``.csv`` or ``.parquet``)."""
    path = Path(path)
    if path.suffix == ".npz":
        found = reading.arrays(path)
        return {k: (str(v) if v.dtype.kind == "U" else v) for k, v in found.items()}
    if path.suffix in (".csv", ".parquet"):
        options = {"float_precision": "round_trip"} if path.suffix == ".csv" else {}
        frame = reading.table(path, **options)
        numeric = [c for c in frame.columns if c != "task_hash"]
        return _table_fields(reading.numbers(frame, numeric, path))
    raise UserError(f"{path}: expected a .npz, .csv or .parquet predictions file")


def _array(fields, name: str, task: PublicTask, where: str, order) -> np.ndarray:
    """Field ``name`` as float64, checked (shape, finite, variances >= 0), in pool order."""
    value = np.asarray(fields[name])
    if value.dtype.kind not in "biuf":
        raise UserError(f"{where}: field {name!r} holds {value.dtype} values, not numbers")
    value = value.astype(np.float64)
    if name == "quantile_levels":
        return value
    ndim = 2 if name in STACKED or name == "quantiles" else 1
    if value.ndim != ndim or value.shape[-1] != task.n_pool:
        shape = f"(K, {task.n_pool})" if ndim == 2 else f"({task.n_pool},)"
        raise UserError(
            f"{where}: field {name!r} has shape {value.shape}; expected {shape} "
            f"for the {task.n_pool} pool rows"
        )
    if not np.all(np.isfinite(value)):
        bad = int(np.sum(~np.isfinite(value)))
        raise UserError(f"{where}: field {name!r} has {bad} values that are NaN or infinite")
    if ("variance" in name or name in ("aleatoric", "epistemic")) and value.min() < 0:
        raise UserError(f"{where}: field {name!r} has negative variances (min {value.min():g})")
    return value if order is None else value[..., order]


def parse(fields: dict[str, Any], task: PublicTask, where: str = "predictions") -> Any:
    """Check ``fields`` against ``task`` and put them in pool order (module doc): a
    :class:`Predictions`; for a classification task a
    :class:`~udora.experiments.open.classification.ClassPredictions`."""
    if task.kind == "classification":
        from udora.experiments.open import classification

        return classification.parse(fields, task, where)
    form = find_form(fields, where)
    order = pool_order(fields, task, where)
    need = [*FORMS[form], *(["member_means"] if "member_means" in fields else [])]
    a = {name: _array(fields, name, task, where, order) for name in need}
    if form == "split":
        joint = None
        if "joint_epistemic" in fields:
            try:
                joint = check_batch_covariance(where, "joint_epistemic", fields["joint_epistemic"])
            except PredictionError as err:
                raise UserError(str(err)) from None
        return Predictions(
            form,
            a["mean"],
            a["aleatoric"] + a["epistemic"],
            a["aleatoric"],
            a["epistemic"],
            a.get("member_means"),
            joint_epistemic=joint,
        )
    if form in ("members", "draws"):
        draws = a["member_means"] if form == "members" else a["latent_draws"]
        if draws.shape[0] < 2:
            field = "member_means" if form == "members" else "latent_draws"
            raise UserError(
                f"{where}: field {field!r} needs at least 2 rows (members or "
                f"draws); got {draws.shape[0]}"
            )
        mean = draws.mean(axis=0)
        epistemic = np.mean((draws - mean) ** 2, axis=0)
        aleatoric = a["member_variances"].mean(axis=0) if form == "members" else a["aleatoric"]
        return Predictions(form, mean, aleatoric + epistemic, aleatoric, epistemic, draws)
    if form == "gaussian":
        return Predictions(form, a["mean"], a["variance"])
    if form == "samples":
        s = a["samples"]
        if s.shape[0] < 2:
            raise UserError(f"{where}: field 'samples' needs at least 2 draws; got {s.shape[0]}")
        return Predictions(form, s.mean(axis=0), s.var(axis=0, ddof=1), samples=s)
    levels, q = a["quantile_levels"], a["quantiles"]
    if levels.shape != (q.shape[0],) or not np.all((levels > 0) & (levels < 1)):
        raise UserError(
            f"{where}: field 'quantile_levels' must be {q.shape[0]} levels in "
            f"(0, 1); got {levels.tolist()}"
        )
    if np.any(np.diff(levels) <= 0):
        raise UserError(f"{where}: field 'quantile_levels' must increase; got {levels.tolist()}")
    crossing = int(np.any(np.diff(q, axis=0) < 0, axis=0).sum())
    if crossing:
        raise UserError(
            f"{where}: field 'quantiles' decreases between levels at {crossing} pool rows"
        )
    if not levels[0] < 0.5 < levels[-1]:  # 0.5 not inside: the nearest end, as np.interp
        middle = q[0] if levels[0] >= 0.5 else q[-1]
    else:  # linear between the two levels around 0.5, np.interp at every point at once
        k = int(np.searchsorted(levels, 0.5)) - 1
        t = (0.5 - levels[k]) / (levels[k + 1] - levels[k])
        middle = (1 - t) * q[k] + t * q[k + 1]
    spread = ((q[-1] - q[0]) / 2) ** 2  # a rough total for rankings; CRPS uses the quantiles
    return Predictions(form, middle, spread, quantiles=q, levels=levels)
