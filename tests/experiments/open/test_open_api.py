"""experiments/open/adapters.py and api.py against computations done here by hand:
scikit-learn's predictive std split into noise and the rest, a bagged ensemble refitted
member by member, and :func:`evaluate` on the shipped concrete preset."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.linear_model import BayesianRidge, LinearRegression
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from udora.experiments.open import bagged_fields, evaluate, load_task, sklearn_fields
from udora.experiments.open.adapters import estimator_from_path
from udora.experiments.open.api import ID_COLUMNS
from udora.experiments.open.forms import parse
from udora.scoring.agreement import spearman


@pytest.fixture(scope="module", autouse=True)
def one_blas_thread():
    """Small matrices on two shared cores: threaded BLAS only adds contention."""
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="module")
def concrete():
    return load_task("concrete", 0)


@pytest.fixture(scope="module")
def small(concrete):
    """150 training rows, features standardised by the training sample (GP fits in ~0.1 s).
    Its hash is concrete's: fine for fields, not for scoring."""
    mu, sd = concrete.X_train.mean(axis=0), concrete.X_train.std(axis=0)
    return dataclasses.replace(
        concrete,
        X_train=(concrete.X_train[:150] - mu) / sd,
        y_train=concrete.y_train[:150],
        X_pool=(concrete.X_pool - mu) / sd,
    )


def test_bayesian_ridge_au_is_its_noise_and_au_plus_eu_its_std(concrete):
    fields = sklearn_fields(BayesianRidge(), concrete)
    own = BayesianRidge().fit(concrete.X_train, concrete.y_train)  # deterministic fit
    mean, std = own.predict(concrete.X_pool, return_std=True)
    np.testing.assert_allclose(fields["aleatoric"], 1.0 / own.alpha_, rtol=1e-12)
    np.testing.assert_allclose(fields["aleatoric"] + fields["epistemic"], std**2, rtol=1e-9)
    np.testing.assert_allclose(fields["mean"], mean, rtol=1e-12)
    # scikit-learn 1.6's EU term is x^T sigma_ x on the *uncentred* x (issue #33757)
    X = concrete.X_pool
    np.testing.assert_allclose(fields["epistemic"], ((X @ own.sigma_) * X).sum(1), rtol=1e-6)
    assert fields["task_hash"] == concrete.task_hash
    assert parse(fields, concrete).form == "split"


def test_a_pipeline_is_split_by_its_last_step(concrete):
    pipe = make_pipeline(StandardScaler(), BayesianRidge())
    fields = sklearn_fields(pipe, concrete)  # fitted in place
    _, std = pipe.predict(concrete.X_pool, return_std=True)
    np.testing.assert_allclose(fields["aleatoric"], 1.0 / pipe[-1].alpha_, rtol=1e-12)
    np.testing.assert_allclose(fields["aleatoric"] + fields["epistemic"], std**2, rtol=1e-9)


@pytest.mark.parametrize("normalize_y", [False, True])
def test_gp_white_kernel_is_au_and_the_rest_is_the_latent_posterior_variance(small, normalize_y):
    kernel = C(100.0) * RBF(np.ones(8)) + WhiteKernel(10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a length scale at its bound is fine here
        fields = sklearn_fields(GaussianProcessRegressor(kernel, normalize_y=normalize_y), small)
        gp = GaussianProcessRegressor(kernel, normalize_y=normalize_y)
        gp.fit(small.X_train, small.y_train)
    _, std = gp.predict(small.X_pool, return_std=True)
    scale = small.y_train.std() ** 2 if normalize_y else 1.0
    signal, noise = gp.kernel_.k1, gp.kernel_.k2.noise_level
    np.testing.assert_allclose(fields["aleatoric"], noise * scale, rtol=1e-12)
    # sklearn's std includes the WhiteKernel noise: AU + EU is its std^2 ...
    np.testing.assert_allclose(fields["aleatoric"] + fields["epistemic"], std**2, rtol=1e-7)
    # ... and EU is the latent posterior variance, computed here from the fitted kernel
    K = signal(small.X_train) + noise * np.eye(len(small.y_train))
    Ks = signal(small.X_pool, small.X_train)
    latent = signal.diag(small.X_pool) - np.einsum("ij,ji->i", Ks, np.linalg.solve(K, Ks.T))
    np.testing.assert_allclose(fields["epistemic"], latent * scale, rtol=1e-5, atol=1e-8)


def test_gp_without_white_kernel_has_alpha_as_au_and_its_whole_std_as_eu(small):
    gp = GaussianProcessRegressor(C(100.0) * RBF(np.ones(8)), alpha=4.0, optimizer=None)
    fields = sklearn_fields(gp, small)
    _, std = gp.predict(small.X_pool, return_std=True)
    np.testing.assert_allclose(fields["aleatoric"], 4.0)
    np.testing.assert_allclose(fields["epistemic"], std**2, rtol=1e-12)


def test_bagged_members_refit_by_hand(concrete):
    fields = bagged_fields(LinearRegression, concrete, n_members=4, seed=3)
    rng = np.random.default_rng(3)
    n = len(concrete.y_train)
    X, y = concrete.X_train, concrete.y_train
    for k in range(4):
        rows = rng.integers(0, n, n)  # LinearRegression has no random_state: no 2nd draw
        fit = LinearRegression().fit(X[rows], y[rows])
        oob = np.setdiff1d(np.arange(n), rows)
        np.testing.assert_allclose(fields["member_means"][k], fit.predict(concrete.X_pool))
        residual = y[oob] - fit.predict(X[oob])
        np.testing.assert_allclose(fields["member_variances"][k], np.mean(residual**2))
    parsed = parse(fields, concrete)
    means = fields["member_means"]
    np.testing.assert_allclose(parsed.mean, means.sum(axis=0) / 4)
    np.testing.assert_allclose(parsed.aleatoric, fields["member_variances"].mean(axis=0))
    np.testing.assert_allclose(parsed.epistemic, ((means - parsed.mean) ** 2).mean(axis=0))


def test_bagged_members_get_their_own_random_state(small):
    from sklearn.tree import DecisionTreeRegressor

    a = bagged_fields(DecisionTreeRegressor(max_features=2), small, n_members=3, seed=1)
    b = bagged_fields(lambda: DecisionTreeRegressor(max_features=2), small, n_members=3, seed=1)
    np.testing.assert_array_equal(a["member_means"], b["member_means"])  # instance = factory
    assert not np.array_equal(a["member_means"][0], a["member_means"][1])


def test_evaluate_bayesian_ridge_on_concrete(concrete):
    table = evaluate(BayesianRidge(), presets=["concrete"], seeds=[0])
    assert len(table) == 1 and list(table.columns[:5]) == list(ID_COLUMNS)
    row = table.iloc[0]
    assert (row.preset, row.seed, row.form) == ("concrete", 0, "split")
    assert row.task_hash == concrete.task_hash and row.method == "estimator"
    assert np.isfinite(row.spearman_eu) and np.isfinite(row.spearman_total)
    # AU is the constant 1/alpha_: Spearman of a constant estimate is undefined, so NaN
    # (udora.scoring.agreement), while the AU's scale metrics stay defined
    assert np.isnan(row.spearman_au)
    assert np.isnan(spearman(np.full(5, 2.0), np.arange(5.0)))
    assert np.isfinite(row.mse_au)


def test_evaluate_a_model_without_return_std_points_to_bagging(concrete):
    for what in (dict(task=concrete), dict(presets="concrete")):
        with pytest.raises(ValueError, match=r"KNeighborsRegressor.*return_std.*bagged_fields"):
            evaluate(KNeighborsRegressor(), **what)
    with pytest.raises(ValueError, match=r"pass an instance, BayesianRidge\(\)"):
        evaluate(BayesianRidge, concrete)


def test_evaluate_fields_and_their_file_give_one_row(concrete, tmp_path):
    fields = bagged_fields(LinearRegression, concrete, n_members=3)
    np.savez(tmp_path / "p.npz", **fields)
    from_dict = evaluate(fields, concrete, method="bag")
    from_file = evaluate(tmp_path / "p.npz", concrete, method="bag")
    row = from_dict.iloc[0]
    assert row.form == "members" and np.isfinite(row.spearman_eu)
    assert np.isnan(row.spearman_au)  # each member's AU is one constant, so is their mean
    assert from_dict.columns.equals(from_file.columns)
    np.testing.assert_allclose(
        from_dict.iloc[0, 5:].astype(float), from_file.iloc[0, 5:].astype(float), equal_nan=True
    )
    with pytest.raises(ValueError, match="needs task="):
        evaluate(fields)


def test_ngboost_is_the_gaussian_total_only_form(concrete):
    from ngboost import NGBRegressor

    model = NGBRegressor(n_estimators=5, verbose=False, random_state=0)
    fields = sklearn_fields(model, concrete)
    dist = model.pred_dist(concrete.X_pool)
    np.testing.assert_allclose(fields["variance"], dist.params["scale"] ** 2)
    row = evaluate(fields, concrete).iloc[0]
    assert row.form == "gaussian" and np.isnan(row.spearman_eu) and np.isnan(row.spearman_au)
    assert np.isfinite(row.spearman_total) and np.isfinite(row.crps)


def test_estimator_from_path():
    made = estimator_from_path("sklearn.linear_model:BayesianRidge", max_iter=7)
    assert isinstance(made, BayesianRidge) and made.max_iter == 7
    assert isinstance(estimator_from_path("sklearn.linear_model.BayesianRidge"), BayesianRidge)
    for bad in ("no_such_pkg:Model", "sklearn.linear_model:NoSuch", "BayesianRidge", "numpy:zeros"):
        with pytest.raises(ValueError, match=repr(bad).replace(".", r"\.")):
            estimator_from_path(bad)
    with pytest.raises(ValueError, match="bogus"):
        estimator_from_path("sklearn.linear_model:BayesianRidge", bogus=1)
