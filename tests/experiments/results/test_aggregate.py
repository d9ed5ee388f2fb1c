"""Kendall's W by hand and via mean pairwise Spearman; tau by pair counting; OLS vs scipy."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from udora.experiments.results.aggregate import kendall_tau, kendall_w, ols_slope

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def test_kendall_w_hand_worked_without_ties():
    # rank sums 4, 6, 8, 12 around 7.5: S = 12.25 + 2.25 + 0.25 + 20.25 = 35
    # W = 12 * 35 / (3^2 * (4^3 - 4)) = 420 / 540
    ranks = np.array([[1, 2, 3, 4], [2, 1, 3, 4], [1, 3, 2, 4]], dtype=float)
    assert kendall_w(ranks) == pytest.approx(7.0 / 9.0)
    assert kendall_w(10.0 * ranks - 3.0) == pytest.approx(7.0 / 9.0)  # scores, not ranks


def test_kendall_w_hand_worked_with_ties():
    # mid-ranks (1, 2, 3, 4), (1.5, 1.5, 3, 4), (1, 2, 3.5, 3.5): rank sums 3.5, 5.5, 9.5,
    # 11.5, S = 40; two tie pairs, T = 2 * (2^3 - 2) = 12; W = 480 / (540 - 3 * 12) = 20/21
    scores = np.array([[0.1, 0.2, 0.3, 0.4], [5.0, 5.0, 6.0, 7.0], [-3.0, -2.0, 8.0, 8.0]])
    assert kendall_w(scores) == pytest.approx(20.0 / 21.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 8), st.integers(3, 12), st.integers(0, 2**32 - 1))
def test_kendall_w_equals_mean_pairwise_spearman_identity(m, n, seed):
    scores = np.random.default_rng(seed).normal(size=(m, n))  # continuous: no ties
    rho = np.mean([stats.spearmanr(a, b).statistic for a, b in itertools.combinations(scores, 2)])
    assert kendall_w(scores) == pytest.approx((1.0 + (m - 1) * rho) / m, abs=1e-12)


def test_kendall_w_degenerate():
    assert np.isnan(kendall_w(np.ones((3, 4))))  # every row fully tied
    assert kendall_w(np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])) == pytest.approx(0.0)
    with pytest.raises(ValueError, match=r"`scores` must have shape \(m, n\)"):
        kendall_w(np.ones(4))


def _tau_b_by_counting(x, y):
    c = d = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        tx += sx == 0
        ty += sy == 0
        c += sx * sy > 0
        d += sx * sy < 0
    pairs = len(x) * (len(x) - 1) / 2
    return (c - d) / np.sqrt((pairs - tx) * (pairs - ty))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=2, max_size=25))
def test_kendall_tau_b_matches_pair_counting(pairs):
    x, y = (np.array(v, dtype=float) for v in zip(*pairs, strict=True))
    got = kendall_tau(x, y)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert np.isnan(got)
    else:
        assert got == pytest.approx(_tau_b_by_counting(x, y), abs=1e-12)


def test_kendall_tau_b_counts_pairs_up_to_its_limit_and_is_scipys_past_it():
    from udora.experiments.results.aggregate import PAIRWISE_MAX

    rng = np.random.default_rng(1)
    for n in (PAIRWISE_MAX, PAIRWISE_MAX + 1, 500):
        x = rng.integers(0, 30, size=n).astype(float)  # with ties
        y = x + rng.integers(0, 20, size=n)
        want = stats.kendalltau(x, y, variant="b").statistic
        assert kendall_tau(x, y) == pytest.approx(want, abs=1e-12), n


def test_ols_slope_matches_linregress():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 10.0, size=30)
    y = 2.0 - 0.7 * x + rng.normal(size=30)
    ref = stats.linregress(x, y)
    slope, se = ols_slope(x, y)
    assert slope == pytest.approx(ref.slope, rel=1e-12)
    assert se == pytest.approx(ref.stderr, rel=1e-10)
    assert ols_slope(x[:2], y[:2])[0] == pytest.approx((y[1] - y[0]) / (x[1] - x[0]))
    assert np.isnan(ols_slope(x[:2], y[:2])[1]) and np.isnan(ols_slope(np.ones(5), y[:5])[0])


def test_kendall_tau_of_rows_is_scipys_tau_b_of_each_row():
    from scipy.stats import kendalltau

    from udora.experiments.results.aggregate import kendall_tau_rows

    rng = np.random.default_rng(4)
    y = rng.integers(0, 5, size=9).astype(float)  # ties in the reference ranking
    x = rng.integers(0, 4, size=(30, 9)).astype(float)  # ties in every row
    x[0] = 2.0  # a constant row: undefined
    got = kendall_tau_rows(x, y)
    assert np.isnan(got[0])
    want = [kendalltau(row, y, variant="b").statistic for row in x[1:]]
    np.testing.assert_allclose(got[1:], want, rtol=1e-12)
