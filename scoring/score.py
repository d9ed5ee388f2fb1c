"""All scalar metrics and curves of one prediction on one oracle task (docs/design.md, "Scoring").

``score``/``curves`` take the runner's objects (duck-typed: a task with ``f``, ``y``,
``noise_var``, ``post_mean``, ``post_var``; a prediction with ``mean``, ``aleatoric``,
``epistemic``, ``total`` and ``member_means``) and call the array-level
``score_arrays``/``curves_arrays``. Every metric name and formula is listed in
docs/metrics.md; names never change meaning. An undefined metric is NaN, never an error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from udora.oracle.joint import DESIGNS
from udora.oracle.targets import Targets, posterior_targets
from udora.scoring import proper
from udora.scoring._checks import members, rows, scalar, vectors
from udora.scoring.agreement import agreement, mse
from udora.scoring.calibration import calibration_curve, calibration_log_ratios
from udora.scoring.ensemble import (
    error_spread_spearman,
    fair_crps_ensemble,
    spread_skill_ratio,
    top_decile_error_ratio,
)
from udora.scoring.joint import JOINT_FIELDS, joint_metrics, joint_names
from udora.scoring.risk_coverage import aurc, normalised_aurc, risk_coverage_curve
from udora.scoring.utilities import selective_utility, topk_utility

_CALIBRATED = ("au", "eu", "total")
_OTHER_LOSSES = ("crps", "nll")
# A bias target no larger than this times the largest variance target is round-off.
ROUND_OFF = 1e-9
_OBSERVABLE_ENSEMBLE = ("crps_fair", "spread_skill", "err_spread_spearman", "top_decile_err_ratio")


_REQUIRED = ("f", "y", "noise_var", "post_mean", "post_var", "mean", "aleatoric", "epistemic")
_OPTIONAL = ("total", "member_means", *JOINT_FIELDS)


def _keywords(fn: str, arrays: dict[str, Any]) -> dict[str, Any]:
    """The keyword arrays of :func:`score_arrays`, optional ones defaulted to None."""
    missing = [k for k in _REQUIRED if k not in arrays]
    unknown = sorted(set(arrays) - set(_REQUIRED) - set(_OPTIONAL))
    if missing or unknown:
        raise TypeError(f"{fn}: missing arrays {missing}, unknown arrays {unknown}")
    return {**dict.fromkeys(_OPTIONAL), **arrays}


def _inputs(fn: str, **arrays: Any) -> dict[str, Any]:
    member_means = arrays.pop("member_means")
    joint = {k: arrays.pop(k, None) for k in JOINT_FIELDS}
    if arrays["total"] is None:
        arrays["total"] = np.asarray(arrays["aleatoric"], np.float64) + np.asarray(
            arrays["epistemic"], np.float64
        )
    out: dict[str, Any] = dict(zip(arrays, vectors(fn, **arrays), strict=True))
    n = out["f"].shape[0]
    out["member_means"] = (
        None if member_means is None else members(fn, "member_means", member_means, n)
    )
    return {**out, **joint}


def _targets(a: dict[str, Any], loss: str) -> Targets:
    try:
        return posterior_targets(
            a["mean"],
            a["aleatoric"],
            a["epistemic"],
            post_mean=a["post_mean"],
            post_var=a["post_var"],
            noise_var=a["noise_var"],
            loss=loss,  # type: ignore[arg-type]
        )
    except ValueError:  # non-finite prediction or non-positive variance: targets undefined
        nan = np.full(a["f"].shape, np.nan)
        return Targets(au=nan, gen_variance=nan, gen_bias=nan)


def _bias_target(t: Targets) -> np.ndarray:
    """The generalised bias target, or NaN (N,) when it is zero to round-off everywhere.

    A method whose mean and variance are the posterior's (``gp_oracle``) has a bias term
    of round-off size only (1e-20 against variances near 1); an agreement with it would
    be a number drawn from round-off, which changes with the thread count. Such a target
    makes the ``*_eu_bias*`` metrics NaN (docs/metrics.md).
    """
    scale = float(np.max(np.abs(t.gen_variance), initial=0.0))
    if np.all(np.abs(t.gen_bias) <= ROUND_OFF * scale):
        return np.full_like(t.gen_bias, np.nan)
    return t.gen_bias


def _pairs(a: dict[str, Any], t: Targets) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Estimate and oracle target for each uncertainty kind."""
    return {
        "au": (a["aleatoric"], t.au),
        "eu": (a["epistemic"], t.eu),
        "eu_var": (a["epistemic"], t.gen_variance),
        "eu_bias": (a["epistemic"], _bias_target(t)),
        "total": (a["total"], t.risk),
    }


def score_arrays(
    *,
    f: np.ndarray,
    y: np.ndarray,
    noise_var: np.ndarray,
    post_mean: np.ndarray,
    post_var: np.ndarray,
    mean: np.ndarray,
    aleatoric: np.ndarray,
    epistemic: np.ndarray,
    total: np.ndarray | None = None,
    member_means: np.ndarray | None = None,
    joint_idx: np.ndarray | None = None,
    joint_design: np.ndarray | None = None,
    joint_post_cov: np.ndarray | None = None,
    joint_epistemic: np.ndarray | None = None,
) -> dict[str, float]:
    """Every scalar metric of a prediction against the oracle and the realised outcomes.

    Args:
        f: the latent function on the pool, (N,).
        y: the realised outcomes, (N,).
        noise_var: ``sigma_eps^2``, (N,).
        post_mean: the oracle's posterior mean ``m_S``, (N,).
        post_var: the oracle's posterior variance ``s2_f``, (N,).
        mean: the method's ``mu``, (N,).
        aleatoric: the method's ``a``, (N,).
        epistemic: the method's ``e``, (N,).
        total: ``v``, (N,); defaults to ``a + e``.
        member_means: (K, N) or None; without it the ensemble metrics are NaN.
        joint_idx: the task's batches of pool points, (B, tau)
            (:class:`udora.oracle.joint.JointBatches`); without them the joint metrics
            are NaN.
        joint_design: each batch's design, (B,).
        joint_post_cov: the posterior covariance of ``f`` over each batch, (B, tau, tau).
        joint_epistemic: the method's covariance at the batches (B, tau, tau), from
            ``predict_joint``; without it the members' (:mod:`udora.scoring.joint`).

    Returns:
        A flat ``{name: float}``; the names and formulas are in docs/metrics.md.
    """
    a = _inputs("score_arrays", **locals())
    mu, v, yy = a["mean"], a["total"], a["y"]
    out: dict[str, float] = {}
    for ref, key in (("f", "f"), ("post", "post_mean")):
        for stat, val in agreement(mu, a[key], scale=False).items():
            out[f"{stat}_mean_{ref}"] = val
        out[f"mse_mean_{ref}"] = mse(mu, a[key])
    sq = _targets(a, "squared")
    pairs = _pairs(a, sq)
    for kind, (est, tgt) in pairs.items():
        for stat, val in agreement(est, tgt).items():
            out[f"{stat}_{kind}"] = val
    for kind in _CALIBRATED:
        err, bias = calibration_log_ratios(*pairs[kind])
        out[f"calib_abs_log_ratio_{kind}"] = err
        out[f"calib_log_ratio_{kind}"] = bias
        out[f"aurc_{kind}"] = aurc(*pairs[kind])
        out[f"nAURC_{kind}"] = normalised_aurc(*pairs[kind])
    for loss in _OTHER_LOSSES:
        other = _pairs(a, _targets(a, loss))
        for kind in ("eu", "eu_var", "eu_bias", "total"):
            for stat, val in agreement(*other[kind], scale=False).items():
                out[f"{stat}_{kind}_{loss}"] = val
        for kind in ("eu", "total"):
            out[f"nAURC_{kind}_{loss}"] = normalised_aurc(*other[kind])

    seen = {k: a[k] for k in ("y", "mean", "aleatoric", "epistemic", "total", "member_means")}
    out.update(observable_arrays(**seen))
    x = a["member_means"]
    out["spread_skill_f"] = float("nan") if x is None else spread_skill_ratio(x, a["f"])
    c = float(np.var(yy))
    out["util_selective_oracle"] = selective_utility(sq.risk, v, cost_scale=c)
    out["util_topk_oracle"] = topk_utility(mu, v, a["post_mean"], outcome_sd=np.sqrt(c))
    out.update(_joint(a))
    return out


def _joint(a: dict[str, Any]) -> dict[str, float]:
    """The joint metrics (NaN without the task's batches)."""
    if a["joint_idx"] is None:
        return dict.fromkeys(joint_names(DESIGNS), float("nan"))
    return joint_metrics(
        idx=a["joint_idx"],
        design=a["joint_design"],
        post_cov=a["joint_post_cov"],
        post_mean=a["post_mean"],
        noise_var=a["noise_var"],
        mean=a["mean"],
        aleatoric=a["aleatoric"],
        epistemic=a["epistemic"],
        eu_cov=a["joint_epistemic"],
        member_means=a["member_means"],
        designs=DESIGNS,
    )


def observable_arrays(
    *,
    y: np.ndarray,
    mean: np.ndarray,
    aleatoric: np.ndarray,
    epistemic: np.ndarray,
    total: np.ndarray | None = None,
    member_means: np.ndarray | None = None,
) -> dict[str, float]:
    """The metrics of :func:`score_arrays` that need only the realised outcomes: what a
    practitioner sees on a held-out set (proper scores, coverage, calibration of the PIT,
    interval scores, realised risk-coverage, ensemble scores, the realised utilities).

    Args:
        y: the realised outcomes, (N,) or, for R predictions scored in one vectorised
            pass (e.g. of R subsets of points), (R, N); every array then has that shape.
        mean: the method's ``mu``, (N,).
        aleatoric: the method's ``a``, (N,).
        epistemic: the method's ``e``, (N,).
        total: ``v``, (N,); defaults to ``a + e``.
        member_means: (K, N) (or (K, R, N)) or None; without it the ensemble metrics are
            NaN.

    Returns:
        A flat ``{name: float}``, the same values as :func:`score_arrays` gives them; for
        (R, N) inputs ``{name: (R,) array}``, row r the metrics of row r alone.
    """
    if total is None:
        total = np.asarray(aleatoric, np.float64) + np.asarray(epistemic, np.float64)
    yy, mu, e, v, au = rows(
        "observable_arrays", y=y, mean=mean, epistemic=epistemic, total=total, aleatoric=aleatoric
    )
    x = (
        None
        if member_means is None
        else members("observable_arrays", "member_means", member_means, yy.shape)
    )
    out: dict[str, float | np.ndarray] = {}
    with np.errstate(invalid="ignore"):  # N = 0: NaN means, as documented
        out["nll"] = scalar(np.mean(proper.gaussian_nll(mu, v, yy), axis=-1))
        out["crps"] = scalar(np.mean(proper.gaussian_crps(mu, v, yy), axis=-1))
    for level in proper.COVERAGE_LEVELS:
        out[f"coverage_{round(100 * level)}"] = proper.interval_coverage(mu, v, yy, level)
    out["miscal_area"] = proper.miscalibration_area(proper.pit(mu, v, yy))
    for level in proper.INTERVAL_SCORE_LEVELS:
        out[f"interval_score_{round(100 * level)}"] = scalar(
            np.mean(proper.interval_score(mu, v, yy, level), axis=-1)
        )
    realised = (mu - yy) ** 2  # what a held-out set shows instead of the risk
    out["nAURC_eu_realised"] = normalised_aurc(e, realised)
    out["nAURC_total_realised"] = normalised_aurc(v, realised)
    out.update({name: scalar(np.full(yy.shape[:-1], np.nan)) for name in _OBSERVABLE_ENSEMBLE})
    if x is not None:
        out["crps_fair"] = scalar(np.mean(fair_crps_ensemble(x, yy), axis=-1))
        out["spread_skill"] = spread_skill_ratio(x, yy, au)
        out["err_spread_spearman"] = error_spread_spearman(x, yy)
        out["top_decile_err_ratio"] = top_decile_error_ratio(x, yy)
    c = np.var(yy, axis=-1)
    out["util_selective"] = selective_utility(realised, v, cost_scale=c)
    out["util_topk"] = topk_utility(mu, v, yy, outcome_sd=np.sqrt(c))
    return out


def curves_arrays(**arrays: np.ndarray | None) -> dict[str, np.ndarray]:
    """The curves behind the scalar metrics, as a flat ``{name: array}``.

    Arguments as :func:`score_arrays`. Returns, for each ``kind`` in au, eu, total:
    ``calib_<kind>_estimate`` and ``calib_<kind>_target`` (10,) (bin means, smallest
    estimates first); ``rc_<kind>`` and ``rc_<kind>_oracle`` (N,) (retained mean target
    ordered by the estimate and by the target itself) at coverages ``rc_coverage`` (N,);
    and ``reliability_level``/``reliability_observed`` (21,), ``pit_edges`` (11,),
    ``pit_density`` (10,).
    """
    a = _inputs("curves_arrays", **_keywords("curves_arrays", arrays))
    pairs = _pairs(a, _targets(a, "squared"))
    out: dict[str, np.ndarray] = {}
    for kind in _CALIBRATED:
        est, tgt = pairs[kind]
        out[f"calib_{kind}_estimate"], out[f"calib_{kind}_target"] = calibration_curve(est, tgt)
        out["rc_coverage"], out[f"rc_{kind}"] = risk_coverage_curve(est, tgt)
        out[f"rc_{kind}_oracle"] = risk_coverage_curve(tgt, tgt)[1]
    u = proper.pit(a["mean"], a["total"], a["y"])
    out["reliability_level"], out["reliability_observed"] = proper.reliability_curve(u)
    out["pit_edges"], out["pit_density"] = proper.pit_histogram(u)
    return out


def _from_objects(task: Any, prediction: Any) -> dict[str, Any]:
    batches = getattr(task, "joint", None)
    return {
        **({} if batches is None else batches.to_arrays()),
        "joint_epistemic": getattr(prediction, "joint_epistemic", None),
        "f": task.f,
        "y": task.y,
        "noise_var": task.noise_var,
        "post_mean": task.post_mean,
        "post_var": task.post_var,
        "mean": prediction.mean,
        "aleatoric": prediction.aleatoric,
        "epistemic": prediction.epistemic,
        "total": getattr(prediction, "total", None),
        "member_means": getattr(prediction, "member_means", None),
    }


def score(task: Any, prediction: Any) -> dict[str, float]:
    """:func:`score_arrays` on a task and a prediction (arrays of shape (N,), members (K, N))."""
    return score_arrays(**_from_objects(task, prediction))


def curves(task: Any, prediction: Any) -> dict[str, np.ndarray]:
    """:func:`curves_arrays` on a task and a prediction (arrays of shape (N,), members (K, N))."""
    return curves_arrays(**_from_objects(task, prediction))
