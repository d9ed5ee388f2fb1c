"""Evidential classification: the Dirichlet's closed forms against Monte Carlo draws from
scipy's Dirichlet, its KL to the uniform Dirichlet against the mean log density ratio,
and the expected squared error against its definition."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import dirichlet, entropy

from udora.methods.edl import (
    EvidentialClassificationLoss,
    dirichlet_kl_to_uniform,
    dirichlet_prediction,
)

ALPHAS = np.array([[1.0, 1.0, 1.0], [5.0, 1.5, 1.2], [30.0, 2.0, 0.5], [0.7, 0.7, 0.9]])


def test_closed_forms_match_draws_from_the_dirichlet():
    """200000 draws per row (seed 0): the expected entropy, E ||p||^2 and the mutual
    information within 4 standard errors of their Monte Carlo estimates."""
    rng = np.random.default_rng(0)
    pred = dirichlet_prediction(ALPHAS)
    for i, alpha in enumerate(ALPHAS):
        p = dirichlet.rvs(alpha, size=200_000, random_state=rng)
        h = entropy(p, axis=1)
        sq = np.sum(p * p, axis=1)
        se_h, se_sq = h.std() / np.sqrt(h.size), sq.std() / np.sqrt(sq.size)
        assert pred.aleatoric[i] == pytest.approx(h.mean(), abs=4 * se_h)
        assert 1 - pred.aleatoric_brier[i] == pytest.approx(sq.mean(), abs=4 * se_sq)
        q = alpha / alpha.sum()
        np.testing.assert_allclose(pred.prob[i], q, rtol=1e-12)
        assert pred.epistemic[i] == pytest.approx(entropy(q) - h.mean(), abs=4 * se_h)
        assert pred.epistemic_brier[i] == pytest.approx(np.sum(p.var(axis=0)), rel=0.01)


def test_kl_to_the_uniform_dirichlet_is_the_mean_log_density_ratio():
    rng = np.random.default_rng(1)
    kl = np.asarray(dirichlet_kl_to_uniform(jnp.asarray(ALPHAS)))
    for i, alpha in enumerate(ALPHAS):
        p = dirichlet.rvs(alpha, size=200_000, random_state=rng)
        p = np.clip(p, 1e-300, None)
        p /= p.sum(axis=1, keepdims=True)
        ratio = dirichlet.logpdf(p.T, alpha) - dirichlet.logpdf(p.T, np.ones(3))
        se = ratio.std() / np.sqrt(ratio.size)
        assert kl[i] == pytest.approx(ratio.mean(), abs=4 * se + 1e-5)  # float32 round-off
    assert kl[0] == pytest.approx(0.0, abs=1e-5)  # Dir(1) to itself, in float32


def test_the_loss_is_the_expected_squared_error_plus_the_weighted_kl():
    raw = jnp.asarray([[0.3, -1.0, 2.0], [1.5, 0.0, -0.5]])
    y = jnp.asarray([2.0, 1.0])
    alpha = np.log1p(np.exp(np.asarray(raw))) + 1.0
    rng = np.random.default_rng(2)
    expected = []
    for a, label in zip(alpha, [2, 1], strict=True):
        p = dirichlet.rvs(a, size=200_000, random_state=rng)
        onehot = np.eye(3)[label]
        err = np.mean(np.sum((onehot - p) ** 2, axis=1))
        kept = onehot + (1 - onehot) * a
        expected.append((err, float(dirichlet_kl_to_uniform(jnp.asarray(kept[None]))[0])))
    loss0 = np.asarray(EvidentialClassificationLoss(3, 0.0)(raw, y))
    loss1 = np.asarray(EvidentialClassificationLoss(3, 0.5)(raw, y))
    for i, (err, kl) in enumerate(expected):
        assert loss0[i] == pytest.approx(err, abs=2e-3)
        assert loss1[i] - loss0[i] == pytest.approx(0.5 * kl, rel=1e-5)
