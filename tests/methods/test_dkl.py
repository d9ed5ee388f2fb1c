"""DKL with an identity feature map against a dense numpy GP with its fitted hyperparameters."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from method_tasks import make_task

from udora import methods


def rbf(A, B, variance, lengthscale):
    sq = np.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=-1)
    return variance * np.exp(-0.5 * sq / lengthscale**2)


def dense_gp(Z, y, Zt, variance, lengthscale, noise):
    """Mean, latent variance ``(m,)`` and log marginal likelihood, textbook numpy."""
    A = rbf(Z, Z, variance, lengthscale) + noise * np.eye(Z.shape[0])
    Kt = rbf(Zt, Z, variance, lengthscale)
    L = np.linalg.cholesky(A)
    alpha = np.linalg.solve(A, y)
    mean = Kt @ alpha
    latent = variance - np.sum(Kt * np.linalg.solve(A, Kt.T).T, axis=1)
    mll = -0.5 * y @ alpha - np.sum(np.log(np.diag(L))) - 0.5 * y.size * np.log(2 * np.pi)
    return mean, latent, mll


@pytest.fixture(scope="module")
def fitted():
    task = make_task(n=120)
    cfg = {"feature_map": "identity", "n_steps": 150, "warmup_steps": 10, "jitter": 0.0}
    x64_before = jax.config.jax_enable_x64
    method = methods.get_method("dkl", **cfg).fit(task.X, task.y, seed=0)
    assert jax.config.jax_enable_x64 == x64_before
    return method, task


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_identity_dkl_is_the_exact_gp(fitted):
    method, task = fitted
    sc = method.scaler_
    Z, Zt = sc.x(task.X), sc.x(np.vstack([task.X_near[:40], task.X_far[:40]]))
    mean, latent, _ = dense_gp(
        Z, sc.y(task.y), Zt, method.kernel_variance_, method.lengthscale_, method.noise_var_
    )
    pred = method.predict(np.vstack([task.X_near[:40], task.X_far[:40]]))
    np.testing.assert_allclose(pred.mean, sc.mean_back(mean), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pred.epistemic, sc.var_back(latent), rtol=1e-5, atol=1e-10)
    np.testing.assert_allclose(pred.aleatoric, sc.var_back(method.noise_var_), rtol=1e-12)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_identity_dkl_joint_covariance_is_the_exact_gps(fitted):
    method, task = fitted
    sc = method.scaler_
    batches = np.vstack([task.X_near[:20], task.X_far[:20]]).reshape(5, 8, -1).copy()
    batches[:, 7] = batches[:, 2]  # a repeated input
    joint = method.predict_joint(batches)
    Z, v, ls = sc.x(task.X), method.kernel_variance_, method.lengthscale_
    A = rbf(Z, Z, v, ls) + method.noise_var_ * np.eye(Z.shape[0])
    for b in range(5):
        Zb = sc.x(batches[b])
        Kb = rbf(Zb, Z, v, ls)
        cov = rbf(Zb, Zb, v, ls) - Kb @ np.linalg.solve(A, Kb.T)
        np.testing.assert_allclose(joint[b], sc.var_back(cov), rtol=1e-5, atol=1e-10)


def test_training_raises_the_marginal_likelihood(fitted):
    method, task = fitted
    sc = method.scaler_
    Z, ys = sc.x(task.X), sc.y(task.y)
    cfg = method.config
    *_, start = dense_gp(
        Z, ys, Z[:1], cfg.base_kernel_variance, cfg.base_kernel_lengthscale, cfg.noise_std**2
    )
    *_, end = dense_gp(
        Z, ys, Z[:1], method.kernel_variance_, method.lengthscale_, method.noise_var_
    )
    assert end > start + 10.0
    # mll_ is the full-data marginal likelihood at the final hyperparameters
    assert method.mll_ == pytest.approx(end, rel=1e-8)


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_minibatch_training_still_conditions_on_every_point():
    """Subset-of-data steps (b = 60 of 200): the fit raises the full-data likelihood, is
    seeded, and the prediction is the exact GP on all 200 points."""
    task = make_task(n=200)
    cfg = {"feature_map": "identity", "n_steps": 150, "warmup_steps": 10, "jitter": 0.0}
    method = methods.get_method("dkl", batch_size=60, **cfg).fit(task.X, task.y, seed=3)
    again = methods.get_method("dkl", batch_size=60, **cfg).fit(task.X, task.y, seed=3)
    other = methods.get_method("dkl", batch_size=60, **cfg).fit(task.X, task.y, seed=4)
    assert method.lengthscale_ == again.lengthscale_
    assert method.lengthscale_ != other.lengthscale_  # the seed picks the subsets
    sc = method.scaler_
    Z, ys = sc.x(task.X), sc.y(task.y)
    c = method.config
    *_, start = dense_gp(
        Z, ys, Z[:1], c.base_kernel_variance, c.base_kernel_lengthscale, c.noise_std**2
    )
    Xt = task.X_far[:30]
    mean, latent, end = dense_gp(
        Z, ys, sc.x(Xt), method.kernel_variance_, method.lengthscale_, method.noise_var_
    )
    assert end > start + 10.0
    assert method.mll_ == pytest.approx(end, rel=1e-8)
    pred = method.predict(Xt)
    np.testing.assert_allclose(pred.mean, sc.mean_back(mean), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pred.epistemic, sc.var_back(latent), rtol=1e-5, atol=1e-10)
