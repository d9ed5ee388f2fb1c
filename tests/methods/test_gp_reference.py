"""gp_oracle and gp_linear against dense numpy conditioning and against the oracle itself."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from method_tasks import HandPrior, dense_gp_posterior, make_task

from udora import methods
from udora.oracle.prior import TaskKnowledge
from udora.oracle.standardise import Standardiser


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_gp_oracle_equals_dense_numpy_posterior():
    task = make_task(n=120, seed=2)
    prior = HandPrior(
        kernel=task.prior.kernel,
        mean_value=0.3,
        standardiser=Standardiser(
            x_mean=np.array([0.1, -0.2]), x_sd=np.array([0.5, 0.7]), y_mean=1.5, y_sd=2.0
        ),
        noise_scale=0.2,
    )
    X_test = np.vstack([task.X_near[:50], task.X_far[:50]])
    gp = methods.get_method("gp_oracle", chunk_size=32)
    pred = gp.fit(task.X, task.y, seed=0, knowledge=prior.knowledge(task.X)).predict(X_test)
    mean, var = dense_gp_posterior(prior, task.X, task.y, X_test)
    np.testing.assert_allclose(pred.mean, mean, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(pred.epistemic, var, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(pred.aleatoric, prior.noise_std(X_test) ** 2, rtol=1e-12)
    # the joint covariance over batches, a repeated input among them: the dense one
    batches = X_test[:60].reshape(6, 10, 2).copy()
    batches[:, 9] = batches[:, 0]
    joint = gp.predict_joint(batches)
    for b in range(6):
        _, cov = dense_gp_posterior(prior, task.X, task.y, batches[b], full=True)
        np.testing.assert_allclose(joint[b], cov, rtol=1e-6, atol=1e-9)


def test_gp_oracle_without_a_prior_says_how_to_give_one(task):
    with pytest.raises(ValueError, match=r"knowledge=task.knowledge\(with_prior=True\)"):
        methods.get_method("gp_oracle").fit(task.X, task.y, seed=0)
    no_prior = TaskKnowledge(feature_names=("a", "b"), d=2, n=task.X.shape[0])
    with pytest.raises(ValueError, match="needs the task's GP prior"):
        methods.get_method("gp_oracle").fit(task.X, task.y, seed=0, knowledge=no_prior)


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_gp_oracle_reproduces_the_oracle_posterior_on_a_task(tmp_path):
    from udora.oracle.preset import Preset
    from udora.oracle.task import build_task

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)) * [1.0, 3.0, 0.5] + [5.0, -2.0, 0.0]
    y = np.sin(X[:, 0]) + X[:, 1] + 0.3 * rng.standard_normal(400)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(target=y)
    frame.to_csv(tmp_path / "gp_oracle_synth.csv", index=False)
    preset = Preset.model_validate(
        {
            "name": "gp_oracle_synth",
            "suite": "test",
            "source": {"file": "gp_oracle_synth.csv"},
            "features": ["a", "b", "c"],
            "pool_size": 400,
            "n_train": 150,
            "kernel": [
                {"type": "matern32", "variance": 0.8, "lengthscale": [0.9, 1.4, 2.0]},
                {"type": "linear", "variance": 0.2},
            ],
            "mean": {"type": "constant", "value": 0.25},
            "noise": {"std_min": 0.1, "std_max": 0.4},
            "shift": [0.4, 0.3, 0.2, 0.1, 0.0],
        }
    )
    task = build_task(preset, 3, data_dir=tmp_path)
    gp = methods.get_method("gp_oracle")
    knowledge = task.knowledge(with_prior=True)
    assert knowledge.prior is task.prior and task.knowledge().prior is None
    assert (knowledge.d, knowledge.n, knowledge.feature_names) == (3, 150, ("a", "b", "c"))
    pred = gp.fit(task.X_train, task.y_train, seed=0, knowledge=knowledge).predict(task.X)
    scale = float(np.std(task.post_mean))
    np.testing.assert_allclose(pred.mean, task.post_mean, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(pred.epistemic, task.post_var, rtol=1e-5, atol=1e-9 * scale**2)
    np.testing.assert_allclose(pred.aleatoric, task.noise_var, rtol=1e-10)


def _linear_gp_lml(Z, y, s2, noise, const):
    """Log marginal likelihood of y ~ N(const, s2 Z Z^T + noise I), dense numpy."""
    K = s2 * Z @ Z.T + noise * np.eye(len(y))
    L = np.linalg.cholesky(K)
    a = np.linalg.solve(L, y - const)
    return -0.5 * a @ a - np.sum(np.log(np.diag(L))) - 0.5 * len(y) * np.log(2 * np.pi)


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_gp_linear_hyperparameters_maximise_the_dense_marginal_likelihood():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(80, 2)) * [2.0, 0.5]
    y = 1.5 * X[:, 0] - 4.0 * X[:, 1] + 0.8 * rng.standard_normal(80)
    gp = methods.get_method("gp_linear").fit(X, y, seed=0)
    Z = (X - X.mean(0)) / X.std(0)
    ys = (y - y.mean()) / y.std()
    s2, noise, const = gp.kernel_variance_, gp.noise_var_, gp.mean_value_
    best = _linear_gp_lml(Z, ys, s2, noise, const)
    for factor in (0.9, 1.1):  # a maximum: no 10% move of a hyperparameter improves it
        assert best >= _linear_gp_lml(Z, ys, s2 * factor, noise, const) - 1e-7
        assert best >= _linear_gp_lml(Z, ys, s2, noise * factor, const) - 1e-7
    # and the predictive is the dense conditioning at those hyperparameters
    X_test = rng.normal(size=(20, 2)) * 3.0
    Zt = (X_test - X.mean(0)) / X.std(0)
    K = s2 * Z @ Z.T + noise * np.eye(80)
    k_star = s2 * Zt @ Z.T
    mean = const + k_star @ np.linalg.solve(K, ys - const)
    var = s2 * np.sum(Zt**2, 1) - np.sum(k_star * np.linalg.solve(K, k_star.T).T, 1)
    pred = gp.predict(X_test)
    np.testing.assert_allclose(pred.mean, y.mean() + y.std() * mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(pred.epistemic, y.var() * var, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(pred.aleatoric, y.var() * noise, rtol=1e-12)
    # its joint covariance over batches (one repeated input) is the dense one
    batches = X_test.reshape(4, 5, 2).copy()
    batches[:, 4] = batches[:, 1]
    joint = gp.predict_joint(batches)
    for b in range(4):
        Zb = (batches[b] - X.mean(0)) / X.std(0)
        kb = s2 * Zb @ Z.T
        cov = s2 * Zb @ Zb.T - kb @ np.linalg.solve(K, kb.T)
        np.testing.assert_allclose(joint[b], y.var() * cov, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("mean", ["constant", pytest.param("zero", marks=pytest.mark.slow)])
@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_gp_linear_weight_space_objective_is_gpjax_conjugate_mll(mean):
    # the O(d^3) objective gp_linear optimises against GPJax's dense O(n^3) one, value and
    # gradient, away from the optimum
    import equinox as eqx
    import gpjax as gpx
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    from udora.methods.gp_linear import sufficient_statistics, weight_space_nmll

    rng = np.random.default_rng(9)
    with jax.enable_x64(True):
        X, y = jnp.asarray(rng.normal(size=(150, 3))), jnp.asarray(rng.normal(size=(150, 1)))
        meanf = (
            gpx.mean_functions.Constant(0.4) if mean == "constant" else gpx.mean_functions.Zero()
        )
        prior = gpx.gps.Prior(
            kernel=gpx.kernels.Linear(variance=0.6, n_dims=3), mean_function=meanf, jitter=0.0
        )
        model = prior * gpx.likelihoods.Gaussian(obs_stddev=0.3)
        params, static = eqx.partition(model, eqx.is_array)
        x0, unravel = ravel_pytree(params)
        data, stats = gpx.Dataset(X=X, y=y), sufficient_statistics(X, y)
        dense = jax.value_and_grad(
            lambda x: -gpx.objectives.conjugate_mll(eqx.combine(unravel(x), static), data)
        )(x0)
        mine = jax.value_and_grad(
            lambda x: weight_space_nmll(eqx.combine(unravel(x), static), stats)
        )(x0)
    assert float(mine[0]) == pytest.approx(float(dense[0]), rel=1e-10)
    np.testing.assert_allclose(np.asarray(mine[1]), np.asarray(dense[1]), rtol=1e-8)
