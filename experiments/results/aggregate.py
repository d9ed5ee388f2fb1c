"""Statistics across datasets and methods: rank agreement and ablation slopes (docs/design.md)."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import kendalltau, rankdata

from udora.scoring._checks import all_finite, vectors


def kendall_w(scores: np.ndarray) -> float:
    """Kendall's coefficient of concordance W of m rankings of n items, tie-corrected.

    Each row is ranked (mid-ranks for ties); with column rank sums ``R_j``,
    ``S = sum_j (R_j - m (n+1)/2)^2`` and ``T = sum_rows sum_groups (t^3 - t)`` over the
    tie groups (sizes ``t``) of every row,

        W = 12 S / (m^2 (n^3 - n) - m T).

    Without ties the mean pairwise Spearman correlation of the rows is ``(m W - 1)/(m - 1)``.

    Args:
        scores: shape (m, n): rows are raters (datasets), columns the items (methods); only
            the order within a row matters, so any score direction works if it is the same
            for every row.

    Returns:
        W in [0, 1] as a float; NaN if m < 1, n < 2, a score is non-finite or every row is
        fully tied.

    Reference: Kendall and Babington Smith, "The problem of m rankings", Ann. Math.
    Statist. 10 (1939); for the tie correction, Siegel and Castellan, "Nonparametric
    Statistics for the Behavioral Sciences" (2nd ed., 1988).
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"kendall_w: `scores` must have shape (m, n), got shape {x.shape}")
    m, n = x.shape
    if m < 1 or n < 2 or not all_finite(x):
        return float("nan")
    ranks = rankdata(x, axis=1)
    s = float(np.sum((ranks.sum(axis=0) - m * (n + 1) / 2.0) ** 2))
    ties = 0.0
    for row in x:
        _, sizes = np.unique(row, return_counts=True)
        ties += float(np.sum(sizes.astype(np.float64) ** 3 - sizes))
    denom = m**2 * (n**3 - n) - m * ties
    return 12.0 * s / denom if denom > 0 else float("nan")


PAIRWISE_MAX = 200  # items up to which kendall_tau counts pairs directly


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's rank correlation tau-b of two scorings of the same items.

    ``tau_b = (C - D) / sqrt((P - X_0)(P - Y_0))`` with ``C``/``D`` the concordant/discordant
    pairs, ``P`` all pairs and ``X_0``/``Y_0`` the pairs tied in ``x``/``y``.

    Args:
        x, y: shape (n,) each.

    Returns:
        tau_b in [-1, 1] as a float; NaN if either input is constant, non-finite, or n < 2.

    Up to :data:`PAIRWISE_MAX` items the pair counts are summed directly (signs of all
    pairwise differences); past it, scipy's ``kendalltau`` (O(n log n)). Meta-evaluation
    ranks 5 to 20 configs some ten thousand times, where scipy's per-call overhead (about
    1 ms) was most of the time.

    Reference: Kendall, "The treatment of ties in ranking problems", Biometrika 33 (1945).
    """
    a, b = vectors("kendall_tau", x=x, y=y)
    if a.shape[0] < 2 or not all_finite(a, b) or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    if a.shape[0] <= PAIRWISE_MAX:
        upper = np.triu_indices(a.shape[0], k=1)
        sa = np.sign(a[:, None] - a[None, :])[upper]
        sb = np.sign(b[:, None] - b[None, :])[upper]
        return float(np.sum(sa * sb) / np.sqrt(np.count_nonzero(sa) * np.count_nonzero(sb)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(kendalltau(a, b, variant="b").statistic)


def kendall_tau_rows(x: np.ndarray, y: np.ndarray) -> list[float]:
    """:func:`kendall_tau` of each row of ``x`` (R, n) with ``y`` (n,), all finite, n up to
    :data:`PAIRWISE_MAX`, by the same pair counts in one vectorised pass; R floats."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.shape[0] == 0:
        return []
    n = y.shape[0]
    if n > PAIRWISE_MAX or n < 2:
        return [kendall_tau(row, y) for row in x]
    upper = np.triu_indices(n, k=1)
    sx = np.sign(x[:, :, None] - x[:, None, :])[:, upper[0], upper[1]]  # (R, pairs)
    sy = np.sign(y[:, None] - y[None, :])[upper]
    denominator = np.sqrt(np.count_nonzero(sx, axis=1) * np.count_nonzero(sy))
    with np.errstate(divide="ignore", invalid="ignore"):  # a constant row: NaN
        tau = np.where(denominator > 0, (sx @ sy) / denominator, np.nan)
    return [float(t) for t in tau]


def ols_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of ``y`` on ``x`` (with intercept) and its standard error.

    ``beta = S_xy / S_xx``, ``se = sqrt( sum_i r_i^2 / (n - 2) / S_xx )`` with centred sums
    ``S_xy = sum (x - xbar)(y - ybar)``, ``S_xx = sum (x - xbar)^2`` and residuals ``r``.

    Args:
        x: regressor, shape (n,) (e.g. an ablation's setting per run).
        y: response, shape (n,) (e.g. a metric per run).

    Returns:
        ``(slope, stderr)`` as floats; slope NaN if ``x`` is constant, stderr NaN if n < 3.
    """
    a, b = vectors("ols_slope", x=x, y=y)
    n = a.shape[0]
    if n < 2 or not all_finite(a, b) or np.ptp(a) == 0:
        return float("nan"), float("nan")
    xc = a - a.mean()
    yc = b - b.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ yc) / sxx
    if n < 3:
        return slope, float("nan")
    resid = yc - slope * xc
    return slope, float(np.sqrt(resid @ resid / (n - 2) / sxx))
