"""Targets against Monte Carlo by Matheron's rule and against quadrature of the expected loss."""

import jax
import numpy as np
import pytest
from numpy_kernels import numpy_sum_kernel
from scipy.stats import norm

from udora.oracle.gp import Conditioner
from udora.oracle.kernels import build_kernel
from udora.oracle.targets import posterior_targets

COMPS = [{"type": "matern52", "variance": 1.2, "lengthscale": [0.9, 1.6]}]


def crps_gaussian(mu, v, y):
    """Closed-form CRPS of N(mu, v) at y (Gneiting & Raftery 2007)."""
    s = np.sqrt(v)
    z = (y - mu) / s
    return s * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / np.sqrt(np.pi))


def nll_gaussian(mu, v, y):
    return 0.5 * np.log(2 * np.pi * v) + (y - mu) ** 2 / (2 * v)


@pytest.fixture(scope="module")
def posterior_draws():
    """Exact posterior draws at 8 points by Matheron's rule from joint numpy prior draws."""
    rng = np.random.default_rng(11)
    Z_S, Z = rng.normal(size=(12, 2)), rng.normal(size=(8, 2)) * 1.5
    noise_S, noise = rng.uniform(0.05, 0.3, 12), rng.uniform(0.05, 0.4, 8)
    y_S = rng.normal(size=12)
    both = np.concatenate([Z_S, Z])
    L = np.linalg.cholesky(numpy_sum_kernel(COMPS, both, both) + 1e-12 * np.eye(20))
    M = 200_000
    prior = rng.standard_normal((M, 20)) @ L.T
    f_S, f_x = prior[:, :12], prior[:, 12:]
    eps_S = rng.standard_normal((M, 12)) * np.sqrt(noise_S)
    A = numpy_sum_kernel(COMPS, Z_S, Z_S) + np.diag(noise_S)
    gain = np.linalg.solve(A, numpy_sum_kernel(COMPS, Z_S, Z)).T  # (8, 12)
    f_post = f_x + (y_S - f_S - eps_S) @ gain.T
    y_new = f_post + rng.standard_normal((M, 8)) * np.sqrt(noise)
    with jax.enable_x64(True):
        kernel = build_kernel(COMPS, 2)
    m, s2f = Conditioner.fit(kernel, Z_S, y_S, noise_S, 0.0).predict(Z)
    return {"f": f_post, "y": y_new, "m": m, "s2f": s2f, "noise": noise}


def _predictor(m):
    rng = np.random.default_rng(12)
    mu = m + rng.normal(scale=0.4, size=m.shape)
    return mu, rng.uniform(0.05, 0.3, m.shape), rng.uniform(0.0, 0.5, m.shape)


@pytest.mark.parametrize(
    "loss",
    [
        ("squared", lambda mu, v, y: (mu - y) ** 2),
        ("crps", crps_gaussian),
        ("nll", nll_gaussian),
    ],
    ids=["squared", "crps", "nll"],
)
def test_risk_and_au_match_monte_carlo(posterior_draws, loss):
    name, fn = loss
    p = posterior_draws
    mu, a, e = _predictor(p["m"])
    t = posterior_targets(
        mu, a, e, post_mean=p["m"], post_var=p["s2f"], noise_var=p["noise"], loss=name
    )
    losses = fn(mu, a + e, p["y"])  # (M, 8) losses of the fixed predictor
    se = losses.std(axis=0) / np.sqrt(losses.shape[0])
    assert np.all(np.abs(losses.mean(axis=0) - t.risk) < 5 * se), name
    bayes = fn(p["f"], p["noise"], p["y"])  # a forecaster that knows f: the AU row
    se = bayes.std(axis=0) / np.sqrt(bayes.shape[0])
    assert np.all(np.abs(bayes.mean(axis=0) - t.au) < 5 * se), name
    # the posterior moments of the draws agree with the closed form
    np.testing.assert_allclose(p["f"].mean(axis=0), p["m"], atol=5 * np.sqrt(p["s2f"].max() / 2e5))
    np.testing.assert_allclose(p["f"].var(axis=0), p["s2f"], rtol=0.02)


@pytest.mark.parametrize("name", ["squared", "crps", "nll"])
def test_au_plus_eu_is_expected_loss_under_posterior_predictive(name):
    """Gauss-Hermite quadrature of E_{y ~ N(m_S, S2)} loss(N(mu, v), y), to 1e-10."""
    rng = np.random.default_rng(13)
    m, s2f, se2 = rng.normal(size=20), rng.uniform(0.01, 1, 20), rng.uniform(0.01, 1, 20)
    mu, a, e = m + rng.normal(size=20), rng.uniform(0.01, 1, 20), rng.uniform(0, 1, 20)
    nodes, weights = np.polynomial.hermite_e.hermegauss(120)
    y = m[:, None] + np.sqrt(s2f + se2)[:, None] * nodes
    fn = {
        "squared": lambda: (mu[:, None] - y) ** 2,
        "crps": lambda: crps_gaussian(mu[:, None], (a + e)[:, None], y),
        "nll": lambda: nll_gaussian(mu[:, None], (a + e)[:, None], y),
    }[name]
    expected = fn() @ weights / np.sqrt(2 * np.pi)
    t = posterior_targets(mu, a, e, post_mean=m, post_var=s2f, noise_var=se2, loss=name)
    np.testing.assert_allclose(t.au + t.eu, expected, rtol=1e-10)
    np.testing.assert_allclose(t.risk, expected, rtol=1e-10)


@pytest.mark.parametrize("name", ["squared", "crps", "nll"])
def test_generalised_bias_is_nonnegative_and_zero_at_the_posterior_predictive(name):
    rng = np.random.default_rng(14)
    m, s2f, se2 = rng.normal(size=50), rng.uniform(0.01, 1, 50), rng.uniform(0.01, 1, 50)
    t = posterior_targets(
        m + rng.normal(size=50),
        se2,
        rng.uniform(0, 1, 50),
        post_mean=m,
        post_var=s2f,
        noise_var=se2,
        loss=name,
    )
    assert np.all(t.gen_bias >= -1e-12) and np.all(t.gen_variance >= 0)
    # a method that reports the posterior predictive itself has zero generalised bias
    t0 = posterior_targets(m, se2, s2f, post_mean=m, post_var=s2f, noise_var=se2, loss=name)
    np.testing.assert_allclose(t0.gen_bias, 0.0, atol=1e-12)


def test_bad_shapes_and_losses_raise():
    v = np.ones(3)
    with pytest.raises(ValueError, match=r"shape \(N,\)"):
        posterior_targets(np.ones(4), v, v, post_mean=v, post_var=v, noise_var=v)
    with pytest.raises(ValueError, match="unknown loss 'mae'"):
        posterior_targets(v, v, v, post_mean=v, post_var=v, noise_var=v, loss="mae")
    with pytest.raises(ValueError, match="non-finite"):
        posterior_targets(v * np.nan, v, v, post_mean=v, post_var=v, noise_var=v)
