"""Per-point agreement of an estimate with its oracle target (docs/design.md, "Scoring").

An estimate ``e`` (N,) — a predictive mean, or an aleatoric, epistemic or total variance —
is compared with its oracle target ``t`` (N,) over the pool: the latent function ``f`` or
the posterior mean ``m_S`` for the mean; ``sigma_eps^2`` for AU; the EU target and its two
parts (posterior variance, squared bias) for EU; the posterior risk for the total.
Spearman's rank correlation is the primary score (Wizgall et al., §4): it asks whether a
method orders the points by the right amount of uncertainty, independently of scale.

Undefined values (a constant input, fewer than two points, a non-finite input) are NaN.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from udora.scoring._checks import all_finite, rows, vectors


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if x.shape[0] < 2 or not all_finite(x, y) or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    xc = x - x.mean()
    yc = y - y.mean()
    r = (xc @ yc) / np.sqrt((xc @ xc) * (yc @ yc))
    return float(np.clip(r, -1.0, 1.0))


def pearson(estimate: np.ndarray, target: np.ndarray) -> float:
    """Pearson's linear correlation of an estimate with its target.

    ``r = sum_i de_i dt_i / sqrt(sum_i de_i^2 sum_i dt_i^2)``, ``de = e - mean(e)``,
    ``dt = t - mean(t)``.

    Args:
        estimate: ``e``, shape (N,).
        target: ``t``, shape (N,).

    Returns:
        ``r`` in [-1, 1] as a float; NaN if either input is constant or non-finite, or N < 2.
    """
    e, t = vectors("pearson", estimate=estimate, target=target)
    return _pearson(e, t)


def spearman(estimate: np.ndarray, target: np.ndarray) -> float:
    """Spearman's rank correlation: Pearson's ``r`` of the mid-ranks (ties share their average).

    ``rho = r(rank(e), rank(t))``; unchanged by any strictly increasing transform of either.

    Args:
        estimate: ``e``, shape (N,), or (R, N) for R correlations (row by row).
        target: ``t``, the same shape.

    Returns:
        ``rho`` in [-1, 1] as a float ((R,) for (R, N)); NaN if either input is constant
        or non-finite, or N < 2.

    Reference: Spearman (1904); ``scipy.stats.spearmanr`` computes the same statistic.
    """
    e, t = rows("spearman", estimate=estimate, target=target)
    if e.ndim == 1:
        if not all_finite(e, t):
            return float("nan")
        return _pearson(rankdata(e), rankdata(t))
    return np.array([spearman(a, b) for a, b in zip(e, t, strict=True)])


def mse(estimate: np.ndarray, target: np.ndarray) -> float:
    """Mean squared difference ``mean_i (e_i - t_i)^2``.

    Args:
        estimate: ``e``, shape (N,).
        target: ``t``, shape (N,), in the same units as ``e``.

    Returns:
        A float (NaN for N = 0; non-finite inputs propagate).
    """
    e, t = vectors("mse", estimate=estimate, target=target)
    if e.shape[0] == 0:
        return float("nan")
    return float(np.mean((e - t) ** 2))


def scale_ratio(estimate: np.ndarray, target: np.ndarray) -> float:
    """Median ratio of estimate to target, ``median_i (e_i / t_i)`` over points with ``t_i > 0``.

    1 means the estimate has the target's typical scale; below 1 it underestimates.

    Args:
        estimate: ``e``, shape (N,).
        target: ``t``, shape (N,), in the same units as ``e``.

    Returns:
        A float; NaN if no target is positive or an input is non-finite.
    """
    e, t = vectors("scale_ratio", estimate=estimate, target=target)
    keep = t > 0
    if not keep.any() or not all_finite(e, t):
        return float("nan")
    return float(np.median(e[keep] / t[keep]))


def agreement(estimate: np.ndarray, target: np.ndarray, *, scale: bool = True) -> dict[str, float]:
    """Spearman, Pearson and, when ``scale`` (same units), MSE and scale ratio of ``e`` vs ``t``.

    Args:
        estimate: ``e``, shape (N,).
        target: ``t``, shape (N,).
        scale: also report ``mse`` and ``scale_ratio``; set False when ``e`` and ``t`` are
            in different units (e.g. a variance against a CRPS target).

    Returns:
        ``{"spearman", "pearson"[, "mse", "scale_ratio"]}`` as floats.
    """
    out = {"spearman": spearman(estimate, target), "pearson": pearson(estimate, target)}
    if scale:
        out["mse"] = mse(estimate, target)
        out["scale_ratio"] = scale_ratio(estimate, target)
    return out
