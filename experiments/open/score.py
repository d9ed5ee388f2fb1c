"""Score predictions made outside udora exactly as a built-in run is scored, and write
them as a run folder marked external (docs/evaluate_any_model.md).

Forms with an AU/EU split (``split``, ``members``, ``draws``) get every metric of a
built-in run (:func:`udora.scoring.score_arrays`). The total-only forms get the metrics
that need no split, and the report says so (``form`` in result.json):

- ``gaussian`` (mean, total variance): every metric of :data:`TOTAL_METRICS`;
- ``samples``: the mean's metrics, the squared-error total ones with the sample variance,
  and the CRPS of the samples (scoringrules' ``crps_ensemble``);
- ``quantiles``: the mean's metrics (the median), rank-based total ones (the spread
  between the outer levels ranks the points) and the CRPS of the quantiles
  (scoringrules' ``crps_quantile``).

Every other metric is NaN.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from udora.errors import UserError
from udora.experiments.open.forms import Predictions, parse, read_fields
from udora.experiments.open.tasks import PublicTask
from udora.experiments.run.records import PREDICTIONS, RESULT, file_sha256
from udora.experiments.run.spec import identity_hash

_MEAN = (
    "spearman_mean_f",
    "pearson_mean_f",
    "mse_mean_f",
    "spearman_mean_post",
    "pearson_mean_post",
    "mse_mean_post",
)
_SQUARED_TOTAL = (
    "spearman_total",
    "pearson_total",
    "mse_total",
    "scale_ratio_total",
    "calib_abs_log_ratio_total",
    "calib_log_ratio_total",
    "aurc_total",
    "nAURC_total",
    "nAURC_total_realised",
)
_GAUSSIAN = (
    "spearman_total_crps",
    "pearson_total_crps",
    "spearman_total_nll",
    "pearson_total_nll",
    "nAURC_total_crps",
    "nAURC_total_nll",
    "nll",
    "crps",
    "coverage_50",
    "coverage_80",
    "coverage_90",
    "coverage_95",
    "miscal_area",
    "interval_score_50",
    "interval_score_90",
    "interval_score_95",
    "util_selective",
    "util_selective_oracle",
    "util_topk",
    "util_topk_oracle",
)
TOTAL_METRICS = {
    "gaussian": (*_MEAN, *_SQUARED_TOTAL, *_GAUSSIAN),
    "samples": (*_MEAN, *_SQUARED_TOTAL, "crps"),
    "quantiles": (*_MEAN, "spearman_total", "nAURC_total", "nAURC_total_realised", "crps"),
}


def _oracle(task: PublicTask, data_dir: str | Path | None):
    """The oracle task behind ``task``, rebuilt; its data must be the exported data."""
    from udora.experiments.run.execute import cached_task
    from udora.oracle.preset import Preset

    oracle = cached_task(Preset.model_validate(task.preset_config), task.seed, data_dir)
    found = (oracle.meta.get("data_source") or {}).get("sha256")
    if task.data_sha256 is not None and found != task.data_sha256:
        raise UserError(
            f"{task.preset}, seed {task.seed}: the task was exported from data "
            f"with sha256 {task.data_sha256[:12]}, but the data found now has "
            f"{str(found)[:12]}; give --data-dir as the export had it"
        )
    return oracle


def score_predictions(
    predictions: Predictions, task: PublicTask, data_dir: str | Path | None = None
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """(metrics, curves) of ``predictions`` on ``task`` (module doc for the total-only
    forms; their curves are empty)."""
    from udora.scoring import curves_arrays, score_arrays

    o = _oracle(task, data_dir)
    p = predictions
    truth = {
        "f": o.f,
        "y": o.y,
        "noise_var": o.noise_var,
        "post_mean": o.post_mean,
        "post_var": o.post_var,
    }
    if p.split:
        arrays = {
            **truth,
            "mean": p.mean,
            "aleatoric": p.aleatoric,
            "epistemic": p.epistemic,
            "member_means": p.member_means,
        }
        return score_arrays(**arrays), curves_arrays(**arrays)
    half = p.total / 2  # any split of the total: the metrics kept below do not depend on it
    every = score_arrays(**truth, mean=p.mean, aleatoric=half, epistemic=half)
    kept = set(TOTAL_METRICS[p.form])
    metrics = {k: (v if k in kept else float("nan")) for k, v in every.items()}
    if p.form in ("samples", "quantiles"):
        import scoringrules as sr

        if p.form == "samples":
            crps = sr.crps_ensemble(o.y, p.samples, m_axis=0)
        else:
            crps = sr.crps_quantile(o.y, p.quantiles.T, p.levels)
        metrics["crps"] = float(np.mean(crps))
    return metrics, {}


def external_identity(task: PublicTask, method: str, sha256: str) -> dict[str, Any]:
    """What an external run's config hash covers: the task, exactly as a built-in run's
    identity holds it (so both give one task hash), and the predictions file's checksum
    under the method's name."""
    from udora.experiments.run.spec import task_part
    from udora.oracle.preset import Preset

    part = task_part(Preset.model_validate(task.preset_config), task.source())
    return {"task": part, "method": {"external": method, "predictions_sha256": sha256}}


def _fields(path: Path, task: PublicTask) -> dict[str, Any]:
    """The file's fields; a built-in run's own ``predictions.npz`` says its pool through
    the ``task_hash`` of the ``result.json`` beside it."""
    from udora.experiments.run.records import read_run

    fields = read_fields(path)
    if not {"row_id", "task_hash"} & set(fields) and path.name == PREDICTIONS:
        found = read_run(path.parent)
        if found.finished and "task_hash" in found.record:
            fields["task_hash"] = found.record["task_hash"]
    return fields


def score_file(
    path: str | Path,
    task: PublicTask,
    method: str,
    out: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Read, check and score the predictions file ``path`` on ``task``; with ``out``,
    write its run folder ``<out>/<preset>/<method>/<hash>/seed-<s>/`` (result.json marked
    ``external``, the predictions in pool order as ``predictions.npz``, both checksummed)
    and return the record. Raises UserError naming the file and field on bad input,
    before anything is written."""
    from udora.experiments.run.execute import _summarise, _versions, write_folder_atomically
    from udora.experiments.run.legacy import SCHEMA

    path = Path(path)
    if not method or not all(c.isalnum() or c in "._-" for c in method):
        raise UserError(f"--method: expected a name of letters, digits and ._-, got {method!r}")
    predictions = parse(_fields(path, task), task, str(path))
    metrics, curves = score_predictions(predictions, task, data_dir)
    sha = file_sha256(path)
    identity = external_identity(task, method, sha)
    digest = identity_hash(identity)
    record = {
        "schema": SCHEMA,
        "preset": task.preset,
        "preset_arg": task.preset,
        "method": method,
        "seed": task.seed,
        "overrides": {},
        "label": "external",
        "config": {},
        "config_hash": digest,
        "task_hash": task.task_hash,
        "identity": identity,
        "preset_config": task.preset_config,
        "versions": _versions(method),
        "status": "ok",
        "error": None,
        "metrics": {k: (float(v) if np.isfinite(v) else None) for k, v in metrics.items()},
        "curves": _summarise(curves),
        "timings": {},
        "config_source": "external",
        "external": {
            "form": predictions.form,
            "file": str(path),
            "sha256": sha,
            "split": predictions.split,
        },
    }
    if out is None:
        return record
    arrays = {
        k: v
        for k in (
            "mean",
            "aleatoric",
            "epistemic",
            "member_means",
            "samples",
            "quantiles",
            "levels",
        )
        if (v := getattr(predictions, k)) is not None
    }
    if not predictions.split:
        arrays["total"] = predictions.total
    final = Path(out) / task.preset / method / digest / f"seed-{task.seed}"

    def fill(tmp: Path) -> None:
        np.savez(tmp / PREDICTIONS, **arrays)
        files = {PREDICTIONS: file_sha256(tmp / PREDICTIONS)}
        (tmp / RESULT).write_text(json.dumps({**record, "files": files}, indent=1))

    write_folder_atomically(final, fill)
    return {**record, "path": str(final)}
