"""SWAG's running moments against numpy moments of the iterates, its samples and scale."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from method_tasks import make_task

from udora import methods
from udora.methods.nn.config import NNConfig
from udora.methods.nn.trainer import collect_moments, train_members


def _data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    y = (np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=n)).astype(np.float32)
    return jnp.asarray(X), jnp.asarray(y)


def test_moments_equal_numpy_moments_of_the_iterates():
    every, n_ckpt = 3, 5
    cfg = NNConfig(
        width=8,
        blocks=1,
        optimizer="sgd",
        learning_rate=0.05,
        momentum=0.9,
        batch_size=16,
        val_fraction=0.0,
    )
    X, y = _data()
    rows = jnp.arange(48, dtype=jnp.int32)[None, :]
    keys = jax.random.key(4)[None]
    init, _, _ = train_members(
        cfg.model_copy(update={"n_epochs": 2}), X, y, X[:0], y[:0], rows, keys
    )
    _, first, second = collect_moments(
        cfg, X, y, rows, keys, init, every=every, n_checkpoints=n_ckpt, grad_clip=1.0
    )
    # The iterate after j * every epochs, by training from init for exactly that long.
    iterates = []
    for j in range(1, n_ckpt + 1):
        run = cfg.model_copy(update={"n_epochs": j * every})
        params, _, _ = train_members(run, X, y, X[:0], y[:0], rows, keys, init=init, grad_clip=1.0)
        iterates.append([np.asarray(a[0], np.float64) for a in jax.tree.leaves(params)])
    for i, (m1, m2) in enumerate(zip(jax.tree.leaves(first), jax.tree.leaves(second), strict=True)):
        stack = np.stack([it[i] for it in iterates])
        np.testing.assert_allclose(m1[0], stack.mean(axis=0), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(m2[0], (stack**2).mean(axis=0), rtol=1e-4, atol=1e-5)
        var = np.maximum(np.asarray(m2[0], np.float64) - np.asarray(m1[0], np.float64) ** 2, 0)
        np.testing.assert_allclose(var, stack.var(axis=0), rtol=1e-2, atol=1e-6)
    assert np.max(np.stack([it[0] for it in iterates]).var(axis=0)) > 0, "iterates must move"


@pytest.fixture(scope="module")
def swag():
    task = make_task()
    cfg = {"width": 16, "blocks": 1, "n_epochs": 30, "n_checkpoints": 8, "epochs_per_checkpoint": 2}
    return methods.get_method("swag", **cfg).fit(task.X, task.y, seed=1), task


def test_samples_follow_the_diagonal_gaussian(swag):
    method, _ = swag
    mu = jax.tree.leaves(method.swag_mean_)
    var = jax.tree.leaves(method.swag_var_)
    draws = jax.tree.leaves(method.sample_variables_["params"])
    z = np.concatenate(
        [
            ((np.asarray(d) - np.asarray(m)[None]) / np.sqrt(np.asarray(v))[None]).ravel()
            for d, m, v in zip(draws, mu, var, strict=True)
            if np.all(np.asarray(v) > 1e-12)
        ]
    )
    assert z.size > 1000
    # standardised draws: mean 0 and variance 1 within Monte Carlo error (n > 1000)
    assert abs(z.mean()) < 5 / np.sqrt(z.size) + 0.02
    assert z.var() == pytest.approx(1.0, abs=0.1)


def test_scale_matches_the_validation_definition(swag):
    method, task = swag
    val = method.val_idx_
    raw = methods.get_method("swag", **{**method.config.to_dict(), "calibrate": False})
    raw = raw.fit(task.X, task.y, seed=1)
    pred = raw.predict(task.X[val])
    c = np.mean((task.y[val] - pred.mean) ** 2) / np.mean(pred.total)
    assert method.scale_ == pytest.approx(c, rel=1e-4)
    near = method.predict(task.X_near)
    np.testing.assert_allclose(near.aleatoric, c * raw.predict(task.X_near).aleatoric, rtol=1e-4)
    np.testing.assert_allclose(near.epistemic, c * raw.predict(task.X_near).epistemic, rtol=1e-4)
