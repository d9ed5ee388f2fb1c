"""The classification kernel fit against independent computations and known truths.

The fit's Gram matrix against the textbook numpy kernels of the components it reports;
its gradient against finite differences; the GP classifier's binary probabilities against
GPML's EP as printed (numpy); recovery of known lengthscales from simulated probit labels;
the amplitude bound on separable data.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from cls_textbook import textbook_ep
from numpy_kernels import numpy_sum_kernel

from udora.errors import UserError
from udora.oracle.classification import fit as cfit
from udora.oracle.kernels import build_kernel, parse_kernel


def _theta(d, n_means, seed):
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(0.0, 0.4, d), 0.5, np.log(0.3), rng.normal(0.0, 0.5, n_means)]


@pytest.mark.parametrize("family", cfit.FAMILIES)
def test_fit_gram_is_the_reported_kernel(x64, family):
    """The fitted parameters reach GPJax's kernel as the components the fit reports: the
    Gram matrix equals the textbook kernel of ``_components(family, d, theta)``."""
    d = 3
    Z = np.random.default_rng(0).normal(size=(7, d))
    theta = _theta(d, 1, 1)
    components = cfit._components(family, d, theta)
    parse_kernel(components, d)
    template = build_kernel(cfit._components(family, d, np.zeros(d + 2)), d)
    kernel = eqx.tree_at(
        lambda k: (k.kernels[0].lengthscale, k.kernels[0].variance, k.kernels[1].variance),
        template,
        (jnp.exp(theta[:d]), jnp.exp(theta[d]), jnp.exp(theta[d + 1])),
    )
    np.testing.assert_allclose(
        kernel.cross_covariance(jnp.asarray(Z), jnp.asarray(Z)),
        numpy_sum_kernel(components, Z, Z),
        rtol=1e-12,
    )


@pytest.mark.parametrize("n_classes", [2, 3])
def test_fit_gradient_matches_finite_differences(x64, n_classes):
    """The gradient L-BFGS-B gets (per-point objective in lengthscales, amplitude, linear
    variance, means) equals central differences of the objective, each point re-converged."""
    d, n = 2, 30
    rng = np.random.default_rng(2)
    Z = jnp.asarray(rng.normal(size=(n, d)))
    labels = jnp.asarray(rng.integers(0, n_classes, n))
    template = build_kernel(cfit._components("matern52", d, np.zeros(d + 2)), d)
    value_and_grad = cfit._objective(template, d, n_classes)
    init = (jnp.zeros(n), jnp.zeros(n)) if n_classes == 2 else jnp.zeros((n_classes, n))
    theta = jnp.asarray(_theta(d, 1 if n_classes == 2 else n_classes - 1, 3))

    def loss(x):
        return float(value_and_grad(x, Z, labels, init)[0][0])

    (_, _), grad = value_and_grad(theta, Z, labels, init)
    h = 1e-5
    fd = [
        (loss(theta.at[i].add(h)) - loss(theta.at[i].add(-h))) / (2 * h) for i in range(theta.size)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)


@pytest.mark.slow  # moved for the default set's 4-minute budget
def test_binary_predict_matches_textbook_ep():
    """``predict_proba`` for binary labels equals ``Phi(mu / sqrt(1 + s^2))`` with mu, s^2
    from GPML's sequential EP as printed and dense conditioning, on textbook kernels."""
    rng = np.random.default_rng(4)
    Z, Zs = rng.normal(size=(20, 2)), rng.normal(size=(6, 2))
    labels = (Z[:, 0] - Z[:, 1] + 0.5 * rng.normal(size=20) > 0).astype(int)
    kernel = [
        {"type": "matern32", "variance": 2.0, "lengthscale": [0.8, 1.5]},
        {"type": "linear", "variance": 0.2},
    ]
    mean = -0.3
    proba = cfit.predict_proba(kernel, mean, Z, labels, Zs)
    K = numpy_sum_kernel(kernel, Z, Z)
    _, tau, mu = textbook_ep(K, 2.0 * labels - 1, mean)
    Kx = numpy_sum_kernel(kernel, Zs, Z)
    Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
    A = Kx @ np.linalg.inv(K)
    mu_s = mean + A @ (mu - mean)
    var_s = (
        np.diag(numpy_sum_kernel(kernel, Zs, Zs)) - np.sum(A * Kx, 1) + np.sum((A @ Sigma) * A, 1)
    )
    p1 = scipy.stats.norm.cdf(mu_s / np.sqrt(1 + var_s))
    np.testing.assert_allclose(proba, np.stack([1 - p1, p1], 1), rtol=1e-7, atol=1e-10)


@pytest.mark.slow  # ~10-25 s
def test_multiclass_predict_is_a_distribution_fixed_by_its_seed():
    """(m, C) probabilities that sum to 1; the same seed gives the same numbers and another
    seed numbers within Monte Carlo error (2000 draws: 5 standard errors of 1/2 / sqrt(2000))."""
    rng = np.random.default_rng(5)
    Z, Zs = rng.normal(size=(30, 2)), rng.normal(size=(4, 2))
    labels = rng.integers(0, 3, 30)
    kernel = [
        {"type": "rbf", "variance": 2.0, "lengthscale": [1.0, 1.0]},
        {"type": "linear", "variance": 0.1},
    ]
    means = (0.2, -0.1, -0.1)
    a = cfit.predict_proba(kernel, means, Z, labels, Zs, seed=0)
    b = cfit.predict_proba(kernel, means, Z, labels, Zs, seed=0)
    c = cfit.predict_proba(kernel, means, Z, labels, Zs, seed=1)
    assert a.shape == (4, 3)
    np.testing.assert_allclose(a.sum(1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, c, atol=5 * 0.5 / np.sqrt(cfit.MC_DRAWS))
    assert not np.array_equal(a, c)


@pytest.mark.slow
def test_fit_recovers_lengthscales_of_a_simulated_probit_gp():
    """300 inputs in d = 2, f ~ GP(0.2, 4 RBF(l = (0.6, 2.0)) + 0.05 linear), labels ~
    Bernoulli(Phi(f)): the RBF fit finds each lengthscale within a factor 2 and the amplitude
    within a factor 3 (weakly identified by 300 binary labels), no bound active."""
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 2))
    truth = [
        {"type": "rbf", "variance": 4.0, "lengthscale": [0.6, 2.0]},
        {"type": "linear", "variance": 0.05},
    ]
    f = 0.2 + np.linalg.cholesky(numpy_sum_kernel(truth, X, X) + 1e-8 * np.eye(n)) @ rng.normal(
        size=n
    )
    labels = (rng.random(n) < scipy.stats.norm.cdf(f)).astype(int)
    fitted = cfit.fit_kernel(X, labels, 2, family="rbf")
    ls = np.asarray(fitted.kernel[0]["lengthscale"])
    assert np.all(ls / np.array([0.6, 2.0]) > 0.5) and np.all(ls / np.array([0.6, 2.0]) < 2.0)
    assert 4.0 / 3 < fitted.kernel[0]["variance"] < 4.0 * 3
    assert fitted.record["active"]["amplitude"] is None
    assert fitted.record["inner"]["unconverged_evaluations"] == 0
    assert fitted.record["optimiser"]["success"]


def _circle(n, seed):
    X = np.random.default_rng(seed).normal(size=(n, 2))
    return X, (np.sum(X**2, axis=1) > 1.4).astype(int)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_amplitude_bound_holds_on_separable_labels():
    """Labels separated by a circle (not by a line): the evidence keeps rising with the
    amplitude, so the fit stops at the upper bound and the record says so."""
    X, labels = _circle(100, 0)
    fitted = cfit.fit_kernel(X, labels, 2, family="matern52")
    assert fitted.kernel[0]["variance"] == pytest.approx(cfit.AMPLITUDE_BOUNDS[1], rel=1e-9)
    assert fitted.record["active"]["amplitude"] == "upper"


@pytest.mark.slow
def test_amplitude_follows_a_wider_bound_on_separable_labels():
    """The bound, not the data, stops the amplitude: with the box widened to 25 the fit on
    the circle labels sits at 25."""
    X, labels = _circle(150, 0)
    wider = cfit.fit_kernel(X, labels, 2, family="matern52", amplitude_bounds=(0.05, 25.0))
    assert wider.kernel[0]["variance"] == pytest.approx(25.0, rel=1e-9)
    assert wider.record["active"]["amplitude"] == "upper"


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_linear_bound_holds_on_linearly_separable_labels():
    """Labels = sign of a linear function: the linear variance sits at its default upper
    bound a_max / d and the record says so."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 2))
    labels = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    fitted = cfit.fit_kernel(X, labels, 2, family="matern52")
    assert fitted.kernel[1]["variance"] == pytest.approx(cfit.AMPLITUDE_BOUNDS[1] / 2, rel=1e-9)
    assert fitted.record["active"]["linear"] == "upper"


@pytest.mark.slow  # ~10-25 s
def test_select_family_chooses_the_lowest_held_out_log_loss():
    """Two families on 120 simulated rows: 96 fit, 24 held out (seeded draw); the choice is
    the family with the lower held-out log loss, and its kernel parses."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(250, 2))
    labels = (np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.3 * rng.normal(size=250) > 0).astype(int)
    chosen = cfit.select_family(X, labels, 2, families=("rbf", "matern32"), rows=120, seed=3)
    table = chosen.record["selection"]
    assert set(table) == {"rbf", "matern32"}
    assert chosen.record["rows"] == {"fit": 96, "held_out": 24}
    assert chosen.record["family"] == min(table, key=lambda f: table[f]["log_loss"])
    parse_kernel(chosen.kernel, 2)
    fit_rows, held = cfit.split_rows(250, 2, rows=120, seed=3)
    assert np.intersect1d(fit_rows, held).size == 0 and fit_rows.size + held.size == 120
    redo = cfit.held_out_scores(
        cfit.predict_log_proba(
            chosen.kernel, chosen.mean, X[fit_rows], labels[fit_rows], X[held], seed=3
        ),
        labels[held],
    )
    assert redo["log_loss"] == pytest.approx(table[chosen.record["family"]]["log_loss"], rel=1e-12)


def test_fit_rejects_bad_arguments():
    X = np.zeros((5, 2))
    with pytest.raises(UserError, match="valid: rbf, matern32"):
        cfit.fit_kernel(X, np.zeros(5, int), 2, family="periodic")
    with pytest.raises(UserError, match=r"integers in 0\.\.1"):
        cfit.fit_kernel(X, np.array([0, 1, 2, 0, 1]), 2, family="rbf")
