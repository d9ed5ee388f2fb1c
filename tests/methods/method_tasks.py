"""Helpers for the method tests: the contract's synthetic task and hand-made GP prior
(:mod:`udora.methods.contract_task`), and a dense GP posterior computed independently."""

from __future__ import annotations

import numpy as np

from udora.methods.contract_task import HandPrior, Task, make_task, smooth_f

__all__ = ["HandPrior", "Task", "dense_gp_posterior", "make_task", "rbf_linear_gram", "smooth_f"]


def rbf_linear_gram(prior: HandPrior, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Dense ``(a, b)`` Gram of the hand prior's rbf + linear kernel (standardised inputs)."""
    rbf, lin = prior.kernel
    ls = np.asarray(rbf["lengthscale"])
    diff = (A[:, None, :] - B[None, :, :]) / ls
    return rbf["variance"] * np.exp(-0.5 * np.sum(diff**2, axis=-1)) + lin["variance"] * A @ B.T


def dense_gp_posterior(
    prior: HandPrior, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, full: bool = False
):
    """Textbook conditioning in float64 numpy: mean ``(m,)`` and latent variance ``(m,)``
    (``full``: the latent covariance ``(m, m)``).

    ``A = K_SS + diag(s^2)``, ``m_S = m + K_xS A^-1 (y - m)``, ``s2_f = k(x,x) - K_xS A^-1 K_Sx``,
    in standardised units, then mapped to original units.
    """
    x_mean, x_sd = prior.standardiser.x_mean, prior.standardiser.x_sd
    y_mean, y_sd = prior.standardiser.y_mean, prior.standardiser.y_sd
    Z = (X - x_mean) / x_sd
    Zt = (X_test - x_mean) / x_sd
    s = prior.noise_std(X) / y_sd
    A = rbf_linear_gram(prior, Z, Z) + np.diag(s**2)
    Kxs = rbf_linear_gram(prior, Zt, Z)
    resid = (y - y_mean) / y_sd - prior.mean_value
    mean = prior.mean_value + Kxs @ np.linalg.solve(A, resid)
    if full:
        cov = rbf_linear_gram(prior, Zt, Zt) - Kxs @ np.linalg.solve(A, Kxs.T)
        return y_mean + y_sd * mean, y_sd**2 * cov
    prior_var = np.diag(rbf_linear_gram(prior, Zt, Zt))
    var = prior_var - np.sum(Kxs * np.linalg.solve(A, Kxs.T).T, axis=1)
    return y_mean + y_sd * mean, y_sd**2 * var
