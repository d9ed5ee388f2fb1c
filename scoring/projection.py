"""The exact projection form of Appendix B for a linear hypothesis class (docs/diagnostics.md).

Under squared error the integrated posterior risk of a predictor ``f`` over the pool (the
measure ``mu`` of Equation 27: each pool point weight 1/N) is
``mean_x[(f(x) - m_S(x))^2 + s2_f(x)] + mean_x sigma^2(x)``, so the best in a class ``F``
(Equation 28) is the pool least-squares projection of the posterior mean onto ``F``. For
the affine class ``F = {c + B beta}`` (an offset ``c`` and a basis ``B`` (N, p) on the
pool), with ``P`` the orthogonal projection onto span ``B``:

    f_F = c + P (m_S - c),
    Estim(x)  = (f_S(x) - m_S(x))^2 - (f_F(x) - m_S(x))^2,        (Equation 30, exact)
    Approx(x) = (f_F(x) - m_S(x))^2 + s2_f(x),

which add up to the EU target ``s2_f + (f_S - m_S)^2`` at every point; their pool means
are the non-negative integrated errors of Equation 29 whenever ``f_S`` lies in ``F``.

The Monte Carlo form (Equations 31-32) with references fitted to posterior draws ``g``
splits differently. If each reference were the exact projection ``c + P (g - c)`` (an
infinite, noise-free reference sample), its expected approximation term would be
``(f_F - m_S)^2 + [(I - P) C (I - P)]_xx`` (``C`` the posterior covariance over the pool):
smaller than the exact one by ``[P C + C P - P C P]_xx``, whose pool mean is the in-class
share of the posterior variance, ``tr(P C P) / N``; the Monte Carlo estimation term is
larger by the same amount. A real reference sample (``K n`` noisy points) adds a
finite-K term on top. :func:`project` computes all three exactly from ``C`` applied to
the class's orthonormal basis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Projection", "project"]


@dataclass(frozen=True)
class Projection:
    """Pointwise (N,) parts of the projection form and of its Monte Carlo counterpart."""

    best: np.ndarray  # f_F
    estimation: np.ndarray
    approximation: np.ndarray
    in_class_variance: np.ndarray  # [P C + C P - P C P]_xx
    expected_mc_approximation: np.ndarray  # approximation - in_class_variance

    def pool_means(self, scale: float = 1.0) -> dict[str, float]:
        """Pool means of the parts, each divided by ``scale`` (e.g. the target variance):
        ``estimation``, ``approximation``, ``in_class_variance`` (= tr(P C P) / N) and
        ``expected_mc_approximation``."""
        names = ("estimation", "approximation", "in_class_variance", "expected_mc_approximation")
        return {n: float(np.mean(getattr(self, n))) / scale for n in names}


def project(
    f_hat: np.ndarray,
    post_mean: np.ndarray,
    post_var: np.ndarray,
    offset: np.ndarray,
    basis: np.ndarray,
    cov_times: Callable[[np.ndarray], np.ndarray],
) -> Projection:
    """The projection form for the class ``{offset + basis beta}`` (module doc).

    Args:
        f_hat: (N,) the method's mean on the pool (a member of the class).
        post_mean, post_var: (N,) the exact posterior ``m_S`` and ``s2_f``.
        offset: (N,) the class's fixed part on the pool; basis: (N, p) its free directions.
        cov_times: ``V (N, q) -> C V (N, q)``, the posterior covariance over the pool applied
            to columns (same units as ``post_var``).

    Returns:
        :class:`Projection`.
    """
    m = np.asarray(post_mean, dtype=np.float64)
    N = m.shape[0]
    basis = np.asarray(basis, dtype=np.float64).reshape(N, -1)
    norms = np.linalg.norm(basis, axis=0)
    Q, R = np.linalg.qr(basis / np.where(norms > 0, norms, 1.0))  # the same span, unit columns
    Q = Q[:, np.abs(np.diag(R)) > 1e-10 * max(1.0, float(np.abs(np.diag(R)).max()))]
    c = np.asarray(offset, dtype=np.float64)
    best = c + Q @ (Q.T @ (m - c))
    own = (np.asarray(f_hat, dtype=np.float64) - m) ** 2
    gap = (best - m) ** 2
    CQ = np.asarray(cov_times(Q), dtype=np.float64)  # (N, p)
    inner = Q.T @ CQ  # Q^T C Q, (p, p)
    in_class = 2.0 * np.sum(Q * CQ, axis=1) - np.sum((Q @ inner) * Q, axis=1)
    approximation = gap + np.asarray(post_var, dtype=np.float64)
    return Projection(best, own - gap, approximation, in_class, approximation - in_class)
