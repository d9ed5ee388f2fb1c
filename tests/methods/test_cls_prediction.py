"""The classification prediction type: the ensemble decomposition against scipy's
entropy, and one clear error naming the field for each broken contract."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import entropy

from udora.methods.classification.prediction import ClassificationPrediction, check_labels
from udora.methods.prediction import PredictionError, stored


def _members(seed=0, K=5, n=40, C=4):
    return np.random.default_rng(seed).dirichlet(np.ones(C), size=(K, n))


def test_members_give_expected_entropy_and_mutual_information():
    mp = _members()
    pred = ClassificationPrediction.from_members(mp)
    q = mp.mean(axis=0)
    np.testing.assert_allclose(pred.prob, q)
    np.testing.assert_allclose(pred.aleatoric, np.mean([entropy(p, axis=1) for p in mp], 0))
    np.testing.assert_allclose(pred.total, entropy(q, axis=1), rtol=1e-12)
    # Brier scale: 1 - E||p||^2 and E||p - q||^2 (the members' spread about their mean)
    spread = np.mean([np.sum((p - q) ** 2, axis=1) for p in mp], axis=0)
    np.testing.assert_allclose(pred.epistemic_brier, spread, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(pred.aleatoric_brier + pred.epistemic_brier, 1 - np.sum(q * q, 1))


@pytest.mark.parametrize(
    "change, field, words",
    [
        (lambda p: p * 1.1, "prob", "do not sum to 1"),
        (lambda p: np.where(np.arange(p.shape[1]) == 0, -0.1, p), "prob", r"\[0, 1\]"),
        (lambda p: np.where(p > 0.5, np.nan, p), "prob", "not finite"),
        (lambda p: p[:, :1], "prob", "C >= 2"),
    ],
)
def test_broken_probabilities_name_the_field(change, field, words):
    q = _members().mean(axis=0)
    n = q.shape[0]
    with pytest.raises(PredictionError, match=rf"ClassificationPrediction\.{field}: .*{words}"):
        ClassificationPrediction(prob=change(q), aleatoric=np.ones(n), epistemic=np.ones(n))


def test_estimates_and_optional_fields_are_checked():
    q = _members().mean(axis=0)
    n = q.shape[0]
    with pytest.raises(PredictionError, match=r"\.epistemic: must be >= 0"):
        ClassificationPrediction(prob=q, aleatoric=np.ones(n), epistemic=-np.ones(n))
    with pytest.raises(PredictionError, match=r"\.aleatoric: expected shape \(40,\)"):
        ClassificationPrediction(prob=q, aleatoric=np.ones(n + 1), epistemic=np.ones(n))
    with pytest.raises(PredictionError, match="set both or neither"):
        ClassificationPrediction(
            prob=q, aleatoric=np.ones(n), epistemic=np.ones(n), aleatoric_brier=np.ones(n)
        )
    with pytest.raises(PredictionError, match=r"member_probs: expected \(K, 40, 4\)"):
        ClassificationPrediction(
            prob=q, aleatoric=np.ones(n), epistemic=np.ones(n), member_probs=_members(C=3)
        )


def test_the_runner_keeps_what_it_validates_and_counts_points_on_their_axis():
    class Lookalike:  # not the type: its fields are copied and validated
        def __init__(self, mp):
            pred = ClassificationPrediction.from_members(mp)
            self.prob, self.aleatoric, self.epistemic = pred.prob, pred.aleatoric, pred.epistemic
            self.member_probs = mp

    kept = stored(Lookalike(_members()), "classification", 40)
    assert isinstance(kept, ClassificationPrediction) and kept.member_probs.shape == (5, 40, 4)
    assert kept.epistemic_brier is not None  # derived from the members
    with pytest.raises(PredictionError, match=r"prob: describes 40 points, the pool has 41"):
        stored(Lookalike(_members()), "classification", 41)


def test_labels_must_be_class_codes():
    np.testing.assert_array_equal(check_labels(np.array([0.0, 2.0, 1.0]), 3), [0, 2, 1])
    with pytest.raises(ValueError, match=r"y: expected class codes 0\.\.2, got 3\.0 at row 1"):
        check_labels(np.array([0.0, 3.0]), 3)
    with pytest.raises(ValueError, match=r"got 0\.5 at row 0"):
        check_labels(np.array([0.5]), 3)
