"""``gp_approx`` against the exact posterior predictive of a tiny latent-GP classifier,
computed independently by self-normalised importance sampling with prior draws of the
joint latent (numpy); the tolerances are the approximation's error on this benign task
plus four Monte Carlo standard errors. With the latent scale left out of the prior (1.0
for 1.5) the same comparison misses by 0.09 (binary) and 0.15 (3 classes), so the
tolerances separate a right model from a wrong one."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr, logsumexp, softmax
from scipy.stats import norm

from udora import methods
from udora.oracle.classification.preset import Sampler
from udora.oracle.classification.task import ClassificationPrior
from udora.oracle.prior import TaskKnowledge
from udora.oracle.standardise import Standardiser

LENGTHSCALE, SCALE = 0.8, 1.5
pytestmark = pytest.mark.slow  # 400000 importance draws per task


def _prior(n_classes: int) -> ClassificationPrior:
    return ClassificationPrior(
        kernel=({"type": "rbf", "variance": 1.0, "lengthscale": [LENGTHSCALE]},),
        mean=(0.3,) if n_classes == 2 else (0.3, 0.0, -0.2),
        latent_scale=SCALE,
        standardiser=Standardiser(np.zeros(1), np.ones(1), 0.0, 1.0),
        classes=tuple(f"c{i}" for i in range(n_classes)),
        sampler=Sampler(),
    )


def _exact(X, y, X_test, prior, n_draws=400_000, seed=0):
    """Importance sampling: prior draws of f at training and test points, weights the
    label likelihood; returns pbar (m, C), E H(p_f) (m,) and their standard errors."""
    Z = np.r_[X, X_test][:, 0]
    K = SCALE**2 * np.exp(-0.5 * (Z[:, None] - Z[None, :]) ** 2 / LENGTHSCALE**2)
    L = np.linalg.cholesky(K + 1e-9 * np.eye(Z.size))
    rng = np.random.default_rng(seed)
    n_lat = len(prior.mean)
    f = np.einsum("ij,sjl->sil", L, rng.standard_normal((n_draws, Z.size, n_lat)))
    f += np.asarray(prior.mean)[None, None, :]
    n = X.shape[0]
    if n_lat == 1:
        sign = 2.0 * y - 1.0
        logw = log_ndtr(sign[None, :] * f[:, :n, 0]).sum(axis=1)
        p1 = norm.cdf(f[:, n:, 0])
        p = np.stack([1 - p1, p1], axis=-1)
    else:
        logw = np.log(softmax(f[:, :n], axis=-1)[:, np.arange(n), y]).sum(axis=1)
        p = softmax(f[:, n:], axis=-1)
    w = np.exp(logw - logsumexp(logw))
    h = -np.sum(p * np.log(np.clip(p, 1e-300, None)), axis=-1)
    pbar = np.einsum("s,smc->mc", w, p)
    au = w @ h
    ess = 1.0 / np.sum(w**2)
    return pbar, au, ess


@pytest.mark.parametrize("n_classes", [2, 3])
def test_gp_approx_matches_the_exact_predictive_of_a_tiny_task(n_classes):
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(8, 1))
    y = rng.integers(0, n_classes, 8)
    X_test = np.linspace(-3, 3, 5)[:, None]
    prior = _prior(n_classes)
    knowledge = TaskKnowledge(("x",), 1, 8, prior=prior, classes=prior.classes)
    pred = (
        methods.get_method("gp_approx", mc_draws=20_000)
        .fit(X, y, seed=0, knowledge=knowledge)
        .predict(X_test)
    )
    pbar, au, ess = _exact(X, y, X_test, prior)
    assert ess > 5_000  # enough effective draws for a 4-SE bound of about 0.01
    tol = 0.02 if n_classes == 2 else 0.06  # EP is close to exact (0.01 here); Laplace 0.04
    np.testing.assert_allclose(pred.prob, pbar, atol=tol)
    np.testing.assert_allclose(pred.aleatoric, au, atol=tol)
    np.testing.assert_allclose(pred.total, -np.sum(pbar * np.log(pbar), axis=1), atol=tol)


def test_the_prediction_does_not_depend_on_the_chunking():
    """Each point's Monte Carlo normals come from its own row: chunks of 7 rows and one
    chunk of all 300 give the same probabilities and EU to round-off."""
    from udora.methods.contract_classification import make_classification_task

    task = make_classification_task()
    knowledge = task.knowledge(with_prior=True)
    whole, pieces = (
        methods.get_method("gp_approx", chunk_size=size)
        .fit(task.X, task.y, seed=0, knowledge=knowledge)
        .predict(task.X_near)
        for size in (2048, 7)
    )
    np.testing.assert_allclose(pieces.prob, whole.prob, rtol=0, atol=1e-12)
    np.testing.assert_allclose(pieces.epistemic, whole.epistemic, rtol=0, atol=1e-12)
