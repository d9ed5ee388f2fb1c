"""CatBoost-PS and CatBoost-KGB: rows, early stopping, the (mean, variance) output, combination."""

from __future__ import annotations

import numpy as np
import pytest

from udora import methods

PS_FAST = {"n_members": 3, "n_estimators": 80, "learning_rate": 0.2}
KGB_FAST = {"n_members": 4, "n_estimators": 60, "n_prior_estimators": 20}


def test_ps_rows_validation_split_and_early_stopping(task):
    n = task.X.shape[0]
    method = methods.get_method(
        "catboost_ps", bagging_frac=0.7, val_fraction=0.25, n_estimators=1500, n_members=2
    ).fit(task.X, task.y, seed=5)
    val = method.val_rows_
    assert val.size == round(0.25 * n)
    assert method.member_rows_.shape == (2, round(0.7 * (n - val.size)))
    for rows in method.member_rows_:
        assert np.unique(rows).size == rows.size  # drawn without replacement
        assert np.intersect1d(rows, val).size == 0
    ys = (task.y - task.y.mean()) / task.y.std()
    for member in method.members_:
        curve = np.asarray(member.get_evals_result()["validation"]["RMSEWithUncertainty"])
        # Stopped early and kept the best validation iteration.
        assert curve.size < 1500 and member.tree_count_ == int(curve.argmin()) + 1
        # The monitored loss is the Gaussian NLL on our held-out rows (float32 inside CatBoost).
        out = member.predict(task.X[val])
        r = ys[val] - out[:, 0]
        nll = np.mean(0.5 * np.log(2 * np.pi * out[:, 1]) + r**2 / (2 * out[:, 1]))
        assert nll == pytest.approx(curve.min(), abs=2e-3)


def test_ps_second_output_column_is_the_variance(task):
    method = methods.get_method("catboost_ps", **PS_FAST).fit(task.X, task.y, seed=1)
    member = method.members_[0]
    raw = member.predict(task.X_near, prediction_type="RawFormulaVal")  # (mean, log sd)
    out = member.predict(task.X_near)
    np.testing.assert_allclose(out[:, 0], raw[:, 0], rtol=1e-12)
    np.testing.assert_allclose(out[:, 1], np.exp(2 * raw[:, 1]), rtol=1e-6)


def test_ps_prediction_combines_members_in_original_units(task):
    method = methods.get_method("catboost_ps", **PS_FAST).fit(task.X, task.y, seed=1)
    pred = method.predict(task.X_near)
    raw = np.stack(
        [m.predict(task.X_near, prediction_type="RawFormulaVal") for m in method.members_]
    )
    mu, sd = task.y.mean(), task.y.std()
    means = mu + sd * raw[:, :, 0]
    variances = sd**2 * np.exp(2 * raw[:, :, 1])
    np.testing.assert_allclose(pred.mean, means.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(pred.aleatoric, variances.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(pred.epistemic, means.var(axis=0), rtol=1e-8, atol=1e-14)
    assert all(m.get_params()["thread_count"] == 1 for m in method.members_)


def test_kgb_has_zero_aleatoric_and_sample_variance_as_epistemic(task):
    method = methods.get_method("catboost_kgb", **KGB_FAST).fit(task.X, task.y, seed=1)
    pred = method.predict(task.X_far)
    raw = np.stack([m.predict(task.X_far) for m in method.samples_])
    draws = task.y.mean() + task.y.std() * raw
    assert draws.shape == (4, task.X_far.shape[0])
    np.testing.assert_array_equal(pred.aleatoric, 0.0)
    np.testing.assert_allclose(pred.member_means, draws, rtol=1e-12)
    np.testing.assert_allclose(pred.mean, draws.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(pred.epistemic, draws.var(axis=0), rtol=1e-10)
    np.testing.assert_allclose(pred.total, pred.epistemic)


@pytest.mark.parametrize(("name", "fast"), [("catboost_ps", PS_FAST), ("catboost_kgb", KGB_FAST)])
def test_catboost_methods_write_no_files(task, tmp_path, monkeypatch, name, fast):
    monkeypatch.chdir(tmp_path)
    methods.get_method(name, **fast).fit(task.X[:60], task.y[:60], seed=0)
    assert list(tmp_path.iterdir()) == []
