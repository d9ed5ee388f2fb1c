"""Agreement metrics against scipy.stats and hand-worked values; rank invariances."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from udora.scoring import pearson, scale_ratio, spearman
from udora.scoring.agreement import agreement, mse

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

# Integer-valued floats: distinct integers stay distinct under the transforms below.
ints = arrays(np.float64, st.integers(3, 40), elements=st.integers(-500, 500).map(float))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_correlations_match_scipy(data):
    x = data.draw(ints)
    y = data.draw(arrays(np.float64, x.shape, elements=st.integers(-500, 500).map(float)))
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert np.isnan(spearman(x, y)) and np.isnan(pearson(x, y))
        return
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(ints, ints)
def test_spearman_unchanged_by_strictly_increasing_transforms(x, y):
    n = min(x.size, y.size)
    x, y = x[:n], y[:n]
    rho = spearman(x, y)
    for g in (lambda a: np.exp(a / 100.0), lambda a: a**3 + a, lambda a: np.arctan(a / 50.0)):
        np.testing.assert_equal(spearman(g(x), y), rho)
        np.testing.assert_equal(spearman(x, g(y)), rho)


def test_spearman_of_reversed_order_is_minus_one_and_ties_use_midranks():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert spearman(x, -x) == pytest.approx(-1.0)
    # ranks (1, 2.5, 2.5, 4) vs (1, 2, 3, 4): r = 4.5 / sqrt(4.5 * 5)
    assert spearman(np.array([1.0, 2.0, 2.0, 3.0]), x) == pytest.approx(4.5 / np.sqrt(22.5))


def test_degenerate_inputs_give_nan_not_errors():
    x = np.arange(5.0)
    for bad in (np.ones(5), np.r_[np.nan, 1.0, 2.0, 3.0, 4.0]):
        assert np.isnan(spearman(bad, x)) and np.isnan(pearson(x, bad))
    assert np.isnan(spearman(np.array([1.0]), np.array([2.0])))
    assert np.isnan(scale_ratio(x, np.zeros(5)))


def test_mse_and_scale_ratio_hand_worked():
    e = np.array([1.0, 4.0, 9.0, 2.0])
    t = np.array([2.0, 2.0, 3.0, 0.0])  # the zero target is left out of the ratio
    assert mse(e, t) == pytest.approx((1 + 4 + 36 + 4) / 4)
    assert scale_ratio(e, t) == pytest.approx(2.0)  # median of 0.5, 2, 3
    assert set(agreement(e, t, scale=False)) == {"spearman", "pearson"}


def test_bad_shapes_name_the_argument():
    with pytest.raises(ValueError, match=r"`target` must have shape \(3,\), got shape \(4,\)"):
        spearman(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match=r"`estimate` must have shape \(N,\)"):
        pearson(np.zeros((3, 1)), np.zeros(3))
