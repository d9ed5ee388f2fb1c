"""NGBoost on classification: the smoothed categorical's initial logits against counts
with one pseudo-label per class, and a bag whose resamples miss a class."""

from __future__ import annotations

import numpy as np
import pytest

from udora.methods.ngboost_bag import NGBoostBag, smoothed_categorical
from udora.oracle.prior import TaskKnowledge


def test_initial_logits_count_one_pseudo_label_per_class():
    y = np.array([0, 0, 0, 2, 2, 0])  # class 1 absent
    logits = smoothed_categorical(3).fit(y)
    p = np.array([5.0, 1.0, 3.0]) / 9.0
    np.testing.assert_allclose(logits, np.log(p[1:] / p[0]), rtol=1e-12)


def test_a_bag_fits_a_sample_without_some_class_and_predicts_every_class():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = (X[:, 0] > 0).astype(float)  # classes 0 and 1 of three
    knowledge = TaskKnowledge(("a", "b"), 2, 80, classes=("x", "y", "z"))
    model = NGBoostBag(n_members=3, n_estimators=30).fit(X, y, seed=0, knowledge=knowledge)
    pred = model.predict(X[:10])
    assert pred.prob.shape == (10, 3) and pred.member_probs.shape == (3, 10, 3)
    assert np.all(pred.prob[:, 2] < 0.2)  # the missing class: its pseudo-count only
    agree = np.mean(pred.prob[:, :2].argmax(axis=1) == y[:10])
    assert agree >= 0.9
    np.testing.assert_allclose(pred.prob, pred.member_probs.mean(axis=0), rtol=1e-12)
    with pytest.raises(ValueError, match="class codes"):
        NGBoostBag(n_members=2, n_estimators=5).fit(X, y + 0.5, seed=0, knowledge=knowledge)
