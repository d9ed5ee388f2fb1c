"""A textbook numpy GP posterior of a trial's fit part, written out for the tests of the
trials' oracle analysis (the tiny preset's one RBF component; optionally on warped
inputs, the `warped` ground truth)."""

from __future__ import annotations

import numpy as np

from udora.oracle.truths import warp


def dense_fit_part_posterior(task, fit_idx, warp_strength=None):
    """Posterior mean and latent variance (N,), original units, of ``f`` over the pool
    given the training rows ``fit_idx``, by dense solves on the written-out kernel."""
    (spec,) = task.prior.kernel
    ell = np.asarray(spec["lengthscale"], dtype=float)

    def rbf(A, B):
        if warp_strength is not None:
            A, B = warp(A, warp_strength), warp(B, warp_strength)
        sq = (((A[:, None, :] - B[None, :, :]) / ell) ** 2).sum(-1)
        return spec["variance"] * np.exp(-0.5 * sq)

    prior, std = task.prior, task.prior.standardiser
    Z, Zs = std.x(task.X), std.x(task.X_train[fit_idx])
    ys = std.y(np.asarray(task.y_train)[fit_idx])
    noise_sd = prior.noise_std(task.X_train[fit_idx]) / std.y_sd
    A = rbf(Zs, Zs) + np.diag(noise_sd**2)
    K_xs = rbf(Z, Zs)
    m = prior.mean_value
    post_mean = std.mean_back(m + K_xs @ np.linalg.solve(A, ys - m))
    prior_var = np.diag(rbf(Z, Z))
    post_var = std.var_back(prior_var - np.sum(K_xs * np.linalg.solve(A, K_xs.T).T, axis=1))
    return post_mean, post_var
