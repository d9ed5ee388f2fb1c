"""Prior-weighted utilities: decision-aligned proper scores for a Gaussian predictive.

A decision family ``U_theta`` and a prior ``pi`` over ``theta`` give the score
``M_pi = int -U_theta pi(theta) dtheta`` (Schneider, Rochussen, Stiller and Fortuin,
"Decision-Aligned Evaluation of Uncertainty Quantification", eq. 4); lower is better.
The predictive at point ``i`` is ``N(mu_i, v_i)`` with ``v_i`` the total variance.

Selective prediction (their §3.3.1, prior from Appendix I.4): predict when ``v_i <= lambda``
and pay the squared error ``l_i``, else abstain and pay ``lambda``; ``lambda = c t`` with
``t ~ Beta(2, 10)`` and ``c`` the variance of the evaluation outcomes.

Top-k selection with risk aversion (their §3.3.2): select the ``k`` points with the largest
``mu_i - gamma v_i`` and earn ``U = (1/k) sum_{selected} (y_i - gamma v_i)``;
``k/n ~ Beta(1.2, 20.8)``, ``gamma = t / sd(y)`` with ``t ~ Beta(2, 6)``, independent.

Oracle form: replacing the realised ``l_i = (mu_i - y_i)^2`` by the squared-error risk
``sigma_eps^2 + s2_f + (mu - m_S)^2`` and ``y_i`` by ``m_S`` gives the expected score under
the posterior predictive ``N(m_S, sigma_eps^2 + s2_f)`` (the decisions do not depend on y).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.polynomial.legendre import leggauss
from scipy.special import betainc
from scipy.stats import beta as beta_dist

from udora.scoring._checks import finite_rows, rows, scalar
from udora.scoring._order import sort_with_order

SELECTIVE_PRIOR: tuple[float, float] = (2.0, 10.0)
TOPK_FRACTION_PRIOR: tuple[float, float] = (1.2, 20.8)
TOPK_AVERSION_PRIOR: tuple[float, float] = (2.0, 6.0)


def selective_utility(
    loss: np.ndarray,
    total: np.ndarray,
    *,
    cost_scale: float,
    prior: tuple[float, float] = SELECTIVE_PRIOR,
) -> float:
    """Prior-weighted selective-prediction score, in closed form.

    ``M = mean_i [ l_i P(lambda >= v_i) + E[lambda 1{lambda < v_i}] ]``, ``lambda = c t``,
    ``t ~ Beta(a, b)``. With ``x_i = min(max(v_i / c, 0), 1)`` and ``I_x(a, b)`` the
    regularised incomplete beta function, ``P(lambda >= v_i) = 1 - I_{x_i}(a, b)`` and
    ``E[lambda 1{lambda < v_i}] = c a/(a+b) I_{x_i}(a+1, b)``.

    Args:
        loss: ``l``, shape (N,), or (R, N) for R scores at once: the realised
            ``(mu - y)^2``, or for the oracle form the squared-error risk target.
        total: ``v``, the same shape, the predictive total variance.
        cost_scale: ``c > 0``, the variance of the evaluation outcomes ((R,) for (R, N)).
        prior: ``(a, b)`` of the Beta prior on ``t``.

    Returns:
        ``M`` as a float ((R,) for (R, N)) in squared target units (lower is better); NaN
        if ``c`` is not positive and finite or an input is non-finite (per row).

    Reference: Schneider et al., §3.3.1 and Appendix I.4.
    """
    l, v = rows("selective_utility", loss=loss, total=total)
    a, b = prior
    c = np.broadcast_to(np.asarray(cost_scale, np.float64), l.shape[:-1])
    fine = np.isfinite(c) & (c > 0) & finite_rows(l, v) & (l.shape[-1] > 0)
    c = np.where(fine, c, 1.0)[..., None]
    x = np.clip(v / c, 0.0, 1.0)
    p_predict = 1.0 - betainc(a, b, x)
    abstain_cost = c * a / (a + b) * betainc(a + 1.0, b, x)
    with np.errstate(invalid="ignore"):  # N = 0: the mean of nothing, NaN as said
        score = np.mean(l * p_predict + abstain_cost, axis=-1)
    return scalar(np.where(fine, score, np.nan))


@lru_cache(maxsize=16)
def _rank_weights(n: int, prior: tuple[float, float]) -> np.ndarray:
    """``W_r = sum_{k >= r} w_k / k``, (n,), read-only: the weight of the r-th selected
    point's gain in ``sum_k w_k U_k`` (:func:`topk_utility`)."""
    w = topk_weights(n, prior) / np.arange(1, n + 1)
    W = np.cumsum(w[::-1])[::-1]
    W.setflags(write=False)
    return W


def topk_weights(n: int, prior: tuple[float, float] = TOPK_FRACTION_PRIOR) -> np.ndarray:
    """Prior mass of each ``k = 1..n`` when ``k = ceil(n u)``, ``u ~ Beta(a, b)``.

    ``w_k = I_{k/n}(a, b) - I_{(k-1)/n}(a, b)``.

    Args:
        n: number of candidate points.
        prior: ``(a, b)`` of the Beta prior on the fraction ``u = k/n``.

    Returns:
        ``w``, shape (n,), summing to 1.
    """
    return np.diff(betainc(prior[0], prior[1], np.arange(n + 1) / n))


@lru_cache(maxsize=8)
def _aversion_nodes(n_nodes: int, prior: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes ``t`` on [0, 1] and weights ``q`` times the Beta density, each
    (n_nodes,), read-only. Cached: computing them took most of a call on small pools."""
    x, wq = leggauss(n_nodes)
    t = 0.5 * (x + 1.0)
    q = 0.5 * wq * beta_dist.pdf(t, *prior)
    t.setflags(write=False)
    q.setflags(write=False)
    return t, q


def topk_utility(
    mean: np.ndarray,
    total: np.ndarray,
    value: np.ndarray,
    *,
    outcome_sd: float,
    fraction_prior: tuple[float, float] = TOPK_FRACTION_PRIOR,
    aversion_prior: tuple[float, float] = TOPK_AVERSION_PRIOR,
    n_nodes: int = 64,
) -> float:
    """Prior-weighted top-k selection score with risk aversion.

    ``M = - sum_j q_j sum_{k=1}^n w_k U_k(gamma_j)``, where for ``gamma = t / sd(y)`` the
    points are sorted by ``mu_i - gamma v_i`` (largest first, ties by index) and
    ``U_k(gamma) = (1/k) sum_{first k} (value_i - gamma v_i)``. The sum over ``k`` is exact
    with the weights of :func:`topk_weights`; ``(t_j, q_j)`` are Gauss-Legendre nodes on
    [0, 1] times the Beta density of ``t``. ``U`` is piecewise linear in ``t`` with jumps where
    the selection changes, so the quadrature is accurate to about ``1/n_nodes`` of the jumps.

    Args:
        mean: ``mu``, shape (N,), or (R, N) for R selections at once.
        total: ``v``, the same shape.
        value: the same shape: realised ``y``, or the posterior mean ``m_S`` for the oracle
            form.
        outcome_sd: ``sd(y) > 0`` of the evaluation outcomes ((R,) for (R, N) inputs).
        fraction_prior: ``(a, b)`` of the Beta prior on ``k/n``.
        aversion_prior: ``(a, b)`` of the Beta prior on ``t``.
        n_nodes: number of Gauss-Legendre nodes.

    Returns:
        ``M`` as a float ((R,) for (R, N)) in target units (lower is better); NaN if
        ``sd(y)`` is not positive and finite, N = 0, or an input is non-finite (per row).

    Reference: Schneider et al., §3.3.2 and Appendix I.4.
    """
    mu, v, val = rows("topk_utility", mean=mean, total=total, value=value)
    n = mu.shape[-1]
    sd = np.broadcast_to(np.asarray(outcome_sd, np.float64), mu.shape[:-1])
    fine = np.isfinite(sd) & (sd > 0) & finite_rows(mu, v, val) & (n > 0)
    if n == 0 or not np.any(fine):
        return scalar(np.full(mu.shape[:-1], np.nan))
    t, q = _aversion_nodes(n_nodes, tuple(aversion_prior))
    # The key is -(mu - gamma v) (largest first); the gain value - gamma v is
    # (value - mu) - key, so the sorted gains need the order only for value - mu.
    mu, v, val = (np.atleast_2d(a) for a in (mu, v, val))  # rows (R, n)
    gamma = t / np.where(fine, sd, 1.0).reshape(-1, 1)  # (R, n_nodes)
    key = gamma[:, :, None] * v[:, None, :] - mu[:, None, :]  # (R, n_nodes, n)
    order, keys = (a.reshape(key.shape) for a in sort_with_order(key.reshape(-1, n)))
    gains = np.take_along_axis(np.broadcast_to((val - mu)[:, None, :], key.shape), order, -1)
    # sum_k w_k U_k = sum_r gain_(r) W_r with W_r = sum_{k >= r} w_k / k
    W = _rank_weights(n, tuple(fraction_prior))
    score = np.where(fine, -((gains @ W - keys @ W) @ q), np.nan)
    return scalar(score[0] if fine.ndim == 0 else score)
