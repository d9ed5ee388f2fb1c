"""The exact projection form of a diagnosis, for the methods whose hypothesis class is
affine in the inputs (docs/diagnostics.md, "Two readings of Appendix B").

``blr`` and ``gp_linear`` predict ``y_mean + y_sd * phi(x_s)^T beta`` in their own
standardisation ``x_s = (x - x_mean) / x_sd`` of the training sample: with an intercept
(``blr`` with ``fit_intercept``, ``gp_linear`` with a ``constant`` mean) the class is every
affine function of ``x``; without one it is ``y_mean + (x - x_mean)^T beta``, the affine
functions through ``(x_mean, y_mean)``. :func:`affine_class` gives that class on the pool
as an offset and a basis; :func:`projection_part` applies
:func:`udora.scoring.projection.project` and sets it beside the Monte Carlo split. The
exact relation between the two forms (in-class share, finite-K remainder) holds for a
class with an intercept only: without one, every reference fit is anchored at its own
sample's means, a class other than the method's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from udora.oracle.standardise import Standardiser


def affine_class(
    method: str, config: Any, X_train: np.ndarray, y_train: np.ndarray, X_pool: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """``(offset (N,), basis (N, p), intercept)`` of ``method``'s class on the pool
    ``X_pool`` (N, d), or None for a method whose class is not affine (everything but blr
    and gp_linear)."""
    if method == "blr":
        intercept = config.fit_intercept
    elif method == "gp_linear":
        intercept = config.mean == "constant"
    else:
        return None
    N = X_pool.shape[0]
    if intercept:
        return np.zeros(N), np.hstack([np.ones((N, 1)), X_pool]), True
    own = Standardiser.fit(X_train, y_train)
    return np.full(N, own.y_mean), X_pool - own.x_mean, False


def projection_part(
    run: Any, task: Any, f_hat: np.ndarray, mc: Any, target_var: float
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The projection form of one diagnosis and its relation to the Monte Carlo split
    ``mc`` (:class:`udora.scoring.decomposition.Decomposition`): ``({}, {})`` for a method
    without an affine class, else the record part (pool means raw and normalised by
    ``target_var``, and ``finite_k``: the Monte Carlo approximation's pool mean minus what
    exact, noise-free references would give, with its standard error) and the pointwise
    arrays."""
    from udora.scoring.projection import project

    found = affine_class(run.method, run.config, task.X_train, task.y_train, task.X)
    if found is None:
        return {}, {}
    offset, basis, intercept = found
    proj = project(f_hat, task.post_mean, task.post_var, offset, basis, task.posterior_cov_times)
    means = proj.pool_means()
    if intercept:
        mc_means = mc.pool_means()
        part = {
            **means,
            "mc_estimation": mc_means["estimation"],
            "mc_approximation": mc_means["approximation"],
            "finite_k": mc_means["approximation"] - means["expected_mc_approximation"],
            "finite_k_se": mc_means["approximation_se"],
        }
    else:  # the references re-anchor at their own sample's means: another class
        part = {"estimation": means["estimation"], "approximation": means["approximation"]}
    record = {"pool_means": part, "normalised": {k: v / target_var for k, v in part.items()}}
    if not intercept:
        record["note"] = (
            "without an intercept the class passes through the training sample's means, "
            "while each reference fit passes through its own sample's: the Monte Carlo "
            "references fit another class, so its relation to the projection form "
            "(in-class share, finite-K remainder) is not computed"
        )
    arrays = {
        "projection_estimation": proj.estimation,
        "projection_approximation": proj.approximation,
    }
    if intercept:
        arrays["in_class_variance"] = proj.in_class_variance
    return record, arrays
