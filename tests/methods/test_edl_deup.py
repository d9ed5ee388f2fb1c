"""EDL's loss against scipy's Student-t density; DEUP's noise against validation residuals."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from udora import methods
from udora.methods.edl import EvidentialLoss, nig_nll, nig_parameters
from udora.methods.nn.method import validation_split
from udora.methods.seeding import numpy_rng


def _nig_draws(n=50, seed=0):
    rng = np.random.default_rng(seed)
    gamma = rng.normal(size=n)
    nu = rng.uniform(0.05, 5.0, size=n)
    alpha = rng.uniform(1.05, 6.0, size=n)
    beta = rng.uniform(0.05, 3.0, size=n)
    y = gamma + rng.normal(scale=2.0, size=n)
    return y, gamma, nu, alpha, beta


def test_nig_nll_is_the_student_t_marginal():
    y, gamma, nu, alpha, beta = _nig_draws()
    ours = nig_nll(*(jnp.asarray(a, jnp.float32) for a in (y, gamma, nu, alpha, beta)))
    scale = np.sqrt(beta * (1.0 + nu) / (nu * alpha))
    reference = -stats.t.logpdf(y, df=2.0 * alpha, loc=gamma, scale=scale)
    np.testing.assert_allclose(np.asarray(ours), reference, rtol=1e-4, atol=1e-4)


def test_evidential_loss_adds_the_weighted_regulariser():
    rng = np.random.default_rng(1)
    raw = rng.normal(size=(40, 4)).astype(np.float32)
    y = rng.normal(size=40).astype(np.float32)
    # the head map, written out in numpy
    softplus = np.log1p(np.exp(raw.astype(np.float64)))
    gamma, nu, alpha = raw[:, 0], softplus[:, 1] + 1e-6, 1.0 + softplus[:, 2] + 1e-6
    beta = softplus[:, 3] + 1e-6
    scale = np.sqrt(beta * (1.0 + nu) / (nu * alpha))
    t_nll = -stats.t.logpdf(y, df=2.0 * alpha, loc=gamma, scale=scale)
    reg = np.abs(y - gamma) * (2.0 * nu + alpha)
    got = EvidentialLoss(0.3)(jnp.asarray(raw), jnp.asarray(y))
    np.testing.assert_allclose(np.asarray(got), t_nll + 0.3 * reg, rtol=1e-4, atol=1e-4)
    params = nig_parameters(jnp.asarray(raw))
    np.testing.assert_allclose(np.asarray(params[2]), alpha, rtol=1e-6)
    assert np.all(np.asarray(params[2]) > 1.0)


def test_edl_variances_follow_the_nig_formulas(task):
    edl = methods.get_method("edl", width=16, blocks=1, n_epochs=20).fit(task.X, task.y, seed=0)
    pred = edl.predict(task.X_near)
    raw = edl.raw_outputs(jnp.asarray(edl.scaler_.x(task.X_near), jnp.float32))[0]
    softplus = np.log1p(np.exp(np.asarray(raw, np.float64)))
    nu, alpha = softplus[:, 1] + 1e-6, 1.0 + softplus[:, 2] + 1e-6
    beta = softplus[:, 3] + 1e-6
    y_var = np.var(task.y)
    np.testing.assert_allclose(pred.aleatoric, y_var * beta / (alpha - 1.0), rtol=1e-4)
    np.testing.assert_allclose(pred.epistemic, y_var * beta / (nu * (alpha - 1.0)), rtol=1e-4)


@pytest.mark.parametrize("seed", [0, 5])
def test_deup_aleatoric_is_the_validation_residual_variance(task, seed):
    deup = methods.get_method("deup", width=16, blocks=1, n_epochs=30, n_epochs_excess=20)
    deup.fit(task.X, task.y, seed=seed)
    _, val = validation_split(task.X.shape[0], 0.2, numpy_rng(seed, "validation"))
    assert val.size == 40
    residual = task.y[val] - deup.predict(task.X[val]).mean
    pred = deup.predict(task.X_near)
    np.testing.assert_allclose(pred.aleatoric, np.mean(residual**2), rtol=1e-4)
    assert np.all(pred.epistemic > 0)
