"""Bagged NGBoost: resample sizes, that members fit exactly their rows, and the combination."""

from __future__ import annotations

import numpy as np
import pytest
from ngboost import NGBRegressor
from ngboost.distns import Normal as NGBoostNormal
from scipy import stats
from sklearn.tree import DecisionTreeRegressor

from udora import methods
from udora.methods.ngboost_bag import Normal, NormalLogScore

FAST = {"n_members": 3, "n_estimators": 15}


@pytest.mark.parametrize(("fraction", "replace"), [(0.8, True), (0.6, False), (0.95, False)])
def test_each_member_fits_round_fraction_n_rows_drawn_as_configured(task, fraction, replace):
    n = task.X.shape[0]
    method = methods.get_method(
        "ngboost_bag", sample_fraction=fraction, replace=replace, **FAST
    ).fit(task.X, task.y, seed=4)
    rows = method.member_rows_
    assert rows.shape == (3, round(fraction * n))
    assert rows.min() >= 0 and rows.max() < n
    for member_rows in rows:
        n_unique = np.unique(member_rows).size
        if replace:
            # 160 draws from 200 rows without a repeat has probability ~1e-41.
            assert n_unique < member_rows.size
        else:
            assert n_unique == member_rows.size
    assert not np.array_equal(rows[0], rows[1])
    # NGBoost starts each member at the Normal MLE of its own targets, so the start
    # parameters identify the rows (with multiplicity) that the member was given.
    ys = (task.y - task.y.mean()) / task.y.std()
    for member, member_rows in zip(method.members_, rows, strict=True):
        start = member.init_params
        assert start[0] == pytest.approx(np.mean(ys[member_rows]), abs=1e-12)
        assert start[1] == pytest.approx(np.log(np.std(ys[member_rows])), abs=1e-12)


def test_prediction_combines_members_mean_average_variance_and_spread(task):
    method = methods.get_method("ngboost_bag", **FAST).fit(task.X, task.y, seed=2)
    pred = method.predict(task.X_near)
    params = np.stack([m.pred_param(task.X_near) for m in method.members_])  # (K, m, 2)
    mu, sd = task.y.mean(), task.y.std()
    means = mu + sd * params[:, :, 0]
    variances = sd**2 * np.exp(2 * params[:, :, 1])
    np.testing.assert_allclose(pred.mean, means.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(pred.aleatoric, variances.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(pred.epistemic, means.var(axis=0), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(pred.member_means, means, rtol=1e-12)


def test_numpy_normal_score_matches_scipy_and_ngboost_normal(task):
    theta = np.array([[0.3, -1.0, 2.0], [0.1, -2.0, 0.5]])
    y = np.array([0.0, -1.5, 4.0])
    manifold = type("M", (NormalLogScore, Normal), {})(theta)
    expected = -stats.norm(loc=theta[0], scale=np.exp(theta[1])).logpdf(y)
    np.testing.assert_allclose(manifold.score(y), expected, rtol=1e-12)
    # Same boosting run with NGBoost's own (scipy-backed) Normal gives the same model.
    fits = [
        NGBRegressor(
            Dist=dist,
            Base=DecisionTreeRegressor(max_depth=3),
            n_estimators=25,
            learning_rate=0.05,
            verbose=False,
            random_state=0,
        ).fit(task.X, task.y)
        for dist in (Normal, NGBoostNormal)
    ]
    ours, theirs = (f.pred_param(task.X_near) for f in fits)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
