"""Last-layer Laplace against a dense numpy posterior of the last layer.

The backbone is re-run in float64 numpy from the fitted variables (tanh, no norm), so
``Phi`` and ``s^2`` are computed apart from the flax/laplax code under test.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from method_tasks import make_task

from udora import methods


def numpy_design(variables: dict, blocks: int, X: np.ndarray):
    """``Phi = (h_L, 1)`` ``(m, H + 1)``, MAP mean and variance ``(m,)`` of a standard head."""
    p = {k: {n: np.asarray(a, np.float64) for n, a in v.items()} for k, v in variables.items()}

    def dense(i, h):
        return h @ p[f"Dense_{i}"]["kernel"] + p[f"Dense_{i}"]["bias"]

    h = np.tanh(dense(0, X))
    for b in range(blocks):
        u = np.tanh(dense(1 + 2 * b, h))
        h = np.tanh(dense(2 + 2 * b, u) + h)
    out = dense(1 + 2 * blocks, h)
    var = (np.logaddexp(0.0, out[:, 1]) + 1e-6) ** 2
    return np.hstack([h, np.ones((h.shape[0], 1))]), out[:, 0], var


def dense_posterior(phi, var, prior_prec, temperature):
    """``Sigma = (Phi^T diag(1/s^2) Phi / T + lambda I)^-1`` in numpy."""
    precision = phi.T @ (phi / var[:, None]) / temperature + prior_prec * np.eye(phi.shape[1])
    return np.linalg.inv(precision)


def val_nll(phi, mean, var, y, prior_prec, temperature, phi_s, var_s):
    sigma = dense_posterior(phi_s, var_s, prior_prec, temperature)
    total = var + np.einsum("ip,pq,iq->i", phi, sigma, phi)
    return np.mean(0.5 * (np.log(2 * np.pi * total) + (y - mean) ** 2 / total))


@pytest.fixture(scope="module")
def fitted():
    task = make_task()
    x64_before = jax.config.jax_enable_x64
    cfg = {
        "width": 16,
        "blocks": 1,
        "n_epochs": 40,
        "n_members": 4000,
        "prior_prec_grid": 60,
        "val_fraction": 0.5,
    }
    method = methods.get_method("laplace", **cfg).fit(task.X, task.y, seed=6)
    assert jax.config.jax_enable_x64 == x64_before, "fit must not flip the float64 flag"
    variables = jax.tree.map(lambda a: a[0], method.variables_)["params"]
    Z = method.scaler_.x(task.X)
    phi, mean, var = numpy_design(variables, 1, Z)
    return method, task, phi, mean, var, Z


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_posterior_covariance_is_the_dense_last_layer_posterior(fitted):
    method, _, phi, _, var, _ = fitted
    s = method.fit_idx_
    sigma = dense_posterior(phi[s], var[s], method.prior_prec_, method.temperature_)
    np.testing.assert_allclose(method.posterior_cov_, sigma, rtol=2e-3, atol=1e-6 * sigma.max())


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_prior_precision_and_temperature_minimise_the_validation_nll(fitted):
    method, task, phi, mean, var, _ = fitted
    s, v = method.fit_idx_, method.val_idx_
    y = method.scaler_.y(task.y)
    cfg = method.config
    args = (phi[v], mean[v], var[v], y[v])
    lams = np.logspace(cfg.log_prior_prec_min, cfg.log_prior_prec_max, cfg.prior_prec_grid)
    nll_lam = [val_nll(*args, lam, 1.0, phi[s], var[s]) for lam in lams]
    assert method.prior_prec_ == pytest.approx(lams[int(np.argmin(nll_lam))], rel=1e-6)
    # In this setting (seed 6, half the data for V) the optimum lies inside the grid, so
    # the posterior is not collapsed and the checks below compare a non-trivial Sigma.
    assert lams[0] < method.prior_prec_ < lams[-1]
    temps = np.logspace(cfg.log_temperature_min, cfg.log_temperature_max, cfg.temperature_grid)
    nll_t = [val_nll(*args, method.prior_prec_, t, phi[s], var[s]) for t in temps]
    assert method.temperature_ == pytest.approx(temps[int(np.argmin(nll_t))], rel=1e-6)


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_sampled_epistemic_variance_matches_the_closed_form(fitted):
    method, task, phi, _, var, _ = fitted
    s = method.fit_idx_
    sigma = dense_posterior(phi[s], var[s], method.prior_prec_, method.temperature_)
    for X in (task.X_near[:50], task.X_far[:50]):
        phi_x, mean_x, var_x = numpy_design(
            jax.tree.map(lambda a: a[0], method.variables_)["params"], 1, method.scaler_.x(X)
        )
        pred = method.predict(X)
        y_var = method.scaler_.y_sd**2
        exact = y_var * np.einsum("ip,pq,iq->i", phi_x, sigma, phi_x)
        # K = 4000 draws: the sample variance has relative sd sqrt(2 / K) ~ 0.022
        np.testing.assert_allclose(pred.epistemic, exact, rtol=0.12)
        np.testing.assert_allclose(pred.aleatoric, y_var * var_x, rtol=1e-4)
        np.testing.assert_allclose(
            pred.mean, method.scaler_.mean_back(mean_x), atol=0.1 * np.sqrt(exact.max())
        )
