"""All four tree methods: seeding, affine equivariance under target standardisation, and
constant extrapolation (far points get the prediction of the data's outer corner)."""

from __future__ import annotations

import numpy as np
import pytest

from udora import methods

FAST = {
    "ngboost_nig": {"n_estimators": 30, "minibatch_frac": 0.7},
    "ngboost_bag": {"n_members": 3, "n_estimators": 15},
    "catboost_ps": {"n_members": 3, "n_estimators": 80, "learning_rate": 0.2},
    "catboost_kgb": {"n_members": 4, "n_estimators": 60, "n_prior_estimators": 20},
}
TREES = list(FAST)


def fit(name: str, X: np.ndarray, y: np.ndarray, seed: int, **overrides):
    return methods.get_method(name, **{**FAST[name], **overrides}).fit(X, y, seed=seed)


@pytest.mark.parametrize("name", TREES)
def test_same_seed_same_prediction_other_seed_different(task, name):
    first = fit(name, task.X, task.y, seed=11).predict(task.X_near)
    again = fit(name, task.X, task.y, seed=11).predict(task.X_near)
    other = fit(name, task.X, task.y, seed=12).predict(task.X_near)
    for field in ("mean", "aleatoric", "epistemic"):
        np.testing.assert_array_equal(getattr(again, field), getattr(first, field))
    assert np.max(np.abs(other.mean - first.mean)) > 1e-6


@pytest.mark.parametrize("name", TREES)
def test_standardised_fit_is_equivariant_under_affine_target_maps(task, name):
    """Fitting ``a y + b`` gives mean ``a mu + b`` and variances ``a^2 v`` (same seed)."""
    a, b = 37.0, -5.0
    base = fit(name, task.X, task.y, seed=3).predict(task.X_near)
    moved = fit(name, task.X, a * task.y + b, seed=3).predict(task.X_near)
    # CatBoost stores targets in float32, so the two standardised targets may differ in
    # the last bit; 1e-5 relative leaves room for that and nothing else.
    np.testing.assert_allclose(moved.mean, a * base.mean + b, rtol=1e-5, atol=1e-5 * a)
    np.testing.assert_allclose(moved.aleatoric, a**2 * base.aleatoric, rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(moved.epistemic, a**2 * base.epistemic, rtol=1e-4, atol=1e-10)


def test_without_standardisation_ngboost_starts_from_raw_target_moments(task):
    y = 50.0 + 20.0 * task.y
    on = fit("ngboost_nig", task.X, y, seed=0)
    off = fit("ngboost_nig", task.X, y, seed=0, standardize_y=False)
    # Initial NIG: gamma = mean, beta = var / 2 (nu = 1, alpha = 2) of the targets it saw.
    assert off.model_.init_params[0] == pytest.approx(np.mean(y), rel=1e-12)
    assert off.model_.init_params[3] == pytest.approx(np.log(np.var(y) / 2), rel=1e-12)
    assert on.model_.init_params[0] == pytest.approx(0.0, abs=1e-12)
    assert on.model_.init_params[3] == pytest.approx(np.log(0.5), rel=1e-12)


@pytest.mark.parametrize("name", TREES)
def test_far_points_get_the_prediction_of_the_outer_data_corner(task, name):
    """Trees extrapolate flat: beyond every split, all of X_far ([3, 5]^2) shares one leaf
    per tree with the corner (max x_1, max x_2) of the training inputs."""
    method = fit(name, task.X, task.y, seed=0)
    far = method.predict(task.X_far)
    corner = method.predict(task.X.max(axis=0, keepdims=True))
    for field in ("mean", "aleatoric", "epistemic"):
        np.testing.assert_allclose(getattr(far, field), getattr(corner, field)[0], rtol=1e-12)


def test_lean_tree_grows_scikit_learns_tree_bit_for_bit():
    """LeanTree (no per-call checks) against DecisionTreeRegressor: same splits, same
    predictions, with weights and a seed; clone and set_params still work."""
    from sklearn.base import clone
    from sklearn.tree import DecisionTreeRegressor

    from udora.methods.trees import LeanTree

    rng = np.random.default_rng(3)
    X, g, w = rng.normal(size=(300, 5)), rng.normal(size=300), rng.uniform(0.5, 2.0, 300)
    for kwargs in ({"max_depth": 3}, {"max_depth": 6, "max_features": 0.6}):
        lean = clone(LeanTree(**kwargs)).set_params(random_state=7).fit(X, g, sample_weight=w)
        ref = DecisionTreeRegressor(**kwargs, random_state=7).fit(X, g, sample_weight=w)
        assert lean.get_params() == ref.get_params()
        np.testing.assert_array_equal(lean.tree_.threshold, ref.tree_.threshold)
        np.testing.assert_array_equal(lean.predict(X[::-1]), ref.predict(X[::-1]))


@pytest.mark.parametrize("name", ["ngboost_bag", "ngboost_nig"])
def test_ngboost_methods_equal_their_scikit_learn_tree_versions(task, name, monkeypatch):
    """The NGBoost methods with LeanTree predict exactly what they predict with
    scikit-learn's DecisionTreeRegressor as the base learner (column and row subsampling
    on, so the seeds ngboost hands each tree matter)."""
    from sklearn.tree import DecisionTreeRegressor

    import udora.methods.ngboost_bag as bag
    import udora.methods.ngboost_nig as nig

    def base_learner(method):
        model = method.members_[0] if name == "ngboost_bag" else method.model_
        return type(model.base_models[0][0])

    extra = {"col_sample": 0.7, "minibatch_frac": 0.8}
    fitted = fit(name, task.X, task.y, seed=4, **extra)
    lean = fitted.predict(task.X_near)
    for module in (bag, nig):
        monkeypatch.setattr(module, "LeanTree", DecisionTreeRegressor)
    fitted_ref = fit(name, task.X, task.y, seed=4, **extra)
    assert (base_learner(fitted).__name__, base_learner(fitted_ref)) == (
        "LeanTree",
        DecisionTreeRegressor,
    )
    ref = fitted_ref.predict(task.X_near)
    for field in ("mean", "aleatoric", "epistemic"):
        np.testing.assert_array_equal(getattr(lean, field), getattr(ref, field))


def test_a_diverged_ngboost_step_raises_instead_of_looping():
    """NGBoost's line search halves its step until the step's norm is under ``tol``, which
    a NaN gradient never is (a tuning trial looped an hour): the models udora fits raise
    FloatingPointError at such a step, and take the library's own step otherwise."""
    from ngboost import NGBRegressor
    from ngboost.distns import Normal

    from udora.methods.ngboost_bag import FiniteNGBoost, FiniteNGBRegressor, smoothed_categorical

    rng = np.random.default_rng(0)
    y = rng.normal(size=50)
    start = np.stack([np.zeros(50), np.zeros(50)])  # (params, n): loc 0, log scale 0
    resids = rng.normal(size=(50, 2)) * 0.1
    ours, theirs = FiniteNGBRegressor(Dist=Normal), NGBRegressor(Dist=Normal)
    assert ours.line_search(resids, start.T, y) == theirs.line_search(resids, start.T, y)
    bad = resids.copy()
    bad[3, 1] = np.nan
    with pytest.raises(FloatingPointError, match="NGBoost diverged"):
        ours.line_search(bad, start.T, y)
    labels = rng.integers(0, 3, size=50)
    model = FiniteNGBoost(Dist=smoothed_categorical(3))
    with pytest.raises(FloatingPointError, match="NGBoost diverged"):
        model.line_search(np.full((50, 2), np.inf), np.zeros((50, 2)), labels)
