"""Scores for predictions made of K members or samples (docs/design.md, "Scoring").

``x_{k,i}`` is member ``k``'s mean at point ``i`` (K x N), ``xbar_i = (1/K) sum_k x_{k,i}``
the ensemble mean, ``s2_i = (1/(K-1)) sum_k (x_{k,i} - xbar_i)^2`` the member variance and
``s_i = sqrt(s2_i)`` the member spread. Every function needs K >= 2 and returns NaN
otherwise. Each also takes R predictions at once: members (K, R, N) and truth (R, N),
giving (R,) where one gives a float.
"""

from __future__ import annotations

import numpy as np

from udora.scoring._checks import members, rows, scalar
from udora.scoring.agreement import spearman


def _member_stats(fn: str, member_means: object, truth: object) -> tuple[np.ndarray, np.ndarray]:
    (t,) = rows(fn, truth=truth)
    return members(fn, "member_means", member_means, t.shape), t


def fair_crps_ensemble(member_means: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Fair (unbiased in K) CRPS of the ensemble of member means.

    ``CRPS_fair = (1/K) sum_k |x_k - y| - 1/(2 K (K-1)) sum_{j,k} |x_j - x_k|``, with the
    pair sum computed from the sorted members ``x_(1) <= ... <= x_(K)`` as
    ``sum_{j,k} |x_j - x_k| = 2 sum_m (2m - K - 1) x_(m)`` — O(K log K) per point.

    Args:
        member_means: ``x``, shape (K, N).
        truth: ``y``, shape (N,).

    Returns:
        Per-point fair CRPS, shape (N,) (all NaN when K < 2).

    Reference: Ferro, "Fair scores for ensemble forecasts", Q. J. R. Meteorol. Soc. 140
    (2014); the sorted form is the Gini mean difference identity.
    """
    x, y = _member_stats("fair_crps_ensemble", member_means, truth)
    k = x.shape[0]
    if k < 2:
        return np.full(y.shape, np.nan)
    skill = np.mean(np.abs(x - y[None]), axis=0)
    m = np.arange(1, k + 1, dtype=np.float64).reshape(-1, *([1] * y.ndim))
    pair_sum = 2.0 * np.sum((2.0 * m - k - 1.0) * np.sort(x, axis=0), axis=0)
    return skill - pair_sum / (2.0 * k * (k - 1))


def spread_skill_ratio(
    member_means: np.ndarray, truth: np.ndarray, aleatoric: np.ndarray | None = None
) -> float:
    """Spread-skill ratio with the finite-ensemble correction.

    ``SSR = sqrt( mean_i [(K+1)/K s2_i + a_i] / mean_i (xbar_i - y_i)^2 )``.
    With ``a = 0`` this is the usual ``sqrt((K+1)/K) * sqrt(mean s2) / RMSE``; it is 1 in
    expectation when the truth is exchangeable with the members. When the members predict
    a latent mean and ``y`` adds noise of variance ``a`` (realised outcomes), passing the
    predicted aleatoric variance ``a`` keeps the ratio 1 for a calibrated model.

    Args:
        member_means: ``x``, shape (K, N).
        truth: ``y``, shape (N,).
        aleatoric: ``a``, shape (N,), or None for zero.

    Returns:
        A float (> 1: overdispersed, < 1: overconfident); NaN if K < 2 or the error is zero.

    Reference: Fortin, Abaza, Anctil and Turcotte, "Why should ensemble spread match the
    RMSE of the ensemble mean?", J. Hydrometeorol. 15 (2014).
    """
    fn = "spread_skill_ratio"
    x, y = _member_stats(fn, member_means, truth)
    a = np.zeros_like(y) if aleatoric is None else rows(fn, truth=y, aleatoric=aleatoric)[1]
    k = x.shape[0]
    if k < 2 or y.shape[-1] == 0:
        return scalar(np.full(y.shape[:-1], np.nan))
    spread2 = np.mean((k + 1) / k * np.var(x, axis=0, ddof=1) + a, axis=-1)
    skill2 = np.mean((x.mean(axis=0) - y) ** 2, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return scalar(np.where(skill2 > 0, np.sqrt(spread2 / skill2), np.nan))


def error_spread_spearman(member_means: np.ndarray, truth: np.ndarray) -> float:
    """Spearman correlation of the member spread ``s_i`` with the error ``|xbar_i - y_i|``.

    Args:
        member_means: ``x``, shape (K, N).
        truth: ``y``, shape (N,).

    Returns:
        A float in [-1, 1]; NaN if K < 2 or the spread or error is constant.
    """
    x, y = _member_stats("error_spread_spearman", member_means, truth)
    if x.shape[0] < 2:
        return scalar(np.full(y.shape[:-1], np.nan))
    return spearman(np.std(x, axis=0, ddof=1), np.abs(x.mean(axis=0) - y))


def top_decile_error_ratio(member_means: np.ndarray, truth: np.ndarray) -> float:
    """Mean error of the most uncertain tenth over the mean error of all points.

    ``ratio = mean_{i in D} |xbar_i - y_i| / mean_i |xbar_i - y_i|`` with ``D`` the
    ``ceil(N/10)`` points of largest spread ``s_i`` (ties broken by index). Above 1 the
    spread flags large errors; 1 is what an uninformative spread gives on average.

    Args:
        member_means: ``x``, shape (K, N).
        truth: ``y``, shape (N,).

    Returns:
        A float; NaN if K < 2, N = 0 or every error is zero.
    """
    x, y = _member_stats("top_decile_error_ratio", member_means, truth)
    n = y.shape[-1]
    if x.shape[0] < 2 or n == 0:
        return scalar(np.full(y.shape[:-1], np.nan))
    err = np.abs(x.mean(axis=0) - y)
    spread = np.std(x, axis=0, ddof=1)
    top = np.argsort(-spread, axis=-1, kind="stable")[..., : -(-n // 10)]
    overall = err.mean(axis=-1)
    ratio = np.take_along_axis(err, top, axis=-1).mean(axis=-1) / np.where(overall > 0, overall, 1)
    return scalar(np.where(overall > 0, ratio, np.nan))
