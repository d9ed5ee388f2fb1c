"""FSP-Laplace: the function-space regulariser and the low-rank posterior against numpy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from method_tasks import make_task
from test_laplace import numpy_design

from udora import methods
from udora.methods.fsp_laplace import FunctionSpacePrior


def numpy_kernel(A, B, variance, lengthscale, linear):
    r = np.sqrt(np.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=-1)) * np.sqrt(3) / lengthscale
    return variance * (1 + r) * np.exp(-r) + linear * A @ B.T


def test_regulariser_is_the_gp_prior_quadratic_form():
    prior = FunctionSpacePrior(
        n_context=30, variance=0.8, lengthscale=0.7, linear=0.3, jitter=1e-3, head="standard"
    )
    lo, hi = jnp.asarray([-1.0, -2.0]), jnp.asarray([1.0, 0.5])
    args = {"lo": lo, "hi": hi, "weight": jnp.asarray(0.01)}

    def f(C):  # a "network" whose standard-head mean is sin(C_0) + C_1
        mean = jnp.sin(C[:, 0]) + C[:, 1]
        return jnp.stack([mean, jnp.zeros_like(mean)], axis=1)

    key = jax.random.key(7)
    got = float(prior(f, key, args))
    C = np.asarray(prior.context(jax.random.fold_in(key, 1), lo, hi), np.float64)
    assert np.all(C >= [-1.0, -2.0]) and np.all(C <= [1.0, 0.5])
    m = np.sin(C[:, 0]) + C[:, 1]
    K = numpy_kernel(C, C, 0.8, 0.7, 0.3) + 1e-3 * np.eye(30)
    expected = 0.5 * 0.01 * m @ np.linalg.solve(K, m)
    assert got == pytest.approx(expected, rel=2e-3)


@pytest.fixture(scope="module")
def fitted():
    task = make_task()
    cfg = {"width": 16, "blocks": 1, "n_epochs": 40, "n_members": 4000, "rank": 10}
    x64_before = jax.config.jax_enable_x64
    method = methods.get_method("fsp_laplace", **cfg).fit(task.X, task.y, seed=0)
    assert jax.config.jax_enable_x64 == x64_before
    return method, task


def _numpy_posterior(method, task, temperature):
    cfg = method.config
    params = jax.tree.map(lambda a: a[0], method.variables_)["params"]
    phi_c, _, _ = numpy_design(params, 1, method.context_)
    Z = method.scaler_.x(task.X)
    phi, mean, var = numpy_design(params, 1, Z)
    K = numpy_kernel(
        method.context_,
        method.context_,
        cfg.prior_variance,
        cfg.prior_lengthscale,
        cfg.prior_linear,
    ) + cfg.prior_jitter * np.eye(cfg.n_context)
    kappa, Q = np.linalg.eigh(K)
    S = np.linalg.pinv(phi_c) @ (Q[:, -cfg.rank :] * np.sqrt(kappa[-cfg.rank :]))
    s = method.fit_idx_
    G = phi[s].T @ (phi[s] / var[s, None])
    sigma = S @ np.linalg.inv(np.eye(cfg.rank) + S.T @ G @ S / temperature) @ S.T
    return sigma, phi, mean, var


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_low_rank_posterior_matches_numpy(fitted):
    method, task = fitted
    sigma, *_ = _numpy_posterior(method, task, method.temperature_)
    np.testing.assert_allclose(method.posterior_cov_, sigma, rtol=1e-2, atol=1e-3 * sigma.max())
    assert np.linalg.matrix_rank(method.posterior_cov_, tol=1e-8 * sigma.max()) <= 10


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_temperature_minimises_validation_nll_and_samples_match(fitted):
    method, task = fitted
    cfg = method.config
    v = method.val_idx_
    y = method.scaler_.y(task.y)
    temps = np.logspace(cfg.log_temperature_min, cfg.log_temperature_max, cfg.temperature_grid)
    nlls = []
    for t in temps:
        sigma, phi, mean, var = _numpy_posterior(method, task, t)
        total = var[v] + np.einsum("ip,pq,iq->i", phi[v], sigma, phi[v])
        nlls.append(np.mean(0.5 * (np.log(2 * np.pi * total) + (y[v] - mean[v]) ** 2 / total)))
    assert method.temperature_ == pytest.approx(temps[int(np.argmin(nlls))], rel=1e-6)
    sigma, *_ = _numpy_posterior(method, task, method.temperature_)
    params = jax.tree.map(lambda a: a[0], method.variables_)["params"]
    phi_x, _, _ = numpy_design(params, 1, method.scaler_.x(task.X_far[:50]))
    exact = method.scaler_.y_sd**2 * np.einsum("ip,pq,iq->i", phi_x, sigma, phi_x)
    # K = 4000 draws: relative sd of a sample variance ~ sqrt(2 / K) ~ 0.022
    np.testing.assert_allclose(method.predict(task.X_far[:50]).epistemic, exact, rtol=0.12)
