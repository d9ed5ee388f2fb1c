"""Scores of a classification prediction against the sampled oracle and the realised labels
(docs/metrics.md, "Classification"; the targets in docs/design.md, "Classification").

With the oracle's posterior expectations at each pool point, ``pbar = E p_f`` (N, C),
``E H(p_f)`` and ``E ||p_f||^2`` (N,), and a method's probabilities ``q``, its AU and EU
(log scale) and, where it has them, its Brier-scale AU and EU:

- agreement (Spearman) of the method's AU, EU and total with ``E H(p_f)``,
  ``E KL(p_f || q)`` and their sum, on both scales; of its EU with the two parts of the
  log-scale EU target, the mutual information ``H(pbar) - E H(p_f)`` and the discrepancy
  ``KL(pbar || q)``;
- risk-coverage (nAURC) by EU against the EU target and by the total against the total
  risk; the binned calibration log ratios of AU, EU and total against their targets;
- the prediction's quality: ``mean KL(pbar || q)`` and the accuracy regret
  ``mean max_c pbar_c - mean pbar_{argmax q}`` (0 when ``q`` picks the Bayes class of
  ``pbar`` everywhere);
- on the realised pool labels: the log loss (``nll``, the name the regression kind gives
  its outcomes' negative log-likelihood), Brier score (summed over the classes),
  top-label expected calibration error (15 equal-width bins) and accuracy.

Every oracle metric has a Monte Carlo standard error: the delete-one-batch jackknife over
the task's B batch means (each chain's draws cut into consecutive batches), which for a
statistic linear in the expectations equals the batch-means standard error exactly.
Undefined values (a constant estimate, a method without Brier-scale estimates) are NaN.
The metrics are declared here, for the classification kind, beside the ones it shares
with regression (:mod:`udora.scoring.registry`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from udora.oracle.classification.preset import CLASSIFICATION
from udora.oracle.classification.targets import EPS, target_arrays
from udora.scoring.agreement import spearman
from udora.scoring.calibration import calibration_curve, calibration_log_ratios
from udora.scoring.declaration import Metric
from udora.scoring.registry import register_metric
from udora.scoring.risk_coverage import normalised_aurc, risk_coverage_curve

ECE_BINS = 15

_KIND = frozenset({CLASSIFICATION})
_SPLIT = frozenset({"oracle", "split"})
_BRIER = frozenset({"oracle", "split", "brier"})
_OUTCOMES = frozenset({"outcomes", "mean"})


def _declare() -> tuple[Metric, ...]:
    """The classification-only metrics (the shared ones are in the registry)."""

    def m(name, label, unit, better, needs, roles=None, header=None) -> Metric:
        return Metric(
            name, label, unit, better, needs, tasks=_KIND, roles=roles or {}, header=header
        )

    return (
        m("spearman_eu_mi", "EU vs mutual information Spearman", "1", "higher", _SPLIT),
        m("spearman_eu_kl", "EU vs discrepancy Spearman", "1", "higher", _SPLIT),
        m("spearman_au_brier", "AU Spearman (Brier target)", "1", "higher", _BRIER),
        m("spearman_eu_brier", "EU Spearman (Brier target)", "1", "higher", _BRIER),
        m("spearman_total_brier", "total Spearman (Brier target)", "1", "higher", _BRIER),
        m(
            "kl_mean",
            "mean KL(pbar ‖ q)",  # no ASCII pipe: the label stands in markdown tables
            "nats",
            "lower",
            frozenset({"oracle", "mean"}),
            roles={
                "ranked": 2,
                "leaderboard": 0,
                "headline": 0,
                "console": 0,
                "tuning": 3,
                "ablation": 0,
            },
            header="KL(pbar‖q)",
        ),
        m(
            "accuracy_regret",
            "accuracy regret vs the Bayes class",
            "1",
            "lower",
            frozenset({"oracle", "mean"}),
        ),
        m("brier", "Brier score (summed over classes)", "1", "lower", _OUTCOMES, {"observable": 1}),
        m("ece", f"top-label ECE ({ECE_BINS} bins)", "1", "lower", _OUTCOMES, {"observable": 2}),
        m(
            "accuracy",
            "accuracy",
            "1",
            "higher",
            _OUTCOMES,
            roles={"leaderboard": 6, "headline": 4, "observable": 3},
        ),
    )


METRICS = tuple(register_metric(declared) for declared in _declare())


# ---------------------------------------------------------------- the oracle's side


def _oracle_metrics(
    pbar: np.ndarray,
    exp_entropy: np.ndarray,
    exp_square: np.ndarray,
    prob: np.ndarray,
    au: np.ndarray,
    eu: np.ndarray,
    au_brier: np.ndarray | None,
    eu_brier: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """The oracle metrics for R sets of targets at once.

    Args:
        pbar: (R, N, C); exp_entropy, exp_square: (R, N), the posterior expectations.
        prob: (N, C) the method's ``q``; au, eu: (N,); au_brier, eu_brier: (N,) or None.

    Returns:
        ``{metric: (R,)}``.
    """
    R = pbar.shape[0]
    t = target_arrays(pbar, exp_entropy, exp_square, prob)
    eu_log, mi, kl = t["eu_log"], t["mi"], t["kl"]
    total_log = exp_entropy + eu_log

    def rows(x: np.ndarray) -> np.ndarray:
        return np.broadcast_to(x, (R, x.shape[-1]))

    total = au + eu
    out: dict[str, np.ndarray] = {
        "spearman_au": spearman(rows(au), exp_entropy),
        "spearman_eu": spearman(rows(eu), eu_log),
        "spearman_total": spearman(rows(total), total_log),
        "spearman_eu_mi": spearman(rows(eu), mi),
        "spearman_eu_kl": spearman(rows(eu), kl),
        "nAURC_eu": normalised_aurc(rows(eu), eu_log),
        "nAURC_total": normalised_aurc(rows(total), total_log),
    }
    for name, est, tgt in (
        ("au", au, exp_entropy),
        ("eu", eu, eu_log),
        ("total", total, total_log),
    ):
        ratios = np.array([calibration_log_ratios(est, t) for t in tgt]).reshape(R, 2)
        out[f"calib_abs_log_ratio_{name}"], out[f"calib_log_ratio_{name}"] = ratios.T
    if au_brier is not None and eu_brier is not None:
        au_b, eu_b = t["au_brier"], t["eu_brier"]
        out["spearman_au_brier"] = spearman(rows(au_brier), au_b)
        out["spearman_eu_brier"] = spearman(rows(eu_brier), eu_b)
        out["spearman_total_brier"] = spearman(rows(au_brier + eu_brier), au_b + eu_b)
    else:
        for name in ("spearman_au_brier", "spearman_eu_brier", "spearman_total_brier"):
            out[name] = np.full(R, np.nan)
    picked = np.take_along_axis(pbar, rows(np.argmax(prob, axis=-1))[..., None], axis=-1)[..., 0]
    out["kl_mean"] = kl.mean(axis=-1)
    out["accuracy_regret"] = pbar.max(axis=-1).mean(axis=-1) - picked.mean(axis=-1)
    return out


# ---------------------------------------------------------------- the realised labels


def _confidence_bins(
    prob: np.ndarray, y: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-label confidence (N,), correctness 0/1 (N,) and equal-width bin index (N,)
    ``((b-1)/B, b/B]`` of ``prob`` (N, C) at labels ``y`` (N,)."""
    conf = prob.max(axis=-1)
    correct = (np.argmax(prob, axis=-1) == np.asarray(y)).astype(np.float64)
    bins = np.clip(np.ceil(conf * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    return conf, correct, bins


def expected_calibration_error(prob: np.ndarray, y: np.ndarray, n_bins: int = ECE_BINS) -> float:
    """Top-label ECE: ``sum_b (n_b / N) |acc_b - conf_b|`` over equal-width bins
    ``((b-1)/B, b/B]`` of the confidence ``max_c q_c``.

    Args:
        prob: (N, C) class probabilities; y: (N,) labels 0..C-1; n_bins: B.

    Hand-written: scikit-learn's ``calibration_curve`` is binary only and drops empty
    bins without their weights; the formula is Guo et al. (2017), eq. 3.
    """
    conf, correct, bins = _confidence_bins(prob, y, n_bins)
    gap = np.bincount(bins, weights=correct - conf, minlength=n_bins)
    return float(np.sum(np.abs(gap)) / prob.shape[0])


def observed_scores(prob: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Proper scores and accuracy on realised labels ``y`` (N,) of ``prob`` (N, C):
    ``nll`` (log loss, probabilities floored at ``EPS``), ``brier`` (summed over the
    classes), ``ece`` (top-label, :data:`ECE_BINS` bins) and ``accuracy``."""
    n = prob.shape[0]
    p_y = prob[np.arange(n), y]
    onehot = np.eye(prob.shape[1])[y]
    return {
        "nll": float(np.mean(-np.log(np.maximum(p_y, EPS)))),
        "brier": float(np.mean(np.sum((prob - onehot) ** 2, axis=-1))),
        "ece": expected_calibration_error(prob, y),
        "accuracy": float(np.mean(np.argmax(prob, axis=-1) == y)),
    }


# ---------------------------------------------------------------- the public calls


def _check(
    prob_bar: np.ndarray, y: np.ndarray, prob: np.ndarray, batches: tuple[np.ndarray, ...] | None
) -> None:
    if prob.shape != prob_bar.shape:
        raise ValueError(
            f"prob: expected {prob_bar.shape} like the oracle's pbar, got {prob.shape}"
        )
    if y.shape != prob.shape[:1]:
        raise ValueError(f"y: expected ({prob.shape[0]},) labels, got {y.shape}")
    if batches is not None and batches[0].shape[1:] != prob.shape:
        raise ValueError(
            f"prob_batches: expected (B, {prob.shape[0]}, {prob.shape[1]}), got {batches[0].shape}"
        )


def score_arrays(
    *,
    prob_bar: np.ndarray,
    exp_entropy: np.ndarray,
    exp_square: np.ndarray,
    y: np.ndarray,
    prob: np.ndarray,
    aleatoric: np.ndarray,
    epistemic: np.ndarray,
    aleatoric_brier: np.ndarray | None = None,
    epistemic_brier: np.ndarray | None = None,
) -> dict[str, float]:
    """Every classification metric of one prediction.

    Args:
        prob_bar: (N, C) ``pbar``; exp_entropy, exp_square: (N,) ``E H(p_f)``,
            ``E ||p_f||^2``; y: (N,) realised labels.
        prob: (N, C) the method's probabilities; aleatoric, epistemic: (N,) in nats;
            aleatoric_brier, epistemic_brier: (N,) or None.

    Returns:
        ``{metric: float}`` for every classification metric (NaN where undefined).
    """
    prob_bar, prob = np.asarray(prob_bar, np.float64), np.asarray(prob, np.float64)
    y = np.asarray(y).astype(np.int64)
    _check(prob_bar, y, prob, None)
    oracle = _oracle_metrics(
        prob_bar[None],
        np.asarray(exp_entropy, np.float64)[None],
        np.asarray(exp_square, np.float64)[None],
        prob,
        np.asarray(aleatoric, np.float64),
        np.asarray(epistemic, np.float64),
        aleatoric_brier,
        epistemic_brier,
    )
    return {**{k: float(v[0]) for k, v in oracle.items()}, **observed_scores(prob, y)}


def standard_errors_arrays(
    *,
    prob_batches: np.ndarray,
    entropy_batches: np.ndarray,
    square_batches: np.ndarray,
    prob: np.ndarray,
    aleatoric: np.ndarray,
    epistemic: np.ndarray,
    aleatoric_brier: np.ndarray | None = None,
    epistemic_brier: np.ndarray | None = None,
) -> dict[str, float]:
    """Monte Carlo standard errors of the oracle metrics: the delete-one-batch jackknife.

    With ``theta_b`` the metric computed from the means of all batches but ``b``
    (B of them), ``se = sqrt((B - 1) / B sum_b (theta_b - mean_b theta_b)^2)``.

    Args:
        prob_batches: (B, N, C); entropy_batches, square_batches: (B, N), the batch means.
        The prediction's arrays as in :func:`score_arrays`.

    Returns:
        ``{metric: float}`` for the metrics that read the oracle.
    """
    pb = np.asarray(prob_batches, np.float64)
    B = pb.shape[0]
    if B < 2:
        raise ValueError(f"prob_batches: need at least 2 batches, got {B}")
    prob = np.asarray(prob, np.float64)
    _check(pb[0], np.zeros(prob.shape[0], np.int64), prob, (pb,))

    def leave_one_out(batches: np.ndarray) -> np.ndarray:
        return (batches.sum(axis=0, keepdims=True) - batches) / (B - 1)

    thetas = _oracle_metrics(
        leave_one_out(pb),
        leave_one_out(np.asarray(entropy_batches, np.float64)),
        leave_one_out(np.asarray(square_batches, np.float64)),
        prob,
        np.asarray(aleatoric, np.float64),
        np.asarray(epistemic, np.float64),
        aleatoric_brier,
        epistemic_brier,
    )
    return {
        name: float(np.sqrt((B - 1) / B * np.sum((t - t.mean()) ** 2)))
        for name, t in thetas.items()
    }


def curves_arrays(
    *,
    prob_bar: np.ndarray,
    exp_entropy: np.ndarray,
    y: np.ndarray,
    prob: np.ndarray,
    aleatoric: np.ndarray,
    epistemic: np.ndarray,
) -> dict[str, np.ndarray]:
    """The curves behind the metrics: ``calib_<kind>_estimate``/``_target`` (10,) for
    au, eu, total (log scale); ``rc_coverage``, ``rc_eu`` and ``rc_eu_oracle`` (N,), the
    retained mean EU target ordered by the EU estimate and by the target itself; and
    the reliability diagram ``reliability_confidence``/``reliability_accuracy`` (15,)
    (mean confidence and accuracy per equal-width bin; NaN for an empty bin)."""
    prob = np.asarray(prob, np.float64)
    eu_log = target_arrays(prob_bar, exp_entropy, np.zeros_like(exp_entropy), prob)["eu_log"]
    total = aleatoric + epistemic
    out: dict[str, np.ndarray] = {}
    for name, est, tgt in (
        ("au", aleatoric, exp_entropy),
        ("eu", epistemic, eu_log),
        ("total", total, exp_entropy + eu_log),
    ):
        out[f"calib_{name}_estimate"], out[f"calib_{name}_target"] = calibration_curve(est, tgt)
    out["rc_coverage"], out["rc_eu"] = risk_coverage_curve(epistemic, eu_log)
    out["rc_eu_oracle"] = risk_coverage_curve(eu_log, eu_log)[1]
    conf, correct, bins = _confidence_bins(prob, y, ECE_BINS)
    counts = np.bincount(bins, minlength=ECE_BINS).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["reliability_confidence"] = np.bincount(bins, conf, ECE_BINS) / counts
        out["reliability_accuracy"] = np.bincount(bins, correct, ECE_BINS) / counts
    return out


def _arrays(task: Any, prediction: Any) -> dict[str, Any]:
    m = task.moments
    return {
        "prob_bar": m.prob,
        "exp_entropy": m.entropy,
        "exp_square": m.square,
        "y": task.y,
        "prob": prediction.prob,
        "aleatoric": prediction.aleatoric,
        "epistemic": prediction.epistemic,
        "aleatoric_brier": prediction.aleatoric_brier,
        "epistemic_brier": prediction.epistemic_brier,
    }


def score(task: Any, prediction: Any) -> dict[str, float]:
    """:func:`score_arrays` of a classification task and a stored prediction."""
    return score_arrays(**_arrays(task, prediction))


def standard_errors(task: Any, prediction: Any) -> dict[str, float]:
    """:func:`standard_errors_arrays` of a classification task and a stored prediction."""
    m = task.moments
    a = _arrays(task, prediction)
    for name in ("prob_bar", "exp_entropy", "exp_square", "y"):
        del a[name]
    return standard_errors_arrays(
        prob_batches=m.prob_batches,
        entropy_batches=m.entropy_batches,
        square_batches=m.square_batches,
        **a,
    )


def curves(task: Any, prediction: Any) -> dict[str, np.ndarray]:
    """:func:`curves_arrays` of a classification task and a stored prediction."""
    a = _arrays(task, prediction)
    for name in ("exp_square", "aleatoric_brier", "epistemic_brier"):
        del a[name]
    return curves_arrays(**a)
