"""Proper scores and calibration of a Gaussian predictive on realised outcomes.

docs/design.md, "Scoring".

The predictive at point ``i`` is ``N(mu_i, v_i)`` with ``v_i`` the method's total variance
and ``y_i`` the realised outcome. ``Phi``/``phi`` are the standard normal cdf/pdf and
``z_i = (y_i - mu_i) / sqrt(v_i)``.

The scores of realised outcomes also take (R, N) arrays, R predictions (or subsets of
points) at once, and then return (R,) for what is a float for (N,) (``udora meta``
rescores thousands of subsets).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from udora.scoring._checks import rows, scalar, vectors

COVERAGE_LEVELS: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95)
INTERVAL_SCORE_LEVELS: tuple[float, ...] = (0.5, 0.9, 0.95)


def gaussian_nll(mean: np.ndarray, var: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Negative log density of ``y`` under ``N(mu, v)``: ``1/2 log(2 pi v) + (y - mu)^2 / (2 v)``.

    Args:
        mean: ``mu``, shape (N,).
        var: ``v``, shape (N,).
        y: outcomes, shape (N,).

    Returns:
        Per-point NLL, the inputs' shape ((N,) or (R, N)); NaN where ``v <= 0``.
    """
    mu, v, y = rows("gaussian_nll", mean=mean, var=var, y=y)
    with np.errstate(divide="ignore", invalid="ignore"):
        nll = 0.5 * np.log(2.0 * np.pi * v) + (y - mu) ** 2 / (2.0 * v)
    return np.where(v > 0, nll, np.nan)


def gaussian_crps(mean: np.ndarray, var: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Closed-form CRPS of ``N(mu, v)`` at ``y``.

    ``CRPS = sigma (z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi))`` with ``sigma = sqrt(v)``;
    at ``v = 0`` it is the limit ``|y - mu|``. Equals ``int (F(x) - 1{x >= y})^2 dx``.

    Args:
        mean: ``mu``, shape (N,).
        var: ``v``, shape (N,), non-negative.
        y: outcomes, shape (N,).

    Returns:
        Per-point CRPS, the inputs' shape ((N,) or (R, N)), in the units of ``y``; NaN
        where ``v < 0``.

    Reference: Gneiting, Raftery, Westveld and Goldman, "Calibrated probabilistic
    forecasting using ensemble model output statistics", Mon. Wea. Rev. 133 (2005), eq. 5.
    """
    mu, v, y = rows("gaussian_crps", mean=mean, var=var, y=y)
    pos = v > 0
    s = np.sqrt(np.where(pos, v, 1.0))
    z = (y - mu) / s
    pdf = np.exp(-0.5 * z**2) / np.sqrt(2.0 * np.pi)
    crps = s * (z * (2.0 * ndtr(z) - 1.0) + 2.0 * pdf - 1.0 / np.sqrt(np.pi))
    return np.where(pos, crps, np.where(v == 0, np.abs(y - mu), np.nan))


def pit(mean: np.ndarray, var: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Probability integral transform ``u_i = Phi((y_i - mu_i) / sqrt(v_i))``.

    Uniform on [0, 1] when the outcomes are drawn from the predictive.

    Args:
        mean: ``mu``, (N,).
        var: ``v``, (N,).
        y: the outcomes, (N,).

    Returns:
        ``u``, the inputs' shape ((N,) or (R, N)); NaN where ``v <= 0``.
    """
    mu, v, y = rows("pit", mean=mean, var=var, y=y)
    s = np.sqrt(np.where(v > 0, v, 1.0))
    return np.where(v > 0, ndtr((y - mu) / s), np.nan)


def interval_coverage(mean: np.ndarray, var: np.ndarray, y: np.ndarray, level: float) -> float:
    """Fraction of outcomes inside the central interval ``mu +- Phi^-1((1 + l)/2) sqrt(v)``.

    Args:
        mean: ``mu``, (N,) or (R, N).
        var: ``v``, the shape of ``mean``.
        y: the outcomes, the shape of ``mean``.
        level: ``l`` in (0, 1), e.g. 0.9.

    Returns:
        The empirical coverage as a float, (R,) for (R, N) inputs (``l`` when calibrated);
        NaN for N = 0.
    """
    mu, v, y = rows("interval_coverage", mean=mean, var=var, y=y)
    if not 0.0 < level < 1.0:
        raise ValueError(f"interval_coverage: `level` must lie in (0, 1), got {level}")
    if mu.shape[-1] == 0:
        return scalar(np.full(mu.shape[:-1], np.nan))
    half = ndtri(0.5 * (1.0 + level)) * np.sqrt(np.maximum(v, 0.0))
    return scalar(np.mean(np.abs(y - mu) <= half, axis=-1))


def interval_score(mean: np.ndarray, var: np.ndarray, y: np.ndarray, level: float) -> np.ndarray:
    """Interval (Winkler) score of the central interval ``[l, u] = mu -+ Phi^-1((1 + c)/2)
    sqrt(v)`` at level ``c``, ``alpha = 1 - c`` (Gneiting and Raftery 2007):
    ``(u - l) + (2 / alpha) ((l - y)_+ + (y - u)_+)``; lower is better.

    Args:
        mean: ``mu``, (N,).
        var: ``v``, (N,).
        y: the outcomes, (N,).
        level: ``c`` in (0, 1).

    Returns:
        Per-point scores, the inputs' shape ((N,) or (R, N)).
    """
    mu, v, y = rows("interval_score", mean=mean, var=var, y=y)
    if not 0.0 < level < 1.0:
        raise ValueError(f"interval_score: `level` must lie in (0, 1), got {level}")
    half = ndtri(0.5 * (1.0 + level)) * np.sqrt(np.maximum(v, 0.0))
    lo, hi = mu - half, mu + half
    alpha = 1.0 - level
    return (hi - lo) + (2.0 / alpha) * (np.maximum(lo - y, 0.0) + np.maximum(y - hi, 0.0))


def reliability_curve(u: np.ndarray, n_levels: int = 21) -> tuple[np.ndarray, np.ndarray]:
    """Observed frequency ``mean_i 1{u_i <= p}`` at nominal levels ``p`` on a uniform grid.

    Args:
        u: PIT values, shape (N,).
        n_levels: number of levels ``p = 0, 1/(L-1), ..., 1``.

    Returns:
        ``(levels, observed)``, each of shape (L,); the diagonal when calibrated.
    """
    (u,) = vectors("reliability_curve", u=u)
    levels = np.linspace(0.0, 1.0, n_levels)
    observed = np.mean(u[None, :] <= levels[:, None], axis=1) if u.size else levels * np.nan
    return levels, observed


def miscalibration_area(u: np.ndarray) -> float:
    """Area between the empirical cdf of the PIT and the diagonal, ``int_0^1 |F_n(p) - p| dp``.

    Computed exactly: ``F_n`` is the step function ``j/N`` between the sorted ``u``, and
    ``int_a^b |p - c| dp = G(b) - G(a)`` with ``G(x) = (x - c) |x - c| / 2``.

    Args:
        u: PIT values, shape (N,) or (R, N), in [0, 1].

    Returns:
        A float in [0, 1/2] ((R,) for (R, N)): 0 for a perfectly uniform PIT; NaN if N = 0
        or a value (of the row) is NaN.
    """
    (u,) = rows("miscalibration_area", u=u)
    n = u.shape[-1]
    if n == 0:
        return scalar(np.full(u.shape[:-1], np.nan))
    edge = np.ones((*u.shape[:-1], 1))
    knots = np.concatenate([edge - 1.0, np.sort(np.clip(u, 0.0, 1.0), axis=-1), edge], axis=-1)
    c = np.arange(n + 1) / n

    def g(x: np.ndarray) -> np.ndarray:
        return 0.5 * (x - c) * np.abs(x - c)

    area = np.sum(g(knots[..., 1:]) - g(knots[..., :-1]), axis=-1)
    return scalar(np.where(np.any(np.isnan(u), axis=-1), np.nan, area))


def pit_histogram(u: np.ndarray, n_bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Histogram of the PIT on ``n_bins`` equal bins of [0, 1], as a density (flat = 1).

    Args:
        u: PIT values, shape (N,).
        n_bins: number of bins ``B``.

    Returns:
        ``(edges, density)`` of shapes (B + 1,) and (B,); ``density_b = count_b B / N``.
    """
    (u,) = vectors("pit_histogram", u=u)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    counts, _ = np.histogram(u[np.isfinite(u)], bins=edges)
    total = counts.sum()
    density = counts * n_bins / total if total else np.full(n_bins, np.nan)
    return edges, density.astype(np.float64)
