"""The per-draw integrals over a Gaussian latent against independent computations:
numerical integration (scipy.integrate.quad), Monte Carlo with a fixed seed, and
scipy's Owen's T; and the convergence diagnostics against blackjax's own."""

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

from udora.oracle.classification.link import label_loglik, probit_moments, softmax_moments
from udora.oracle.classification.sampler import convergence

CASES = [
    *((0.0, 0.0), (0.7, 0.3), (-1.5, 2.0), (1.0, 2.25), (1.0, 2.26), (2.5, 9.0)),
    *((-4.0, 0.01), (0.2, 25.0), (6.0, 100.0), (-30.0, 4.0)),
]


def _quad(fun, mu, s2):
    """E[fun(f)], f ~ N(mu, s2), by adaptive quadrature (a point mass when s2 = 0)."""
    if s2 == 0:
        return fun(mu)
    s = np.sqrt(s2)
    dens = lambda f: fun(f) * stats.norm.pdf(f, mu, s)  # noqa: E731
    return integrate.quad(dens, mu - 12 * s, mu + 12 * s, limit=200, epsabs=1e-13)[0]


def _entropy(p1):
    p = np.clip(p1, 1e-300, 1.0)
    q = np.clip(1.0 - p1, 1e-300, 1.0)
    return -(p1 * np.log(p) + (1 - p1) * np.log(q))


@pytest.mark.parametrize(("mu", "s2"), CASES)
def test_probit_moments_match_quadrature(x64, mu, s2):
    prob, ent, square = (np.asarray(a) for a in probit_moments(jnp.asarray(mu), jnp.asarray(s2)))
    Phi = special.ndtr
    np.testing.assert_allclose(prob[1], _quad(Phi, mu, s2), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(prob.sum(), 1.0, rtol=1e-14)
    sq = _quad(lambda f: Phi(f) ** 2 + (1 - Phi(f)) ** 2, mu, s2)
    np.testing.assert_allclose(square, sq, rtol=1e-9, atol=1e-12)
    # Gauss-Hermite (narrow) or Gauss-Legendre over the bump (wide): to 1e-6 of quadrature
    np.testing.assert_allclose(ent, _quad(lambda f: _entropy(Phi(f)), mu, s2), atol=1e-6)
    wide = bool(np.sqrt(s2) > 1.5)  # the caller that sorted its points gets the same rule
    _, alone, _ = probit_moments(jnp.asarray(mu), jnp.asarray(s2), wide=wide)
    assert float(alone) == float(ent)


def test_owens_t_form_matches_scipy_and_monte_carlo(x64):
    rng = np.random.default_rng(0)
    mu, s2 = 0.8, 1.7
    f = mu + np.sqrt(s2) * rng.standard_normal(2_000_000)
    mc = special.ndtr(f) ** 2
    h = mu / np.sqrt(1 + s2)
    closed = special.ndtr(h) - 2 * special.owens_t(h, 1 / np.sqrt(1 + 2 * s2))
    assert abs(mc.mean() - closed) < 4 * mc.std() / np.sqrt(mc.size)
    _, _, square = probit_moments(jnp.asarray(mu), jnp.asarray(s2))
    np.testing.assert_allclose(float(square), 1 - 2 * special.ndtr(h) + 2 * closed, rtol=1e-12)


def test_softmax_moments_match_direct_monte_carlo(x64):
    """Conditional Monte Carlo with R draws against a large independent simulation."""
    mu = jnp.asarray([0.5, -1.0, 2.0])
    s = jnp.asarray(1.3)
    eps = jax.random.normal(jax.random.PRNGKey(1), (400_000, 3))
    prob, ent, square = softmax_moments(mu, s, eps)
    rng = np.random.default_rng(2)
    f = np.asarray(mu) + 1.3 * rng.standard_normal((400_000, 3))
    p = special.softmax(f, axis=1)
    np.testing.assert_allclose(prob, p.mean(0), atol=3e-3)
    np.testing.assert_allclose(ent, stats.entropy(p, axis=1).mean(), atol=3e-3)
    np.testing.assert_allclose(square, (p**2).sum(1).mean(), atol=3e-3)
    np.testing.assert_allclose(float(jnp.sum(prob)), 1.0, rtol=1e-12)


def test_label_loglik_matches_a_direct_sum(x64):
    rng = np.random.default_rng(3)
    f1 = rng.standard_normal((5, 1))
    counts = rng.integers(0, 4, size=(5, 2)).astype(float)
    direct = np.sum(counts[:, 1] * stats.norm.logcdf(f1[:, 0]))
    direct += np.sum(counts[:, 0] * stats.norm.logcdf(-f1[:, 0]))
    assert float(label_loglik(jnp.asarray(f1), jnp.asarray(counts))) == pytest.approx(direct)
    f3 = rng.standard_normal((5, 3))
    counts3 = rng.integers(0, 4, size=(5, 3)).astype(float)
    direct3 = np.sum(counts3 * np.log(special.softmax(f3, axis=1)))
    got = float(label_loglik(jnp.asarray(f3), jnp.asarray(counts3)))
    assert got == pytest.approx(direct3, rel=1e-12)


@pytest.mark.slow  # moved for the default set's 4-minute budget
def test_convergence_equals_blackjax(x64):
    """The numpy ranking path gives blackjax's rhat, ess_bulk and ess_tail, ties and a
    chain off target included."""
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.standard_normal((4, 300, 10)), axis=1) * 0.1
    x += rng.standard_normal((4, 300, 10))
    x[..., :5] = np.round(x[..., :5])  # tied draws
    x[1, :, 7] += 0.5  # one chain shifted
    ours = convergence(x)
    d = blackjax.diagnostics
    for name in ("rhat", "ess_bulk", "ess_tail"):
        with jax.numpy_rank_promotion("allow"):  # blackjax broadcasts (k,) and (c, n, k)
            theirs = np.asarray(getattr(d, name)(jnp.asarray(x)))
        np.testing.assert_allclose(ours[name], theirs, rtol=1e-10, err_msg=name)
    assert ours["rhat"][7] > 1.05  # the shifted chain is seen
