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
from udora.experiments.open.tasks import TOTAL_ONLY, PublicTask
from udora.experiments.run.records import PREDICTIONS, file_sha256
from udora.experiments.run.spec import identity_hash
from udora.methods.prediction import Prediction, PredictionError, attach_joint
from udora.names import check_name, inside
from udora.scoring.registry import metric, scored

# Scored from the form itself rather than from a Gaussian of its mean and variance.
_OWN = {"gaussian": (), "samples": ("crps",), "quantiles": ("crps",)}


def _total_metrics(form: str) -> tuple[str, ...]:
    """The metrics of :func:`udora.scoring.score` a total-only form gets: those whose
    needs (:mod:`udora.scoring.registry`) the form supplies, and its own."""
    has = TOTAL_ONLY["regression"][form] | {"oracle", "outcomes"}
    kept = tuple(n for n in scored() if metric(n).needs <= has)
    return (*kept, *(n for n in _OWN[form] if n not in kept))


TOTAL_METRICS = {form: _total_metrics(form) for form in TOTAL_ONLY["regression"]}


def _oracle(task: PublicTask, data_dir: str | Path | None):
    """The oracle task behind ``task``, rebuilt; its data must be the exported data."""
    from udora.experiments.run.execute import cached_task
    from udora.oracle.preset import parse_preset

    preset = parse_preset(task.preset_config, f"task {task.task_hash}: preset_config")
    oracle = cached_task(preset, task.seed, data_dir)
    found = (oracle.meta.get("data_source") or {}).get("sha256")
    if task.data_sha256 is not None and found != task.data_sha256:
        raise UserError(
            f"{task.preset}, seed {task.seed}: the task was exported from data "
            f"with sha256 {task.data_sha256[:12]}, but the data found now has "
            f"{str(found)[:12]}; give --data-dir as the export had it"
        )
    return oracle


def score_predictions(
    predictions: Any, task: PublicTask, data_dir: str | Path | None = None
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """(metrics, curves) of ``predictions`` on ``task`` (module doc for the total-only
    forms; their curves are empty). Classification predictions are scored by
    :func:`udora.experiments.open.classification.score` (Monte Carlo errors:
    :func:`score_with_errors`)."""
    metrics, _, curves = score_with_errors(predictions, task, data_dir)
    return metrics, curves


def score_with_errors(
    predictions: Any, task: PublicTask, data_dir: str | Path | None = None
) -> tuple[dict[str, float], dict[str, float], dict[str, np.ndarray]]:
    """(metrics, Monte Carlo standard errors, curves): the errors of a task whose targets
    are estimates (classification), else empty."""
    return _score_on(predictions, task, _oracle(task, data_dir))


def _score_on(
    predictions: Any, task: PublicTask, o: Any
) -> tuple[dict[str, float], dict[str, float], dict[str, np.ndarray]]:
    if task.kind == "classification":
        from udora.experiments.open import classification

        return classification.score(predictions, o)
    if getattr(predictions, "joint_epistemic", None) is not None:
        _same_batches(task, o.joint)
    metrics, curves = _score_regression(predictions, o)
    return metrics, {}, curves


def _same_batches(task: PublicTask, batches: Any) -> None:
    """A covariance over the exported batches is scored only on the same batches."""
    if task.joint_idx is None or not (
        np.array_equal(task.joint_idx, batches.idx)
        and np.array_equal(task.joint_design, batches.design)
    ):
        raise UserError(
            f"{task.preset}, seed {task.seed}: field 'joint_epistemic' needs the task's joint "
            "batches, and the exported joint.npz is missing or holds other batches than this "
            "udora builds (another design version?); export the task again"
        )


def _score_regression(
    predictions: Predictions, o: Any
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    from udora.scoring import curves_arrays, score_arrays

    p = predictions
    truth = {
        "f": o.f,
        "y": o.y,
        "noise_var": o.noise_var,
        "post_mean": o.post_mean,
        "post_var": o.post_var,
    }
    if p.split:
        batches = o.joint
        if p.joint_epistemic is not None:  # its shape and diagonal against the batches
            try:
                attach_joint(
                    Prediction(p.mean, p.aleatoric, p.epistemic), p.joint_epistemic, batches.idx
                )
            except PredictionError as err:
                raise UserError(f"predictions, field 'joint_epistemic': {err}") from None
        arrays = {
            **truth,
            **batches.to_arrays(),
            "mean": p.mean,
            "aleatoric": p.aleatoric,
            "epistemic": p.epistemic,
            "member_means": p.member_means,
            "joint_epistemic": p.joint_epistemic,
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
    from udora.oracle.preset import parse_preset

    part = task_part(parse_preset(task.preset_config, "the task's preset"), task.source())
    return {"task": part, "method": {"external": method, "predictions_sha256": sha256}}


def _fields(path: Path, task: PublicTask) -> dict[str, Any]:
    """The file's fields; a built-in run's own ``predictions.npz`` says its pool through
    the ``task_hash`` of the ``result.json`` beside it."""
    from udora.experiments.run.records import read_run

    fields = read_fields(path)
    if not {"row_id", "task_hash"} & set(fields) and path.name == PREDICTIONS:
        found = read_run(path.parent)
        if found.finished and found.record.task_hash is not None:
            fields["task_hash"] = found.record.task_hash
    return fields


def score_file(
    path: str | Path,
    task: PublicTask,
    method: str,
    out: str | Path | None = None,
    data_dir: str | Path | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """Read, check and score the predictions file ``path`` on ``task``; with ``out``,
    write its run folder ``<out>/<preset>/<method>/<hash>/seed-<s>/`` (result.json marked
    ``external``, with the code and compute that scored it; the predictions in pool order
    as ``predictions.npz``, both checksummed) and return the record as JSON values (with
    ``path``). ``source``: what the record's ``external.file`` names instead of ``path``
    (a file made in a scratch folder, such as ``udora score --estimator``'s). Raises
    UserError naming the file and field on bad input, before anything is written."""
    from udora.experiments.run import provenance
    from udora.experiments.run.execute import _summarise
    from udora.experiments.run.record import SCHEMA, RunRecord, write_run

    path = Path(path)
    check_name(method, "--method")
    predictions = parse(_fields(path, task), task, str(path))
    oracle = _oracle(task, data_dir)
    metrics, errors, curves = _score_on(predictions, task, oracle)
    sha = file_sha256(path)
    identity = external_identity(task, method, sha)
    digest = identity_hash(identity)
    record = RunRecord(
        schema=SCHEMA,
        preset=task.preset,
        preset_arg=task.preset,
        method=method,
        seed=task.seed,
        overrides={},
        label="external",
        config={},
        config_hash=digest,
        task_hash=task.task_hash,
        identity=identity,
        preset_config=task.preset_config,
        versions=provenance.versions(),  # the method ran outside udora: not known
        code=provenance.code_identity(),
        compute=provenance.compute(),
        status="ok",
        error=None,
        kind=task.kind,
        metrics=_finite(metrics),
        metrics_se=_finite(errors) if errors else None,
        curves=_summarise(curves),
        timings={},
        config_source="external",
        external={
            "form": predictions.form,
            "file": source if source is not None else str(path),
            "sha256": sha,
            "split": predictions.split,
        },
    )
    if out is None:
        return _as_json(record)
    arrays = _arrays(predictions)
    final = Path(out) / task.preset / method / digest / f"seed-{task.seed}"
    inside(out, final)  # a link planted in the results folder leads nowhere
    # as a built-in run: the task's arrays once per results folder, their checksum recorded
    from udora.experiments.tasks import arrays as oracle_arrays
    from udora.experiments.tasks.kinds import run_kind

    oracle_arrays.store(out, task.task_hash, oracle, run_kind(task.kind).task_arrays(oracle))
    stored = oracle_arrays.checksum(out, task.task_hash)
    written = write_run(final, record.model_copy(update={"oracle_sha256": stored}), arrays)
    return {**_as_json(written), "path": str(final)}


def _finite(values: dict[str, float]) -> dict[str, float | None]:
    return {k: (float(v) if np.isfinite(v) else None) for k, v in values.items()}


def _arrays(predictions: Any) -> dict[str, np.ndarray]:
    """What the run folder's ``predictions.npz`` keeps of ``predictions``."""
    if hasattr(predictions, "arrays"):  # classification: the prediction type's fields
        return predictions.arrays()
    names = (
        *("mean", "aleatoric", "epistemic", "member_means", "joint_epistemic"),
        *("samples", "quantiles", "levels"),
    )
    arrays = {k: v for k in names if (v := getattr(predictions, k)) is not None}
    if not predictions.split:
        arrays["total"] = predictions.total
    return arrays


def _as_json(record: Any) -> dict[str, Any]:
    return json.loads(record.to_json())
