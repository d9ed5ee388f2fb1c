"""Exact joint predictives: one covariance over a batch's distinct inputs, indexed per
batch (docs/adding_a_method.md, "Joint predictions").

A method with a closed-form posterior over its mean function implements
``predict_joint(X (B, tau, d)) -> (B, tau, tau)`` with :func:`over_batches`: the batches'
distinct rows are gathered once (a dyadic batch repeats its two inputs), the method's
covariance is computed over them in one call, and each batch reads its block. Repeated
inputs get identical rows and columns: the epistemic covariance of the same ``f(x)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def over_batches(X: np.ndarray, covariance: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``covariance`` (distinct inputs ``U`` (u, d) -> (u, u)) at the batches ``X``
    (B, tau, d), returned per batch: (B, tau, tau), symmetrised."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 3:
        raise ValueError(f"predict_joint: expected batches of shape (B, tau, d), got {X.shape}")
    B, tau, d = X.shape
    U, inverse = np.unique(X.reshape(B * tau, d), axis=0, return_inverse=True)
    C = np.asarray(covariance(U), dtype=np.float64)
    if C.shape != (U.shape[0], U.shape[0]):
        raise ValueError(
            f"predict_joint: the covariance has shape {C.shape}, expected {(U.shape[0],) * 2}"
        )
    C = 0.5 * (C + C.T)
    inverse = inverse.reshape(B, tau)
    return C[inverse[:, :, None], inverse[:, None, :]]
