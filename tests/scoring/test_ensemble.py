"""Ensemble scores against the O(K^2) pairwise CRPS, scoringrules, and exchangeable MC."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from udora.scoring import (
    error_spread_spearman,
    fair_crps_ensemble,
    gaussian_crps,
    spread_skill_ratio,
    top_decile_error_ratio,
)

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _pairwise_fair_crps(x, y):
    """O(K^2) form: (1/K) sum |x_k - y| - 1/(2K(K-1)) sum_{j,k} |x_j - x_k|, per column."""
    k = x.shape[0]
    skill = np.abs(x - y).mean(axis=0)
    pairs = np.abs(x[:, None, :] - x[None, :, :]).sum(axis=(0, 1))
    return skill - pairs / (2 * k * (k - 1))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 30), st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_fair_crps_sorted_form_equals_pairwise_form(k, n, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(k, n)), rng.normal(size=n)
    np.testing.assert_allclose(fair_crps_ensemble(x, y), _pairwise_fair_crps(x, y), atol=1e-12)


def test_fair_crps_matches_scoringrules_and_is_unbiased_for_the_gaussian_crps():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(7, 300)), rng.normal(size=300)
    import scoringrules as sr

    ref = sr.crps_ensemble(y, x, m_axis=0, estimator="fair")
    np.testing.assert_allclose(fair_crps_ensemble(x, y), ref, rtol=1e-10, atol=1e-12)
    # members drawn from N(0, 1): the fair score's mean is the Gaussian CRPS, even for K = 3
    y = np.full(20_000, 0.7)
    members = rng.normal(size=(3, y.size))
    scores = fair_crps_ensemble(members, y)
    exact = gaussian_crps(np.zeros(1), np.ones(1), np.array([0.7]))[0]
    assert scores.mean() == pytest.approx(exact, abs=4 * scores.std() / np.sqrt(y.size))


@pytest.mark.parametrize("k", [3, 10])
def test_spread_skill_is_one_for_an_exchangeable_truth(k):
    rng = np.random.default_rng(k)
    n = 50_000
    centre, sd = rng.normal(size=n), rng.uniform(0.5, 2.0, size=n)
    draws = centre + sd * rng.normal(size=(k + 1, n))  # truth and members exchangeable
    assert spread_skill_ratio(draws[1:], draws[0]) == pytest.approx(1.0, abs=0.02)
    # (without the sqrt((K+1)/K) factor it would sit at sqrt(K/(K+1)): 0.87 for K = 3)
    noise = 3.0 * sd**2  # realised outcome = exchangeable truth + noise of this variance
    y = draws[0] + np.sqrt(noise) * rng.normal(size=n)
    assert spread_skill_ratio(draws[1:], y, noise) == pytest.approx(1.0, abs=0.02)
    # members alone: spread^2 = (K+1)/K sd^2 against skill^2 = ((K+1)/K + 3) sd^2
    expected = np.sqrt((k + 1) / k / ((k + 1) / k + 3.0))
    assert spread_skill_ratio(draws[1:], y) == pytest.approx(expected, abs=0.02)


def test_error_spread_spearman_matches_scipy():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(5, 200)) * rng.gamma(1.0, size=200), rng.normal(size=200)
    ref = stats.spearmanr(x.std(axis=0, ddof=1), np.abs(x.mean(axis=0) - y)).statistic
    assert error_spread_spearman(x, y) == pytest.approx(ref, abs=1e-12)


def test_top_decile_error_ratio_hand_worked():
    # 20 points; members +-s_i around 0; the two largest spreads carry errors 4 and 6
    s = np.arange(1.0, 21.0)
    x = np.stack([s, -s])
    y = np.ones(20)
    y[[18, 19]] = [4.0, 6.0]
    assert top_decile_error_ratio(x, y) == pytest.approx(5.0 / (28.0 / 20.0))


@settings(max_examples=20, deadline=None)
@given(arrays(np.float64, (1, 6), elements=st.floats(-10, 10)))
def test_single_member_gives_nan(x):
    y = np.zeros(6)
    assert np.isnan(fair_crps_ensemble(x, y)).all()
    assert np.isnan(spread_skill_ratio(x, y))
    assert np.isnan(top_decile_error_ratio(x, y))


def test_member_shape_is_checked():
    with pytest.raises(ValueError, match=r"`member_means` must have shape \(K, N\) with N=4"):
        fair_crps_ensemble(np.zeros((3, 5)), np.zeros(4))
