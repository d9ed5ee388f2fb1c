"""Calibration curves against pandas quantile binning; log-ratio summaries by hand."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udora.scoring import calibration_curve, calibration_log_ratios

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


@pytest.mark.parametrize("n", [50, 200, 1000])
def test_curve_matches_pandas_qcut(n):
    rng = np.random.default_rng(n)
    e = rng.gamma(2.0, size=n)
    t = e * rng.lognormal(0.0, 0.5, size=n)
    bins = pd.qcut(e, 10, labels=False)  # n divisible by 10 and no ties: the same bins
    ref = pd.DataFrame({"e": e, "t": t, "b": bins}).groupby("b").mean()
    mean_e, mean_t = calibration_curve(e, t)
    np.testing.assert_allclose(mean_e, ref["e"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(mean_t, ref["t"].to_numpy(), rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(10, 300), st.floats(0.05, 20.0), st.integers(0, 2**32 - 1))
def test_log_ratios_of_a_scaled_target(n, s, seed):
    # t = s * e in every bin, so every log ratio is -log(s).
    e = np.random.default_rng(seed).uniform(0.1, 5.0, size=n)
    err, bias = calibration_log_ratios(e, s * e)
    assert bias == pytest.approx(-np.log(s), abs=1e-12)
    assert err == pytest.approx(abs(np.log(s)), abs=1e-12)


def test_log_ratios_hand_worked_two_bins():
    e = np.array([1.0, 3.0, 10.0, 30.0])  # bins {1, 3} and {10, 30}
    t = np.array([4.0, 4.0, 10.0, 10.0])  # bin means: e (2, 20), t (4, 10)
    err, bias = calibration_log_ratios(e, t, n_bins=2)
    assert bias == pytest.approx(0.5 * (np.log(0.5) + np.log(2.0)))
    assert err == pytest.approx(np.log(2.0))


def test_degenerate_bins_give_nan():
    t = np.linspace(1.0, 2.0, 20)
    assert all(np.isnan(calibration_log_ratios(np.zeros(20), t)))  # zero estimate
    mean_e, _ = calibration_curve(np.arange(5.0), np.arange(5.0))  # N < 10: empty bins
    assert np.isnan(mean_e).sum() == 5 and all(np.isnan(calibration_log_ratios(t[:5], t[:5])))
