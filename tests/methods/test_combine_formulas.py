"""Member combination and the Prediction container, against independent computations."""

from __future__ import annotations

import numpy as np
import pytest

from udora.methods import Prediction, combine_members
from udora.oracle.standardise import Standardiser


def test_combination_formulas_against_loops():
    rng = np.random.default_rng(0)
    K, n = 7, 11
    means = rng.normal(size=(K, n)) * 3.0
    variances = rng.gamma(2.0, size=(K, n))
    pred = combine_members(means, variances)
    for i in range(n):
        mu = sum(means[k, i] for k in range(K)) / K
        assert pred.mean[i] == pytest.approx(mu, rel=1e-12)
        assert pred.aleatoric[i] == pytest.approx(sum(variances[:, i]) / K, rel=1e-12)
        spread = sum((means[k, i] - mu) ** 2 for k in range(K)) / K
        assert pred.epistemic[i] == pytest.approx(spread, rel=1e-12)
    np.testing.assert_array_equal(pred.member_means, means)


def test_total_is_the_variance_of_the_equal_weight_mixture():
    rng = np.random.default_rng(1)
    means = rng.normal(size=(5, 4))
    variances = rng.gamma(2.0, size=(5, 4))
    pred = combine_members(means, variances)
    second_moment = np.mean(variances + means**2, axis=0)  # E[y^2] of the mixture
    np.testing.assert_allclose(pred.total, second_moment - pred.mean**2, rtol=1e-12)
    # Monte Carlo with a fixed key: 400k draws, tolerance ~ 6 standard errors
    draws = 400_000
    k = rng.integers(0, 5, size=draws)
    y = means[k, 0] + np.sqrt(variances[k, 0]) * rng.standard_normal(draws)
    assert y.var() == pytest.approx(pred.total[0], rel=0.02)


def test_one_member_has_zero_epistemic():
    pred = combine_members(np.array([[1.0, 2.0]]), np.array([[0.5, 0.25]]))
    np.testing.assert_array_equal(pred.epistemic, [0.0, 0.0])
    np.testing.assert_array_equal(pred.aleatoric, [0.5, 0.25])


def test_standardised_members_map_back_to_original_units():
    scaler = Standardiser(x_mean=np.zeros(1), x_sd=np.ones(1), y_mean=10.0, y_sd=3.0)
    means = np.array([[0.0, 1.0], [2.0, -1.0]])
    pred = combine_members(scaler.mean_back(means), scaler.var_back(np.ones((2, 2))))
    np.testing.assert_allclose(pred.mean, [13.0, 10.0])
    np.testing.assert_allclose(pred.aleatoric, [9.0, 9.0])
    np.testing.assert_allclose(pred.epistemic, [9.0, 9.0])  # 3^2 * var{0, 2} = 9 * 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mean": np.zeros((2, 1))}, r"mean: expected shape \(n,\)"),
        ({"aleatoric": np.zeros(4)}, "aleatoric: has 4 points, mean has 3"),
        ({"epistemic": np.array([0.0, -1e-3, 0.0])}, "epistemic: variances must be >= 0"),
        ({"mean": np.array([0.0, np.nan, 1.0])}, "mean: 1 of 3 values are not finite"),
        ({"member_means": np.zeros((2, 4))}, r"member_means: expected \(K, 3\)"),
    ],
)
def test_prediction_rejects_bad_arrays(kwargs, message):
    base = {"mean": np.zeros(3), "aleatoric": np.ones(3), "epistemic": np.ones(3)}
    with pytest.raises(ValueError, match=message):
        Prediction(**{**base, **kwargs})


def test_prediction_total_and_dtype():
    pred = Prediction(
        mean=np.array([1, 2], dtype=np.float32), aleatoric=[0.5, 1.0], epistemic=[0.25, 0.0]
    )
    assert pred.mean.dtype == np.float64 and len(pred) == 2
    np.testing.assert_array_equal(pred.total, [0.75, 1.0])


def test_combine_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"\(K, n\)"):
        combine_members(np.zeros((3, 4)), np.zeros((3, 5)))
