"""Risk-coverage curves against oracle targets and the normalised AURC (docs/design.md, "Scoring").

Order the N points by an estimate ``e``, most certain (smallest) first, and keep the first
``k``. The curve is the retained mean of the matching oracle target ``t`` at coverage k/N:

    R(k) = (1/k) sum_{j <= k} t_(j),        AURC = (1/N) sum_{k=1}^N R(k).

Tied estimates carry no order, so inside a group of ties every ``t`` is replaced by the
group's mean: the curve is the expectation over random tie-breaking, and a constant
estimate gives exactly the random baseline. A random order has ``E[R(k)] = mean(t)`` for
every ``k``, so ``AURC_random = mean(t)``; the oracle order sorts by ``t`` itself and gives
the smallest possible AURC. The normalised score

    nAURC = (AURC_random - AURC) / (AURC_random - AURC_oracle)

is 1 for the oracle order, 0 in expectation for a random one, negative when worse.
"""

from __future__ import annotations

import numpy as np

from udora.scoring._checks import all_finite, finite_rows, rows, vectors
from udora.scoring._order import sort_with_order


def risk_coverage_curve(estimate: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Coverage ``k/N`` and retained mean target ``R(k)`` for ``k = 1..N``, smallest ``e`` first.

    Args:
        estimate: ``e``, shape (N,); the ordering key (ties averaged, see the module doc).
        target: ``t``, shape (N,); the oracle quantity whose retained mean is tracked.

    Returns:
        ``(coverage, retained)``, each of shape (N,).
    """
    e, t = vectors("risk_coverage_curve", estimate=estimate, target=target)
    return _curve(e, t)


def _curve(e: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = e.shape[0]
    k = np.arange(1, n + 1, dtype=np.float64)
    if n == 0:
        return k, k
    order, e_sorted = sort_with_order(e)
    t_sorted = t[order]
    new = np.r_[True, e_sorted[1:] != e_sorted[:-1]]
    if new.all():  # no ties: every group is one point
        return k / n, np.cumsum(t_sorted) / k
    starts = np.flatnonzero(new)
    sizes = np.diff(np.r_[starts, n])
    group_means = np.add.reduceat(t_sorted, starts) / sizes
    retained = np.cumsum(np.repeat(group_means, sizes)) / k
    return k / n, retained


def aurc(estimate: np.ndarray, target: np.ndarray) -> float:
    """Area under the risk-coverage curve, ``AURC = (1/N) sum_k R(k)``.

    Args:
        estimate: ``e``, shape (N,).
        target: ``t``, shape (N,).

    Returns:
        A float in the units of ``t``; NaN for N = 0 or non-finite inputs.
    """
    e, t = vectors("aurc", estimate=estimate, target=target)
    if e.shape[0] == 0 or not all_finite(e, t):
        return float("nan")
    return float(np.mean(_curve(e, t)[1]))


def normalised_aurc(estimate: np.ndarray, target: np.ndarray) -> float | np.ndarray:
    """``nAURC = (AURC_random - AURC) / (AURC_random - AURC_oracle)``.

    ``AURC_random = mean(t)``; ``AURC_oracle`` is the AURC with ``t`` as its own ordering key.

    Args:
        estimate: ``e``, shape (N,), or (R, N) for R curves at once.
        target: ``t``, the same shape.

    Returns:
        A float ((R,) for (R, N)), at most 1 (1 = oracle order, 0 = random order on
        average); NaN if ``t`` is constant (every order is then the oracle's), N = 0, or
        an input is non-finite (per row).

    Reference: Geifman et al., "Bias-reduced uncertainty estimation for deep neural
    classifiers" (ICLR 2019) for AURC; the normalisation is udora's (docs/design.md, "Scoring").
    """
    e, t = rows("normalised_aurc", estimate=estimate, target=target)
    one = e.ndim == 1
    e, t = np.atleast_2d(e), np.atleast_2d(t)
    out = np.full(e.shape[0], np.nan)
    if e.shape[1] > 0:
        fine = finite_rows(e, t) & (np.ptp(t, axis=1) > 0)
        e, t = e[fine], t[fine]
        a, a_oracle = np.mean(_curves(e, t), axis=1), np.mean(_curves(t, t), axis=1)
        a_random = np.mean(t, axis=1)
        out[fine] = (a_random - a) / (a_random - a_oracle)
    return float(out[0]) if one else out


def _curves(e: np.ndarray, t: np.ndarray) -> np.ndarray:
    """:func:`_curve`'s retained means of each row, (R, N) from e, t (R, N): rows with ties
    one at a time, the others in one vectorised pass (the same numbers: one sort, one
    cumulative sum)."""
    n = e.shape[1]
    order, e_sorted = sort_with_order(e)
    tied = np.any(e_sorted[:, 1:] == e_sorted[:, :-1], axis=1)
    retained = np.cumsum(np.take_along_axis(t, order, axis=1), axis=1) / np.arange(1, n + 1)
    for i in np.flatnonzero(tied):
        retained[i] = _curve(e[i], t[i])[1]
    return retained
