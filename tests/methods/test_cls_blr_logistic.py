"""Bayesian logistic regression: its MAP weights against scikit-learn's L2-penalised
multinomial logistic regression, its Laplace precision against finite differences of
the gradient, and its predictive against the mean of the stated samples."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.linear_model import LogisticRegression

from udora.methods.blr_logistic import BayesianLogisticRegression
from udora.oracle.prior import TaskKnowledge


def _data(seed=0, n=300, d=3, C=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * [1.0, 2.0, 0.5] + [0.5, -1.0, 2.0]
    logits = X @ rng.normal(size=(d, C))
    y = np.array([rng.choice(C, p=p) for p in softmax(logits, axis=1)])
    knowledge = TaskKnowledge(("a", "b", "c"), d, n, classes=tuple(f"k{c}" for c in range(C)))
    return X, y, knowledge


def test_map_weights_match_scikit_learn():
    X, y, knowledge = _data()
    alpha = 0.7
    model = BayesianLogisticRegression(alpha=alpha, fit_intercept=False)
    model.fit(X, y, seed=0, knowledge=knowledge)
    Xs = model.scaler_.x(X)
    ref = LogisticRegression(C=1 / alpha, fit_intercept=False, tol=1e-12, max_iter=10_000)
    ref.fit(Xs, y)
    # softmax weights are defined up to a constant per input column; scikit-learn's
    # penalty picks the same representative (columns summing to 0 at the optimum)
    np.testing.assert_allclose(model.map_, ref.coef_.T, atol=1e-6)


def test_laplace_precision_is_the_hessian_of_the_objective():
    X, y, knowledge = _data(seed=1, n=120)
    alpha = 2.0
    model = BayesianLogisticRegression(alpha=alpha, n_samples=20_000)
    model.fit(X, y, seed=3, knowledge=knowledge)
    phi = model._features(model.scaler_.x(X))
    onehot = np.eye(3)[y]

    def grad(w):
        W = w.reshape(phi.shape[1], 3)
        return (phi.T @ (softmax(phi @ W, axis=1) - onehot) + alpha * W).ravel()

    w0, h = model.map_.ravel(), 1e-5
    numeric = np.stack(
        [(grad(w0 + h * e) - grad(w0 - h * e)) / (2 * h) for e in np.eye(w0.size)], axis=1
    )
    # the sample covariance of the 20000 stated samples is the inverse of that Hessian
    samples = model.weights_.reshape(20_000, -1)
    cov = np.cov(samples, rowvar=False)
    np.testing.assert_allclose(cov @ numeric, np.eye(w0.size), atol=0.06)
    np.testing.assert_allclose(samples.mean(axis=0), w0, atol=4 * np.sqrt(np.diag(cov) / 2e4).max())


def test_predictive_is_the_mean_of_the_samples_probabilities():
    X, y, knowledge = _data(seed=2)
    model = BayesianLogisticRegression(n_samples=50).fit(X, y, seed=0, knowledge=knowledge)
    pred = model.predict(X[:7])
    phi = model._features(model.scaler_.x(X[:7]))
    members = np.stack([softmax(phi @ W, axis=1) for W in model.weights_])
    np.testing.assert_allclose(pred.prob, members.mean(axis=0), rtol=1e-12)
    assert pred.member_probs is None and pred.epistemic_brier.shape == (7,)
    with pytest.raises(ValueError, match="needs the task's classes"):
        BayesianLogisticRegression().fit(X, y, seed=0)
