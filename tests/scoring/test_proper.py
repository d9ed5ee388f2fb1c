"""Gaussian NLL, CRPS, coverage, reliability and PIT against integration, libraries and MC."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from udora.scoring import proper

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

finite = st.floats(-50.0, 50.0)
var = st.floats(1e-4, 100.0)


def _crps_by_quadrature(mu, v, y):
    """int (F(x) - 1{x >= y})^2 dx, split at y."""
    sd = np.sqrt(v)
    below = integrate.quad(lambda x: stats.norm.cdf(x, mu, sd) ** 2, -np.inf, y)[0]
    above = integrate.quad(lambda x: stats.norm.sf(x, mu, sd) ** 2, y, np.inf)[0]
    return below + above


@settings(max_examples=25, deadline=None)
@given(finite, var, st.floats(-5.0, 5.0))
def test_crps_matches_numerical_integration(mu, v, z):
    y = mu + z * np.sqrt(v)
    got = proper.gaussian_crps(np.array([mu]), np.array([v]), np.array([y]))[0]
    assert got == pytest.approx(_crps_by_quadrature(mu, v, y), rel=1e-6, abs=1e-9)


def test_crps_matches_properscoring_and_scoringrules():
    rng = np.random.default_rng(0)
    mu, v, y = rng.normal(size=500), rng.gamma(1.0, size=500), rng.normal(size=500) * 2
    got = proper.gaussian_crps(mu, v, y)
    import properscoring as ps

    np.testing.assert_allclose(got, ps.crps_gaussian(y, mu=mu, sig=np.sqrt(v)), rtol=1e-10)
    import scoringrules as sr

    np.testing.assert_allclose(got, sr.crps_normal(y, mu, np.sqrt(v)), rtol=1e-10)


@settings(max_examples=50, deadline=None)
@given(finite, var, finite)
def test_crps_nonnegative_and_tends_to_absolute_error(mu, v, y):
    args = np.array([mu]), np.array([v]), np.array([y])
    assert proper.gaussian_crps(*args)[0] >= 0.0
    small = proper.gaussian_crps(np.array([mu]), np.array([v * 1e-12]), np.array([y]))[0]
    assert small == pytest.approx(abs(mu - y), abs=2e-6 * np.sqrt(v) + 1e-12)
    assert proper.gaussian_crps(np.array([mu]), np.zeros(1), np.array([y]))[0] == abs(mu - y)


def test_nll_matches_scipy_logpdf():
    rng = np.random.default_rng(1)
    mu, v, y = rng.normal(size=100), rng.gamma(1.0, size=100), rng.normal(size=100)
    np.testing.assert_allclose(
        proper.gaussian_nll(mu, v, y), -stats.norm.logpdf(y, mu, np.sqrt(v)), rtol=1e-12
    )
    assert np.isnan(proper.gaussian_nll(np.zeros(1), np.zeros(1), np.ones(1))[0])


def test_calibrated_gaussian_has_nominal_coverage_and_flat_pit():
    rng = np.random.default_rng(2)
    n = 40_000
    mu, v = rng.normal(size=n) * 3, rng.gamma(2.0, size=n)
    y = mu + np.sqrt(v) * rng.normal(size=n)
    for level in (0.5, 0.8, 0.9, 0.95):
        tol = 4 * np.sqrt(level * (1 - level) / n)
        assert proper.interval_coverage(mu, v, y, level) == pytest.approx(level, abs=tol)
    u = proper.pit(mu, v, y)
    _, density = proper.pit_histogram(u)
    # a bin holds ~ Binomial(n, 0.1): density sd = sqrt(0.9 / (0.1 n))
    assert np.max(np.abs(density - 1.0)) < 4 * np.sqrt(0.9 / (0.1 * n))
    levels, observed = proper.reliability_curve(u)
    assert np.max(np.abs(observed - levels)) < 0.01
    assert proper.miscalibration_area(u) < 0.01
    # an overconfident predictive (variance a quarter of the truth) misses
    assert proper.interval_coverage(mu, v / 4, y, 0.9) < 0.65
    assert proper.miscalibration_area(proper.pit(mu, v / 4, y)) > 0.05


def test_miscalibration_area_exact_against_a_fine_grid():
    u = np.random.default_rng(3).beta(2.0, 5.0, size=37)
    grid = np.linspace(0.0, 1.0, 400_001)
    ecdf = np.searchsorted(np.sort(u), grid, side="right") / u.size
    ref = integrate.trapezoid(np.abs(ecdf - grid), grid)
    assert proper.miscalibration_area(u) == pytest.approx(ref, abs=1e-5)
    # hand-worked: every PIT at 1/2 gives 2 * int_0^1/2 p dp; every PIT at 1 gives 1/2
    assert proper.miscalibration_area(np.full(9, 0.5)) == pytest.approx(0.25)
    assert proper.miscalibration_area(np.ones(9)) == pytest.approx(0.5)


def test_bad_level_and_shapes_raise():
    z = np.zeros(3)
    with pytest.raises(ValueError, match="`level`"):
        proper.interval_coverage(z, z + 1, z, 1.0)
    with pytest.raises(ValueError, match=r"`y` must have shape \(3,\), got shape \(2,\)"):
        proper.gaussian_crps(z, z, np.zeros(2))


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95])
def test_interval_score_matches_scoringrules(level):
    import scoringrules as sr

    rng = np.random.default_rng(11)
    mu, v = rng.normal(size=300), rng.uniform(0.1, 2.0, size=300)
    y = mu + rng.normal(size=300) * 1.5
    half = stats.norm.ppf(0.5 + level / 2) * np.sqrt(v)
    expected = np.asarray(sr.interval_score(y, mu - half, mu + half, 1.0 - level))
    np.testing.assert_allclose(proper.interval_score(mu, v, y, level), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="level"):
        proper.interval_score(mu, v, y, 1.0)
