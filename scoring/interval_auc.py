"""Interval-valued AUC: ranking with intervals instead of scores (docs/metrics.md).

For a positive's interval ``I1 = [L1, U1]`` and a negative's ``I0 = [L0, U0]`` a pair is
confidently correct when ``L1 > U0``, confidently wrong when ``U1 < L0`` and ambiguous
(overlapping) otherwise, so

    P(I1 > I0) + P(overlap) + P(I1 < I0) = 1.

The lower ROC curve plots ``TPR_L(t) = P(L1 > t)`` against ``FPR_U(t) = P(U0 > t)`` and
the upper one ``TPR_U(t) = P(U1 > t)`` against ``FPR_L(t) = P(L0 > t)``; their areas are
``AUC_L = P(I1 > I0)`` and ``AUC_U = 1 - P(I1 < I0)`` for continuous endpoints, hence
``AUC_U - AUC_L = P(overlap)``. Point intervals (``L = U``) give the classical AUC.

:func:`interval_regions` counts the pairs exactly in O(N log N) (sorting, no N1 x N0
matrix); :func:`interval_auc_curves` integrates the two ROC curves (trapezoids) as an
independent route to the same areas. Written by hand: no maintained library scores
interval-valued rankings.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

__all__ = ["exceedance_regions", "interval_auc_curves", "interval_regions"]


def _check(labels: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, ...]:
    y = np.asarray(labels, dtype=bool)
    lo = np.asarray(lower, dtype=np.float64)
    hi = np.asarray(upper, dtype=np.float64)
    if y.ndim != 1 or lo.shape != y.shape or hi.shape != y.shape:
        raise ValueError(
            f"interval AUC: labels, lower and upper must share one shape (N,); got "
            f"{y.shape}, {lo.shape}, {hi.shape}"
        )
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("interval AUC: interval endpoints must be finite")
    if np.any(lo > hi):
        raise ValueError("interval AUC: every interval needs lower <= upper")
    if y.all() or not y.any():
        raise ValueError("interval AUC: needs at least one positive and one negative")
    return y, lo, hi


def interval_regions(labels: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> dict:
    """The three ranking regions over all positive-negative pairs, counted exactly.

    Args:
        labels: (N,) booleans, True for the positive class.
        lower, upper: (N,) interval endpoints, ``lower <= upper``.

    Returns:
        ``{"above": P(L1 > U0), "overlap": ..., "below": P(U1 < L0)}`` (they sum to 1).
    """
    y, lo, hi = _check(labels, lower, upper)
    n1, n0 = int(y.sum()), int((~y).sum())
    # for each positive: negatives with U0 < L1, and negatives with L0 > U1
    above = np.searchsorted(np.sort(hi[~y]), lo[y], side="left").sum()
    below = (n0 - np.searchsorted(np.sort(lo[~y]), hi[y], side="right")).sum()
    pairs = float(n1) * float(n0)
    p_above, p_below = above / pairs, below / pairs
    return {"above": p_above, "overlap": 1.0 - p_above - p_below, "below": p_below}


def _area(fpr: np.ndarray, tpr: np.ndarray) -> float:
    order = np.lexsort((tpr, fpr))
    x, y = fpr[order], tpr[order]
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))


def interval_auc_curves(labels: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> dict:
    """``AUC_L`` and ``AUC_U`` as areas under the lower and upper ROC curves.

    Args and shapes as :func:`interval_regions`. Thresholds are every endpoint plus
    -inf and +inf, so the curves run from (0, 0) to (1, 1); ``TPR(t) = P(. > t)``.

    Returns:
        ``{"auc_lower", "auc_upper", "thresholds" (T,), "tpr_lower", "fpr_upper",
        "tpr_upper", "fpr_lower" (T,)}``.
    """
    y, lo, hi = _check(labels, lower, upper)
    t = np.concatenate([[-np.inf], np.unique(np.concatenate([lo, hi])), [np.inf]])

    def share_above(values: np.ndarray) -> np.ndarray:  # P(value > t) for every t
        return 1.0 - np.searchsorted(np.sort(values), t, side="right") / values.size

    tpr_l, fpr_u = share_above(lo[y]), share_above(hi[~y])
    tpr_u, fpr_l = share_above(hi[y]), share_above(lo[~y])
    return {
        "auc_lower": _area(fpr_u, tpr_l),
        "auc_upper": _area(fpr_l, tpr_u),
        "thresholds": t,
        "tpr_lower": tpr_l,
        "fpr_upper": fpr_u,
        "tpr_upper": tpr_u,
        "fpr_lower": fpr_l,
    }


def exceedance_regions(
    f: np.ndarray,
    mean: np.ndarray,
    epistemic: np.ndarray,
    post_mean: np.ndarray,
    post_var: np.ndarray,
    *,
    quantile: float = 0.9,
    levels: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95),
) -> dict[str, dict[float, dict[str, float]]]:
    """Interval AUC on the oracle's exceedance task of one prediction.

    A pool point is positive when the latent ``f`` exceeds its ``quantile`` over the pool.
    At each nominal level ``c`` the method's interval is ``mean +- z sqrt(epistemic)`` and
    the oracle's ``post_mean +- z sqrt(post_var)``, ``z`` the standard normal
    ``(1 + c) / 2`` quantile: both rank f's exceedance with their epistemic uncertainty.

    Args:
        f, mean, epistemic, post_mean, post_var: (N,) arrays, original units.
        quantile: in (0, 1), the exceedance threshold's quantile of f.
        levels: nominal interval levels in (0, 1).

    Returns:
        ``{"method": {c: regions}, "oracle": {c: regions}}`` with
        :func:`interval_regions`'s dicts.
    """
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile: expected a value in (0, 1), got {quantile!r}")
    if any(not 0.0 < c < 1.0 for c in levels):
        raise ValueError(f"levels: expected values in (0, 1), got {levels!r}")
    f = np.asarray(f, dtype=np.float64)
    labels = f > np.quantile(f, quantile)
    out: dict[str, dict[float, dict[str, float]]] = {"method": {}, "oracle": {}}
    for c in levels:
        z = float(ndtri((1.0 + c) / 2.0))
        for name, centre, var in (("method", mean, epistemic), ("oracle", post_mean, post_var)):
            half = z * np.sqrt(np.asarray(var, dtype=np.float64))
            centre = np.asarray(centre, dtype=np.float64)
            out[name][c] = interval_regions(labels, centre - half, centre + half)
    return out
