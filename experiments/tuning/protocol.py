"""Hyperparameter tuning without the oracle: the validation split, the objectives, one trial.

**Validation protocol.** The training sample of a (preset, seed) task (``task.X_train``,
``task.y_train``, n points) is split once into a fit part and a validation part by
:func:`split_training`: a random permutation of the n positions from the named stream
``"tuning_split"`` of the run seed (:func:`udora.oracle.task.stream`), the first
``round(val_fraction * n)`` positions (at least 1, at most n - 2) are the validation part.
The default fraction, :data:`VAL_FRACTION` = 0.2, is ours: the paper tunes on "validation
NLL" with W&B Bayesian sweeps (§5.1, Appendix D) but gives no split fraction. A
:func:`trial` fits the method on the fit part only and scores its predictive on the
validation part with :func:`gaussian_nll` (default) or :func:`rmse`; the validation
targets are the observed noisy training targets, so no oracle array (``f``, ``y`` of the
pool, ``post_mean``, ``post_var``, ``noise_var``) is ever read.

The sweep configurations that propose trial configs are in
:mod:`udora.experiments.tuning.sweep_file`.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from udora.errors import UserError
from udora.scoring.registry import names

if TYPE_CHECKING:
    from udora.oracle.task import OracleTask

VAL_FRACTION = 0.2
SPLIT_STREAM = "tuning_split"
OBJECTIVES = {"nll": "val_nll", "rmse": "val_rmse", "brier": "val_brier"}  # -> metric name
# The objectives of each task kind; ``nll`` is the negative log-likelihood of the held-out
# training targets under the predictive (Gaussian for regression, the class
# probabilities' log loss for classification).
KIND_OBJECTIVES = {"regression": ("nll", "rmse"), "classification": ("nll", "brier")}


class SweepConfigError(UserError):
    """A sweep configuration (or its file) that cannot be used; the message names why."""


# --------------------------------------------------------------------------- objectives


def gaussian_nll(mean: np.ndarray, total_var: np.ndarray, y: np.ndarray) -> float:
    """Mean per-point negative log density of ``y`` under ``N(mean, total_var)``; shapes (v,).

    A non-positive variance gives ``inf`` (the predictive is no density there).
    """
    mean, var, y = (np.asarray(a, dtype=np.float64) for a in (mean, total_var, y))
    _same_shape(mean, var, y)
    if np.any(var <= 0):
        return math.inf
    return float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (y - mean) ** 2 / var))


def rmse(mean: np.ndarray, y: np.ndarray) -> float:
    """Root mean squared error of ``mean`` against ``y``; shapes (v,)."""
    mean, y = (np.asarray(a, dtype=np.float64) for a in (mean, y))
    _same_shape(mean, y)
    return float(np.sqrt(np.mean((y - mean) ** 2)))


def _same_shape(*arrays: np.ndarray) -> None:
    shape = arrays[0].shape
    if len(shape) != 1 or shape[0] < 1 or any(a.shape != shape for a in arrays):
        raise ValueError(f"expected equal shapes (v,), got {[a.shape for a in arrays]}")


def validation_scores(prediction: Any, y: np.ndarray) -> dict[str, float]:
    """Every validation score of ``prediction`` on held-out training targets ``y`` (v,),
    by metric name: ``val_nll`` and ``val_rmse`` of a regression predictive; ``val_nll``
    (log loss), ``val_brier``, ``val_ece`` and ``val_accuracy`` of class probabilities
    (:func:`udora.scoring.classification.observed_scores`)."""
    prob = getattr(prediction, "prob", None)
    if prob is None:
        targets = np.asarray(y, dtype=np.float64)
        return {
            "val_nll": gaussian_nll(prediction.mean, prediction.total, targets),
            "val_rmse": rmse(prediction.mean, targets),
        }
    from udora.scoring.classification import observed_scores

    return {f"val_{k}": v for k, v in observed_scores(prob, np.asarray(y, np.int64)).items()}


def check_objective(objective: str, kind: str | None = None) -> str:
    """``objective`` when it is one of :data:`OBJECTIVES` (of ``kind``'s, when given)."""
    valid = OBJECTIVES if kind is None else KIND_OBJECTIVES.get(kind, ("nll",))
    if objective not in valid:
        what = "" if kind is None else f" for {kind} tasks"
        raise SweepConfigError(f"unknown objective {objective!r}{what}; valid: {', '.join(valid)}")
    return objective


def check_val_fraction(val_fraction: Any) -> float:
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, int | float):
        raise SweepConfigError(f"val_fraction: expected a number, got {val_fraction!r}")
    if not 0 < val_fraction < 1:
        raise SweepConfigError(f"val_fraction: must be in (0, 1), got {val_fraction}")
    return float(val_fraction)


# --------------------------------------------------------------------------- split and trial


def split_training(n: int, seed: int, val_fraction: float = VAL_FRACTION):
    """(fit positions, validation positions) into the n-point training sample; sorted, disjoint.

    Seeded by the stream ``"tuning_split"`` of ``seed``; ``round(val_fraction * n)``
    validation points, at least 1 and at most n - 2 (a fit needs 2 points).
    """
    from udora.oracle.task import stream

    check_val_fraction(val_fraction)
    if n < 3:
        raise UserError(f"need at least 3 training points to split, got {n}")
    n_val = min(max(1, round(val_fraction * n)), n - 2)
    perm = stream(int(seed), SPLIT_STREAM).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


@dataclasses.dataclass
class TrialResult:
    """One trial: the objective, every validation score, and the validation arrays they
    were computed from (``targets`` (v,) and the prediction's arrays: ``mean``,
    ``aleatoric``, ``epistemic`` (v,) for regression; ``prob`` (v, C), ``aleatoric``,
    ``epistemic`` (v,) for classification)."""

    objective: str
    metric: str  # OBJECTIVES[objective]
    value: float
    scores: dict[str, float]  # :func:`validation_scores`
    arrays: dict[str, np.ndarray]
    fit_idx: np.ndarray  # positions into the training sample
    val_idx: np.ndarray
    config: dict[str, Any]  # the method's full resolved config
    model: Any = dataclasses.field(default=None, repr=False)  # the fitted method
    task: Any = dataclasses.field(default=None, repr=False)  # set by trial()
    task_hash: str | None = None  # set by trial(): names the stored fit-part posterior

    def summary(self) -> dict[str, Any]:
        """JSON-ready: metric, value, every validation score, sizes and config."""
        return {
            self.metric: self.value,
            "objective": self.objective,
            **self.scores,
            "n_fit": int(self.fit_idx.size),
            "n_val": int(self.val_idx.size),
            "config": self.config,
        }


def trial_on_task(
    task: OracleTask,
    method: str,
    seed: int,
    config_overrides: dict[str, Any] | None = None,
    objective: str = "nll",
    val_fraction: float = VAL_FRACTION,
) -> TrialResult:
    """Fit ``method`` on the fit part of ``task``'s training sample, score the validation part.

    ``task`` is a task or a training sample (:func:`udora.experiments.run.execute.training_sample`):
    only ``task.X``, ``task.train_idx``, ``task.y_train`` and the task's knowledge (the
    prior only for methods that declare ``uses_task_prior``, as in a run) are read. The
    prediction is checked as a run's is (:func:`udora.methods.prediction.stored`): a bad
    one raises, naming its field.
    """
    from udora import methods
    from udora.methods.prediction import stored, to_arrays

    kind = task.preset.kind
    check_objective(objective, kind)
    model = methods.get_method(method, **dict(config_overrides or {}))
    X_train, y_train = task.X_train, np.asarray(task.y_train)
    fit_idx, val_idx = split_training(y_train.shape[0], seed, val_fraction)
    knowledge = task.knowledge(with_prior=type(model).uses_task_prior)
    knowledge = dataclasses.replace(knowledge, n=int(fit_idx.size))
    model.fit(X_train[fit_idx], y_train[fit_idx], seed=int(seed), knowledge=knowledge)
    pred = stored(model.predict(X_train[val_idx]), kind, int(val_idx.size))
    targets = y_train[val_idx]
    scores = validation_scores(pred, targets)
    kept = {k: v for k, v in to_arrays(pred).items() if k in _KEPT}
    return TrialResult(
        objective,
        OBJECTIVES[objective],
        scores[OBJECTIVES[objective]],
        scores,
        {"targets": targets, **kept},
        fit_idx,
        val_idx,
        model.config.to_dict(),
        model,
    )


# What validation.npz keeps of a trial's prediction (members are left out: K times larger).
_KEPT = ("mean", "prob", "aleatoric", "epistemic")


# What a trial records of its oracle metrics (docs/design.md, "Tuning without the oracle").
ORACLE_METRICS = names(role="tuning")


def trial_oracle_metrics(
    task: OracleTask, result: TrialResult, store: str | Path | None = None
) -> dict[str, float | None] | None:
    """How the trial's fitted method agrees with the oracle, for analysis only.

    The method was fitted on the fit part of the training sample, so its epistemic target
    is the exact posterior conditioned on that part: ``gp_oracle`` (the task's own prior)
    is fitted on the same points, and its mean and latent variance at the pool (N,)
    replace ``task.post_mean`` and ``task.post_var`` in
    :func:`udora.scoring.score_arrays`. Returns :data:`ORACLE_METRICS` (None where
    undefined, e.g. the AU Spearman of a constant AU). Selection never reads these: a
    sweep ranks trials by ``result.value`` alone. With ``store`` (a sweep folder) and
    ``result.task_hash``, the fit part's posterior is read from there when an earlier
    trial stored it, and stored otherwise
    (:func:`udora.experiments.tasks.arrays.store_posterior`).

    None for a kind whose oracle is sampled (classification, a kind with a
    ``build_sample``): its trials are fitted on the training sample alone, and the
    posterior given the fit part would be a second sampled oracle per preset and tuning
    seed (minutes to half an hour each), so its trials record no oracle metrics.
    """
    from udora.experiments.tasks import arrays as oracle_arrays
    from udora.oracle.kinds import get_kind
    from udora.scoring.score import score_arrays

    if get_kind(task.preset.kind).build_sample is not None:
        return None

    key = None
    if store is not None and result.task_hash is not None:
        key = oracle_arrays.fit_part_key(result.task_hash, result.fit_idx)
    stored = None if key is None else oracle_arrays.load_posterior(store, key)
    if stored is None:
        post_mean, post_var = _fit_part_posterior(task, result.fit_idx)
        if key is not None:
            oracle_arrays.store_posterior(store, key, post_mean, post_var)
    else:
        post_mean, post_var = stored
    pred = result.model.predict(task.X)
    metrics = score_arrays(
        f=task.f,
        y=task.y,
        noise_var=task.noise_var,
        post_mean=post_mean,
        post_var=post_var,
        mean=pred.mean,
        aleatoric=pred.aleatoric,
        epistemic=pred.epistemic,
        total=pred.total,
    )
    return {k: float(metrics[k]) if math.isfinite(metrics[k]) else None for k in ORACLE_METRICS}


def trial(
    preset: str | Path,
    method: str,
    seed: int,
    config_overrides: dict[str, Any] | None = None,
    objective: str = "nll",
    data_dir: str | Path | None = None,
    val_fraction: float = VAL_FRACTION,
) -> TrialResult:
    """Build the task of ``preset`` at ``seed`` and run :func:`trial_on_task` on it.

    ``config_overrides`` are a sweep's flat keys: method fields and, with the ``preset.``
    prefix, preset fields, as for ``udora run --set``
    (:class:`~udora.experiments.run.overrides.Overrides`); bad input raises before
    anything is fitted. The task is what :func:`~udora.experiments.run.execute.training_sample`
    gives (a classification task's sample, without its oracle). The result keeps it
    (``result.task``) for :func:`trial_oracle_metrics`.
    """
    from udora.experiments.run.execute import training_sample
    from udora.experiments.run.overrides import Overrides
    from udora.experiments.run.spec import RunSpec, resolve

    check_objective(objective)
    check_val_fraction(val_fraction)
    overrides = Overrides.of(config_overrides)
    run = resolve(RunSpec(str(preset), method, int(seed), overrides), data_dir)
    check_objective(objective, run.preset.kind)
    task = training_sample(run.preset, run.seed, data_dir)  # one build per worker
    result = trial_on_task(task, method, run.seed, run.overrides.method, objective, val_fraction)
    result.task, result.task_hash = task, run.task_hash
    return result


_POSTERIORS: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
_POSTERIORS_KEPT = 16  # every trial of a (preset, seed) shares one fit part


def _fit_part_posterior(task: OracleTask, fit_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact posterior mean and latent variance at the pool (N,) given the fit part only.

    ``gp_oracle`` fitted on ``task.X_train[fit_idx]`` (under another ground-truth family,
    that family's exact posterior, :meth:`OracleTask.posterior_given`); kept per (preset,
    seed, fit part) in this process, since every trial of a task shares its fit part.
    """
    import hashlib

    from udora import methods

    key = (task.preset.model_dump_json(), task.seed, hashlib.sha256(fit_idx.tobytes()).hexdigest())
    if key not in _POSTERIORS:
        if task.preset.truth.family != "gp":  # gp_oracle holds the GP prior, not this truth
            posterior = task.posterior_given(fit_idx)
        else:
            reference = methods.get_method("gp_oracle")
            knowledge = dataclasses.replace(task.knowledge(with_prior=True), n=int(fit_idx.size))
            y_train = np.asarray(task.y_train)
            reference.fit(
                task.X_train[fit_idx], y_train[fit_idx], seed=task.seed, knowledge=knowledge
            )
            post = reference.predict(task.X)
            posterior = (post.mean, post.epistemic)
        if len(_POSTERIORS) >= _POSTERIORS_KEPT:
            _POSTERIORS.pop(next(iter(_POSTERIORS)))
        _POSTERIORS[key] = posterior
    return _POSTERIORS[key]
