"""Estimation / approximation split of a method's epistemic target (docs/diagnostics.md).

The source paper's Appendix B (Equations 27-32). With posterior draws ``g_i ~ p(f | S)``
(i = 1..M), the method's prediction ``f_S`` from the benchmark's training sample and a
reference ``r_i``, the same method refitted on a much larger sample from ``g_i``:

    Estim(x)  = 1/M sum_i [ (f_S(x) - g_i(x))^2 - (r_i(x) - g_i(x))^2 ]     (Eq. 31)
    Approx(x) = 1/M sum_i   (r_i(x) - g_i(x))^2                             (Eq. 32)

Their sum ``1/M sum_i (f_S(x) - g_i(x))^2`` is a Monte Carlo estimate of the squared-error
EU target ``s2_f(x) + (f_S(x) - m_S(x))^2``; :attr:`Decomposition.sum_check` compares the
two over the pool. Pointwise ``Estim`` may be negative; its pool mean estimates a
non-negative integrated error only when ``r_i`` is close to the best in class.

Standard errors are over draws: of a pointwise mean, ``sd_i / sqrt(M)``; of a pool mean,
the sd over draws of the per-draw pool means, over ``sqrt(M)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Decomposition", "decompose"]


def _mean_se(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over axis 0 and its standard error (nan for one draw); (M, ...) -> two (...)."""
    m = values.shape[0]
    se = values.std(axis=0, ddof=1) / np.sqrt(m) if m > 1 else np.full(values.shape[1:], np.nan)
    return values.mean(axis=0), se


@dataclass(frozen=True)
class Decomposition:
    """Pointwise contributions (N,) with their Monte Carlo standard errors (N,), and the
    per-draw pool means (M,) they summarise; original (squared target) units."""

    estimation: np.ndarray
    approximation: np.ndarray
    estimation_se: np.ndarray
    approximation_se: np.ndarray
    eu_target: np.ndarray  # s2_f + (f_S - m_S)^2, (N,)
    draw_estimation: np.ndarray  # (M,) pool mean of each draw's estimation term
    draw_approximation: np.ndarray  # (M,)

    @property
    def draws(self) -> int:
        return int(self.draw_estimation.shape[0])

    def pool_means(self, scale: float = 1.0) -> dict[str, float]:
        """Pool means of both contributions, their sum and the EU target, and the Monte
        Carlo standard errors, each divided by ``scale`` (e.g. the target variance)."""
        est, est_se = _mean_se(self.draw_estimation)
        app, app_se = _mean_se(self.draw_approximation)
        total, total_se = _mean_se(self.draw_estimation + self.draw_approximation)
        out = {
            "estimation": est,
            "estimation_se": est_se,
            "approximation": app,
            "approximation_se": app_se,
            "sum": total,
            "sum_se": total_se,
            "eu_target": float(self.eu_target.mean()),
        }
        return {k: float(v) / scale for k, v in out.items()}

    def sum_check(self) -> dict[str, float]:
        """Estimation + approximation against the exact EU target, pooled: the relative
        difference, its z-score (difference over the Monte Carlo standard error) and the
        two-sided p-value of z under Student's t with M - 1 degrees of freedom (the
        standard error is estimated from M per-draw means)."""
        means = self.pool_means()
        diff = means["sum"] - means["eu_target"]
        z = diff / means["sum_se"] if means["sum_se"] > 0 else float("nan")
        return {
            "relative_difference": diff / means["eu_target"],
            "z": z,
            "p": float(2.0 * stats.t.sf(abs(z), self.draws - 1)) if np.isfinite(z) else z,
        }

    def shares(self) -> dict[str, float]:
        """Shares of the pooled sum due to each contribution (they add up to one)."""
        means = self.pool_means()
        return {
            "estimation_share": means["estimation"] / means["sum"],
            "approximation_share": means["approximation"] / means["sum"],
        }


def decompose(
    f_hat: np.ndarray,
    draws: np.ndarray,
    references: np.ndarray,
    post_mean: np.ndarray,
    post_var: np.ndarray,
) -> Decomposition:
    """Equations 31-32 at every pool point.

    Args:
        f_hat: (N,) the method's mean prediction from the benchmark's training sample.
        draws: (M, N) posterior draws ``g_i`` over the pool.
        references: (M, N) the reference fits' mean predictions, ``r_i`` fitted to ``g_i``.
        post_mean, post_var: (N,) the exact posterior ``m_S`` and ``s2_f`` (for the target).

    Returns:
        :class:`Decomposition`.
    """
    f_hat = np.asarray(f_hat, dtype=np.float64)
    G = np.asarray(draws, dtype=np.float64)
    R = np.asarray(references, dtype=np.float64)
    if f_hat.ndim != 1:
        raise ValueError(f"decompose: f_hat must have shape (N,), got {f_hat.shape}")
    N = f_hat.shape[0]
    if G.ndim != 2 or G.shape[1] != N or R.shape != G.shape:
        raise ValueError(
            f"decompose: draws and references must both have shape (M, {N}); "
            f"got {G.shape} and {R.shape}"
        )
    for name, arr in (("f_hat", f_hat), ("draws", G), ("references", R)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"decompose: {name} has non-finite values")
    own = (f_hat[None, :] - G) ** 2  # (M, N)
    ref = (R - G) ** 2
    est, est_se = _mean_se(own - ref)
    app, app_se = _mean_se(ref)
    target = np.asarray(post_var, dtype=np.float64) + (f_hat - np.asarray(post_mean)) ** 2
    return Decomposition(
        estimation=est,
        approximation=app,
        estimation_se=est_se,
        approximation_se=app_se,
        eu_target=target,
        draw_estimation=(own - ref).mean(axis=1),
        draw_approximation=ref.mean(axis=1),
    )
