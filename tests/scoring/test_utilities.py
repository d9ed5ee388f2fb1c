"""Prior-weighted utilities against Monte Carlo over their priors; properness; oracle form."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from udora.scoring import selective_utility, topk_utility
from udora.scoring.utilities import topk_weights

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _selective_mc(loss, v, c, rng, draws=200_000, chunk=20_000):
    """Per-draw utility -U_lambda = mean_i [l_i 1{v_i <= lambda} + lambda 1{v_i > lambda}]."""
    out = []
    for _ in range(draws // chunk):
        lam = c * rng.beta(2.0, 10.0, size=chunk)[:, None]
        out.append(np.mean(np.where(v <= lam, loss, lam), axis=1))
    s = np.concatenate(out)
    return s.mean(), s.std() / np.sqrt(s.size)


def _topk_mc(mu, v, value, sd, rng, draws=40_000):
    """Per-draw -U: k = ceil(n u), u ~ Beta(1.2, 20.8); gamma = t / sd, t ~ Beta(2, 6)."""
    n = mu.size
    k = np.clip(np.ceil(n * rng.beta(1.2, 20.8, size=draws)).astype(int), 1, n)
    gamma = rng.beta(2.0, 6.0, size=draws)[:, None] / sd
    order = np.argsort(-(mu - gamma * v), axis=1, kind="stable")
    gain = np.take_along_axis(value - gamma * v, order, axis=1)
    s = -(np.cumsum(gain, axis=1)[np.arange(draws), k - 1] / k)
    return s.mean(), s.std() / np.sqrt(draws)


def test_selective_closed_form_matches_monte_carlo():
    rng = np.random.default_rng(0)
    y = rng.normal(size=60) * 2.0
    c = float(np.var(y))
    mu, v = y + rng.normal(size=60), c * rng.uniform(0.0, 0.5, size=60)
    loss = (mu - y) ** 2
    mc, se = _selective_mc(loss, v, c, rng)
    assert selective_utility(loss, v, cost_scale=c) == pytest.approx(mc, abs=4 * se)


@pytest.mark.parametrize("n", [7, 100])
def test_topk_sum_and_quadrature_match_monte_carlo(n):
    rng = np.random.default_rng(n)
    mu, v = rng.normal(size=n), rng.gamma(1.0, size=n)
    y = mu + np.sqrt(v) * rng.normal(size=n)
    sd = float(np.std(y))
    mc, se = _topk_mc(mu, v, y, sd, rng)
    # 4 MC standard errors plus 1e-3 for the quadrature over the jumps in t
    assert topk_utility(mu, v, y, outcome_sd=sd) == pytest.approx(mc, abs=4 * se + 1e-3)


def test_topk_weights_are_the_prior_mass_of_each_k():
    w = topk_weights(50)
    assert w.shape == (50,) and w.sum() == pytest.approx(1.0) and np.all(w >= 0)
    u = np.random.default_rng(1).beta(1.2, 20.8, size=400_000)
    freq = np.bincount(np.ceil(50 * u).astype(int), minlength=51)[1:] / u.size
    np.testing.assert_allclose(w, freq, atol=4 * np.sqrt(w.max() / u.size))


# Expected score under y ~ N(m, s2) by Gauss-Hermite quadrature over y (exact for the
# squared error), i.e. a numerical expectation of the realised-outcome score.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(40)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def _expected_selective(mu, v, m, s2, c=1.0):
    y = m + np.sqrt(s2) * _NODES
    return sum(
        w * selective_utility(np.array([(mu - yj) ** 2]), np.array([v]), cost_scale=c)
        for yj, w in zip(y, _WEIGHTS, strict=True)
    )


@settings(max_examples=30, deadline=None)
@given(
    st.floats(-3.0, 3.0),
    st.floats(0.02, 0.6),
    st.floats(-1.5, 1.5),
    st.floats(-2.0, 2.0),
)
def test_selective_is_proper_true_predictive_minimises_expected_score(m, s2, dmu, dlogv):
    truth = _expected_selective(m, s2, m, s2)
    other = _expected_selective(m + dmu * np.sqrt(s2), s2 * np.exp(dlogv), m, s2)
    assert truth <= other + 1e-12


def test_selective_minimiser_is_the_true_predictive():
    m, s2 = 0.4, 0.3
    res = optimize.minimize(
        lambda p: _expected_selective(p[0], np.exp(p[1]), m, s2),
        x0=[-0.5, np.log(0.05)],
        method="Nelder-Mead",
        options={"xatol": 1e-7, "fatol": 1e-12, "maxiter": 2000},
    )
    assert res.x[0] == pytest.approx(m, abs=1e-3)
    assert np.exp(res.x[1]) == pytest.approx(s2, rel=1e-3)


def test_oracle_forms_are_expected_realised_scores_under_the_posterior_predictive():
    rng = np.random.default_rng(2)
    n, draws = 80, 3000
    post_mean, post_var, noise_var = rng.normal(size=n), rng.gamma(1.0, size=n) * 0.2, 0.3
    mu, v = post_mean + 0.3 * rng.normal(size=n), rng.gamma(2.0, size=n) * 0.3
    c, sd = 1.2, 1.1
    risk = noise_var + post_var + (mu - post_mean) ** 2  # squared-error risk target
    y = post_mean + np.sqrt(noise_var + post_var) * rng.normal(size=(draws, n))
    sel = np.array([selective_utility((mu - yy) ** 2, v, cost_scale=c) for yy in y])
    top = np.array([topk_utility(mu, v, yy, outcome_sd=sd, n_nodes=16) for yy in y])
    want_sel = selective_utility(risk, v, cost_scale=c)
    want_top = topk_utility(mu, v, post_mean, outcome_sd=sd, n_nodes=16)
    assert want_sel == pytest.approx(sel.mean(), abs=4 * sel.std() / np.sqrt(draws))
    assert want_top == pytest.approx(top.mean(), abs=4 * top.std() / np.sqrt(draws))


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 60), st.integers(0, 2**32 - 1))
def test_topk_ranking_by_the_outcomes_is_optimal(n, seed):
    # with a constant variance every selection pays the same risk penalty, so ranking by
    # y itself picks the best k for every k and t
    rng = np.random.default_rng(seed)
    y, v = rng.normal(size=n), np.full(n, 0.5)
    best = topk_utility(y, v, y, outcome_sd=1.0)
    assert best <= topk_utility(rng.permutation(y), v, y, outcome_sd=1.0) + 1e-12
    assert best <= topk_utility(rng.normal(size=n), v, y, outcome_sd=1.0) + 1e-12


def test_degenerate_scales_give_nan():
    z = np.ones(4)
    assert np.isnan(selective_utility(z, z, cost_scale=0.0))
    assert np.isnan(topk_utility(z, z, z, outcome_sd=0.0))
    assert np.isnan(topk_utility(z, z, z * np.nan, outcome_sd=1.0))


@pytest.mark.parametrize("shape", [(7,), (50,), (64, 300), (3, 1)])
def test_the_fast_stable_argsort_is_numpys_stable_one(shape):
    from udora.scoring._order import sort_with_order

    rng = np.random.default_rng(sum(shape))
    distinct = rng.normal(size=shape)
    ties = rng.integers(0, 4, size=shape).astype(float)  # every row tied
    mixed = distinct.copy()
    mixed[..., : max(1, shape[-1] // 3)] = 0.5  # some rows' first third tied
    with_nan = distinct.copy()
    with_nan.flat[::5] = np.nan
    for x in (distinct, ties, mixed, with_nan, -np.zeros(shape)):
        np.testing.assert_array_equal(sort_with_order(x)[0], np.argsort(x, axis=-1, kind="stable"))
        np.testing.assert_array_equal(sort_with_order(x)[1], np.sort(x, axis=-1))


@pytest.mark.parametrize("tied", [False, True])
def test_topk_is_its_quadrature_written_out(tied):
    """The rank-weight form against the sum as the docstring writes it: per node, sort by
    mu - gamma v (largest first, ties by index), U_k the mean of the first k gains, then
    sum_k w_k U_k and the node weights (scipy's Gauss-Legendre and Beta density)."""
    from numpy.polynomial.legendre import leggauss
    from scipy.stats import beta

    rng = np.random.default_rng(7)
    n = 40
    mu, v = rng.normal(size=n), rng.gamma(1.0, size=n)
    if tied:  # repeated points: equal keys at every node
        mu[10:20], v[10:20] = mu[0], v[0]
    y = mu + rng.normal(size=n)
    sd = 1.3
    x, wq = leggauss(64)
    t = 0.5 * (x + 1.0)
    q = 0.5 * wq * beta.pdf(t, 2.0, 6.0)
    w = topk_weights(n)
    total = 0.0
    for t_j, q_j in zip(t, q, strict=True):
        g = t_j / sd
        order = np.argsort(-(mu - g * v), kind="stable")
        u = np.cumsum((y - g * v)[order]) / np.arange(1, n + 1)
        total += q_j * np.dot(w, u)
    assert topk_utility(mu, v, y, outcome_sd=sd) == pytest.approx(-total, rel=1e-12, abs=1e-14)
