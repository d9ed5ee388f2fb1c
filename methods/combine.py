"""Combining K members (or K stochastic passes) into one Gaussian predictive.

For member predictives ``N(mu_k(x), v_k(x))``, k = 1..K (paper, Appendix D.4):
``mu = (1/K) sum_k mu_k``, aleatoric ``= (1/K) sum_k v_k``, epistemic
``= (1/K) sum_k (mu_k - mu)^2`` (the population variance of the member means, ddof 0),
so total = aleatoric + epistemic is the variance of the equally weighted mixture.
"""

from __future__ import annotations

import numpy as np

from udora.methods.base import Prediction
from udora.oracle.standardise import Standardiser


def combine_members(means: np.ndarray, variances: np.ndarray) -> Prediction:
    """One :class:`Prediction` from member means and variances, both ``(K, n)``.

    Returns mean, aleatoric, epistemic of shape ``(n,)`` and ``member_means`` ``(K, n)``.
    """
    means = np.asarray(means, dtype=np.float64)
    variances = np.asarray(variances, dtype=np.float64)
    if means.ndim != 2 or variances.shape != means.shape:
        raise ValueError(
            f"member means and variances must both be (K, n), got {means.shape} and "
            f"{variances.shape}"
        )
    mean = means.mean(axis=0)
    epistemic = np.mean((means - mean[None, :]) ** 2, axis=0)
    return Prediction(
        mean=mean,
        aleatoric=variances.mean(axis=0),
        epistemic=epistemic,
        member_means=means,
    )


def combine_standardised(
    means: np.ndarray, variances: np.ndarray, scaler: Standardiser
) -> Prediction:
    """:func:`combine_members` of ``(K, n)`` standardised-unit members, in original units."""
    return combine_members(scaler.mean_back(means), scaler.var_back(variances))
