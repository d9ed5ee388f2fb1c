"""blr against the function-space form of the same model (an independent dense solve)."""

from __future__ import annotations

import numpy as np
import pytest

from udora import methods


def _function_space(Phi, y, Phi_test, alpha, sigma):
    """GP with kernel ``phi^T phi' / alpha`` and noise sigma^2: mean and latent variance."""
    K = Phi @ Phi.T / alpha + sigma**2 * np.eye(Phi.shape[0])
    k_star = Phi_test @ Phi.T / alpha
    mean = k_star @ np.linalg.solve(K, y)
    var = np.sum(Phi_test**2, axis=1) / alpha - np.sum(k_star * np.linalg.solve(K, k_star.T).T, 1)
    return mean, var


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_blr_equals_dense_function_space_posterior(fit_intercept):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3)) * [1.0, 5.0, 0.1] + [0.0, 3.0, -2.0]
    y = X @ np.array([1.0, -0.3, 4.0]) + 2.0 + 0.3 * rng.standard_normal(60)
    X_test = rng.normal(size=(25, 3)) * 3.0
    alpha, sigma = 0.7, 0.3
    blr = methods.get_method("blr", alpha=alpha, sigma=sigma, fit_intercept=fit_intercept)
    pred = blr.fit(X, y, seed=0).predict(X_test)

    x_mean, x_sd, y_mu, y_sd = X.mean(0), X.std(0), y.mean(), y.std()

    def design(A):
        Z = (A - x_mean) / x_sd
        return np.hstack([Z, np.ones((len(A), 1))]) if fit_intercept else Z

    mean, var = _function_space(design(X), (y - y_mu) / y_sd, design(X_test), alpha, sigma)
    np.testing.assert_allclose(pred.mean, y_mu + y_sd * mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(pred.epistemic, y_sd**2 * var, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(pred.aleatoric, y_sd**2 * sigma**2, rtol=1e-12)


def test_blr_ignores_the_seed_and_recovers_a_linear_law():
    rng = np.random.default_rng(6)
    X = rng.uniform(-2, 2, size=(400, 2))
    y = 3.0 * X[:, 0] - X[:, 1] + 1.0 + 0.01 * rng.standard_normal(400)
    a = methods.get_method("blr", alpha=1e-4, sigma=0.01).fit(X, y, seed=0)
    b = methods.get_method("blr", alpha=1e-4, sigma=0.01).fit(X, y, seed=99)
    X_test = np.array([[0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_array_equal(a.predict(X_test).mean, b.predict(X_test).mean)
    np.testing.assert_allclose(a.predict(X_test).mean, [1.0, 3.0], atol=5e-3)


def test_blr_joint_covariance_is_the_dense_function_space_covariance():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(50, 2)) * [2.0, 0.5]
    y = X @ np.array([0.7, -1.0]) + 0.2 * rng.standard_normal(50)
    alpha, sigma = 0.5, 0.4
    blr = methods.get_method("blr", alpha=alpha, sigma=sigma).fit(X, y, seed=0)
    batches = rng.normal(size=(4, 6, 2))
    batches[:, 3] = batches[:, 0]  # a repeated input, as in a dyadic batch
    joint = blr.predict_joint(batches)
    x_mean, x_sd, y_sd = X.mean(0), X.std(0), y.std()

    def design(A):
        return np.hstack([(A - x_mean) / x_sd, np.ones((len(A), 1))])

    Phi = design(X)
    K = Phi @ Phi.T / alpha + sigma**2 * np.eye(50)
    for b in range(4):
        P = design(batches[b])
        k_star = P @ Phi.T / alpha
        cov = P @ P.T / alpha - k_star @ np.linalg.solve(K, k_star.T)
        np.testing.assert_allclose(joint[b], y_sd**2 * cov, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(
        np.diagonal(joint, axis1=1, axis2=2).ravel(),
        blr.predict(batches.reshape(-1, 2)).epistemic,
        rtol=1e-10,
    )
