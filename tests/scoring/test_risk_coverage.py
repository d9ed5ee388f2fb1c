"""Risk-coverage and normalised AURC against brute-force loops, tie enumeration and MC."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udora.scoring import aurc, normalised_aurc, risk_coverage_curve

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _brute_aurc(order, t):
    """AURC of a given ordering, one prefix at a time."""
    kept = [t[i] for i in order]
    return sum(sum(kept[:k]) / k for k in range(1, len(kept) + 1)) / len(kept)


def test_curve_and_aurc_match_a_loop():
    rng = np.random.default_rng(0)
    e, t = rng.normal(size=40), rng.gamma(1.5, size=40)
    cov, ret = risk_coverage_curve(e, t)
    order = sorted(range(40), key=lambda i: e[i])
    np.testing.assert_allclose(cov, np.arange(1, 41) / 40)
    np.testing.assert_allclose(ret, [np.mean(t[order[:k]]) for k in range(1, 41)], rtol=1e-12)
    assert aurc(e, t) == pytest.approx(_brute_aurc(order, t), rel=1e-12)


def test_ties_equal_the_average_over_all_tie_breaks():
    e = np.array([0.0, 1.0, 1.0, 1.0, 2.0, 2.0])
    t = np.array([3.0, 1.0, 5.0, 2.0, 0.5, 4.0])
    breaks = [
        [0, *g1, *g2]
        for g1 in itertools.permutations([1, 2, 3])
        for g2 in itertools.permutations([4, 5])
    ]
    ref = np.mean([_brute_aurc(o, t) for o in breaks])
    assert aurc(e, t) == pytest.approx(ref, rel=1e-12)
    assert normalised_aurc(np.ones(6), t) == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 200), st.integers(0, 2**32 - 1))
def test_oracle_order_scores_one_and_reverse_order_below_zero(n, seed):
    t = np.random.default_rng(seed).gamma(0.7, size=n)
    if np.ptp(t) == 0:
        return
    assert normalised_aurc(np.log(t), t) == pytest.approx(1.0, abs=1e-9)
    assert normalised_aurc(-t, t) < 0.0


def test_random_orders_score_zero_on_average():
    rng = np.random.default_rng(1)
    t = rng.gamma(0.7, size=300)
    scores = np.array([normalised_aurc(rng.permutation(300), t) for _ in range(2000)])
    se = scores.std() / np.sqrt(scores.size)
    assert abs(scores.mean()) < 4 * se


def test_degenerate_inputs():
    assert np.isnan(normalised_aurc(np.arange(4.0), np.ones(4)))  # constant target
    assert np.isnan(aurc(np.array([]), np.array([])))
    assert np.isnan(normalised_aurc(np.array([0.0, np.nan]), np.array([1.0, 2.0])))
