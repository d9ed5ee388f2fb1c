"""Interval-valued AUC against brute-force pair counts, its own ROC areas and scipy's
Mann-Whitney statistic for point intervals."""

import numpy as np
import pytest
from scipy import stats

from udora.scoring.interval_auc import exceedance_regions, interval_auc_curves, interval_regions


def _intervals(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.4
    centre = rng.normal(size=n) + 0.8 * labels
    half = rng.gamma(2.0, 0.3, size=n)
    return labels, centre - half, centre + half


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_regions_equal_a_brute_force_pairwise_count(seed):
    labels, lo, hi = _intervals(70, seed)
    pos, neg = np.flatnonzero(labels), np.flatnonzero(~labels)
    above = np.mean([lo[i] > hi[j] for i in pos for j in neg])
    below = np.mean([hi[i] < lo[j] for i in pos for j in neg])
    regions = interval_regions(labels, lo, hi)
    assert regions["above"] == pytest.approx(above, abs=1e-15)
    assert regions["below"] == pytest.approx(below, abs=1e-15)
    assert regions["overlap"] == pytest.approx(1.0 - above - below, abs=1e-15)


@pytest.mark.parametrize("seed", [3, 4])
def test_roc_areas_are_the_region_probabilities(seed):
    labels, lo, hi = _intervals(300, seed)
    regions = interval_regions(labels, lo, hi)
    curves = interval_auc_curves(labels, lo, hi)
    assert curves["auc_lower"] == pytest.approx(regions["above"], abs=1e-12)
    assert curves["auc_upper"] == pytest.approx(1.0 - regions["below"], abs=1e-12)
    gap = curves["auc_upper"] - curves["auc_lower"]
    assert gap == pytest.approx(regions["overlap"], abs=1e-12)


def test_point_intervals_give_the_classical_auc():
    labels, centre, _ = _intervals(400, 5)
    u = stats.mannwhitneyu(centre[labels], centre[~labels]).statistic
    auc = u / (labels.sum() * (~labels).sum())
    regions = interval_regions(labels, centre, centre)
    curves = interval_auc_curves(labels, centre, centre)
    assert regions["above"] == pytest.approx(auc, abs=1e-12) and regions["overlap"] == 0.0
    assert curves["auc_lower"] == pytest.approx(auc, abs=1e-12)
    assert curves["auc_upper"] == pytest.approx(auc, abs=1e-12)


@pytest.mark.parametrize(
    ("labels", "lo", "hi", "message"),
    [
        ([True, False], [0.0, 1.0], [1.0], "one shape"),
        ([True, False], [2.0, 0.0], [1.0, 1.0], "lower <= upper"),
        ([True, True], [0.0, 0.0], [1.0, 1.0], "one positive and one negative"),
        ([True, False], [0.0, np.nan], [1.0, 1.0], "finite"),
    ],
)
def test_bad_inputs_raise_one_clear_error(labels, lo, hi, message):
    with pytest.raises(ValueError, match=message):
        interval_regions(np.array(labels), np.array(lo), np.array(hi))


def test_exceedance_regions_use_normal_intervals_and_the_f_quantile():
    rng = np.random.default_rng(6)
    n = 500
    f = rng.normal(size=n)
    post_var = rng.uniform(0.05, 0.3, size=n)
    post_mean = f + np.sqrt(post_var) * rng.normal(size=n)
    mean, epistemic = post_mean + 0.2, 2.0 * post_var
    out = exceedance_regions(f, mean, epistemic, post_mean, post_var, quantile=0.8, levels=(0.9,))
    labels = f > np.quantile(f, 0.8)
    z = stats.norm.ppf(0.95)
    lo, hi = mean - z * np.sqrt(epistemic), mean + z * np.sqrt(epistemic)
    assert out["method"][0.9] == interval_regions(labels, lo, hi)
    oracle = out["oracle"][0.9]
    assert sum(oracle.values()) == pytest.approx(1.0)
    # wider intervals (twice the variance) can only turn confident pairs into overlaps
    assert out["method"][0.9]["overlap"] > oracle["overlap"]
    with pytest.raises(ValueError, match="quantile"):
        exceedance_regions(f, mean, epistemic, post_mean, post_var, quantile=1.0)
