"""CatBoost virtual ensembles: the method's AU and AU + EU from the virtual members'
probabilities equal CatBoost's own ``TotalUncertainty`` (its data uncertainty and the
entropy of the mean), binary and three classes; the members' mean is the prediction."""

from __future__ import annotations

import numpy as np
import pytest

from udora import methods
from udora.oracle.prior import TaskKnowledge


@pytest.mark.parametrize("n_classes", [2, 3])
def test_au_and_total_are_catboosts_own_total_uncertainty(n_classes):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.digitize(X[:, 0] + rng.normal(size=200), [-0.5, 0.5][: n_classes - 1])
    knowledge = TaskKnowledge(("a", "b", "c"), 3, 200, classes=tuple("xyz"[:n_classes]))
    m = methods.get_method("catboost_ve", n_estimators=80, n_members=6)
    m.fit(X, y, seed=0, knowledge=knowledge)
    X_test = rng.normal(size=(40, 3))
    pred = m.predict(X_test)
    theirs = np.asarray(
        m.model_.virtual_ensembles_predict(
            X_test, prediction_type="TotalUncertainty", virtual_ensembles_count=6
        )
    )
    np.testing.assert_allclose(pred.aleatoric, theirs[:, 0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(pred.total, theirs[:, 1], rtol=1e-6, atol=1e-9)
    assert pred.member_probs.shape == (6, 40, n_classes)
    np.testing.assert_allclose(pred.prob, pred.member_probs.mean(axis=0), rtol=1e-12)


def test_an_early_stop_before_2k_trees_is_refitted_for_2k():
    """Labels the first trees already separate, a large rate and patience 1: the early stop
    keeps fewer than 2K trees, which CatBoost cannot split into K virtual members; the
    method refits for exactly 2K and predicts K members. n_estimators < 2K is refused."""
    from udora.methods.base import ConfigError

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    knowledge = TaskKnowledge(("a", "b"), 2, 300, classes=("x", "y"))
    early = methods.get_method("catboost_ve", n_members=15, learning_rate=1.0, patience=1)
    early.n_classes_ = 2  # what fit sets before building its model
    stopped = early._member(0)
    stopped.fit(
        X[:240], y[:240], eval_set=(X[240:], y[240:]), early_stopping_rounds=1, use_best_model=True
    )
    assert stopped.tree_count_ < 30  # the situation the method must handle
    early.fit(X, y, seed=0, knowledge=knowledge)
    assert early.model_.tree_count_ == 30
    assert early.predict(X[:7]).member_probs.shape == (15, 7, 2)
    with pytest.raises(ConfigError, match=r"n_estimators \(20\) must be at least 2 \* n_members"):
        methods.get_method("catboost_ve", n_estimators=20, n_members=15)
