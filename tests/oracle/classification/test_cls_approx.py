"""EP and Laplace for GP classification against independent computations.

Exact references: the one-point probit posterior by quadrature, the probit evidence of 2-3
points as a Gaussian orthant probability (``Z = P(y_i (f_i + e_i) > 0 for all i)``, e_i
standard normal, computed by scipy's multivariate normal CDF). Independent approximations:
GPML's sequential EP and eq. 3.65 as printed (numpy, ``cls_textbook.py``), the Laplace mode
by scipy's BFGS, its determinant, evidence and predictive by dense numpy algebra, a dense
Newton iteration for two classes. Gradients against central finite differences.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.optimize
import scipy.stats
from cls_textbook import textbook_ep
from scipy.special import expit, log_softmax, softmax

from udora.oracle.classification import approx


def _rbf(X, amp, ls):
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    return amp * np.exp(-0.5 * d2 / ls**2)


def _problem(n, seed, amp=2.0, ls=0.9, lin=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, _rbf(X, amp, ls) + lin * X @ X.T


@pytest.mark.parametrize(("k", "m", "label"), [(2.3, 0.4, 0), (0.5, -1.2, 1), (9.0, 2.5, 0)])
def test_ep_one_point_is_exact(x64, k, m, label):
    """n = 1: log Z_EP = log Phi(y m / sqrt(1 + k)); the latent's mean and variance are those
    of the exact posterior N(f | m, k) Phi(y f) / Z (quadrature)."""
    K = jnp.array([[k]])
    state = approx.ep_binary(K, jnp.array([label]), m)
    y = 2 * label - 1
    assert float(state.log_z) == pytest.approx(scipy.stats.norm.logcdf(y * m / np.sqrt(1 + k)))
    mu, var = approx.ep_predict(K, K, jnp.array([k]), jnp.asarray(m), state)
    post = lambda f, p: f**p * scipy.stats.norm.pdf(f, m, np.sqrt(k)) * scipy.stats.norm.cdf(y * f)  # noqa: E731
    z, m1, m2 = (scipy.integrate.quad(post, -40, 40, args=(p,), epsabs=1e-13)[0] for p in range(3))
    assert float(mu[0]) == pytest.approx(m1 / z, rel=1e-7, abs=1e-9)
    assert float(var[0]) == pytest.approx(m2 / z - (m1 / z) ** 2, rel=1e-7)


@pytest.mark.parametrize(("n", "seed", "mean"), [(2, 0, 0.3), (3, 1, -0.5), (3, 2, 1.0)])
def test_ep_evidence_matches_orthant_probability(x64, n, seed, mean):
    """log Z_EP within 5e-3 relative of the exact probit evidence: EP is not exact for
    n > 1, but very accurate for the probit (Kuss & Rasmussen 2005; here 3e-3 at worst, on
    two strongly correlated points with equal labels)."""
    _, K = _problem(n, seed)
    labels = np.random.default_rng(seed + 10).integers(0, 2, n)
    y = 2 * labels - 1
    exact = np.log(
        scipy.stats.multivariate_normal.cdf(
            y * mean,
            mean=np.zeros(n),
            cov=np.outer(y, y) * (K + np.eye(n)),
            abseps=1e-12,
            releps=1e-12,
            maxpts=10**7,
        )
    )
    state = approx.ep_binary(jnp.asarray(K), jnp.asarray(labels), mean)
    assert float(state.change) <= approx.EP_TOL
    assert float(state.log_z) == pytest.approx(exact, rel=5e-3)


@pytest.mark.parametrize(("seed", "mean", "amp"), [(12, 0.3, 2.0), (13, -0.8, 9.0)])
def test_ep_matches_textbook_sequential_ep(x64, seed, mean, amp):
    """Parallel damped EP reaches the fixed point of sequential EP (GPML Alg. 3.5 as
    printed, numpy), and the stable log Z_EP equals eq. 3.65 as printed, to 1e-8."""
    X, K = _problem(15, seed, amp=amp)
    labels = X[:, 0] - 0.5 * X[:, 1] + 0.3 * np.random.default_rng(seed).normal(size=15) > 0
    log_z, tau, mu = textbook_ep(K, 2.0 * labels - 1, mean)
    state = approx.ep_binary(jnp.asarray(K), jnp.asarray(labels.astype(int)), mean)
    assert float(state.log_z) == pytest.approx(log_z, rel=1e-8)
    np.testing.assert_allclose(state.tau, tau, rtol=1e-6)
    post_mu, _ = approx.ep_predict(
        jnp.asarray(K), jnp.asarray(K), jnp.asarray(np.diag(K)), jnp.asarray(mean), state
    )
    np.testing.assert_allclose(post_mu, mu, rtol=1e-6, atol=1e-8)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_ep_predict_matches_dense_gaussian(x64):
    """The predictive latent of Alg. 3.6 equals the dense Gaussian algebra of the EP
    posterior ``N(mu, (K^-1 + S)^-1)`` conditioned through ``K^-1`` (numpy inverses)."""
    X, K = _problem(12, 3)
    Xs = np.random.default_rng(4).normal(size=(5, 2))
    Ks = _rbf(Xs, 2.0, 0.9) + 0.3 * Xs @ Xs.T
    Kx = (_rbf(np.vstack([Xs, X]), 2.0, 0.9) + 0.3 * np.vstack([Xs, X]) @ np.vstack([Xs, X]).T)[
        :5, 5:
    ]
    labels = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    state = approx.ep_binary(jnp.asarray(K), jnp.asarray(labels), 0.2)
    mu, var = approx.ep_predict(
        jnp.asarray(K), jnp.asarray(Kx), jnp.asarray(np.diag(Ks)), jnp.asarray(0.2), state
    )
    tau, nu = np.asarray(state.tau), np.asarray(state.nu)
    Kinv = np.linalg.inv(K)
    Sigma = np.linalg.inv(Kinv + np.diag(tau))
    A = Kx @ Kinv
    np.testing.assert_allclose(mu, 0.2 + A @ (Sigma @ nu), rtol=1e-8, atol=1e-9)
    dense_var = np.diag(Ks) - np.sum(A * Kx, 1) + np.sum((A @ Sigma) * A, 1)
    np.testing.assert_allclose(var, dense_var, rtol=1e-7, atol=1e-9)
    lp = approx.probit_log_proba(mu, var)
    h = np.asarray(mu) / np.sqrt(1 + np.asarray(var))
    np.testing.assert_allclose(
        lp, np.stack([scipy.stats.norm.logcdf(-h), scipy.stats.norm.logcdf(h)], 1)
    )


def _fd(f, x, h=1e-5):
    return np.array([(f(x.at[i].add(h)) - f(x.at[i].add(-h))) / (2 * h) for i in range(x.size)])


@pytest.mark.slow  # moved for the default set's 4-minute budget
def test_ep_gradient_matches_finite_differences(x64):
    """d log Z_EP / d(log amplitude, log lengthscale, mean) with the sites held fixed (GPML
    sec. 5.5.2) equals central differences of log Z_EP re-converged at each point."""
    X = jnp.asarray(np.random.default_rng(5).normal(size=(25, 2)))
    labels = jnp.asarray(
        (np.asarray(X[:, 0]) + 0.5 * np.random.default_rng(6).normal(size=25) > 0).astype(int)
    )

    def log_z(theta):
        d2 = jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
        K = jnp.exp(theta[0]) * jnp.exp(-0.5 * d2 / jnp.exp(2 * theta[1]))
        sg = jax.lax.stop_gradient
        state = approx.ep_binary(sg(K), labels, sg(theta[2]), tol=1e-13)
        return approx.ep_objective(K, labels, theta[2], state)

    theta = jnp.array([0.8, -0.3, 0.4])
    np.testing.assert_allclose(jax.grad(log_z)(theta), _fd(log_z, theta), rtol=1e-6, atol=1e-8)


def _dense_log_post(G, K, means, labels):
    """Negative log posterior of the stacked (C n,) latent minus means, and its gradient."""
    C, n = means.size, K.shape[0]
    Kinv = np.linalg.inv(K)
    Y = np.eye(C)[labels].T

    def f(v):
        g = v.reshape(C, n)
        logp = log_softmax(g + means[:, None], axis=0)
        Kg = g @ Kinv
        val = -np.sum(Y * logp) + 0.5 * np.sum(Kg * g)
        return val, (-(Y - np.exp(logp)) + Kg).ravel()

    return f


def _dense_w(G, means):
    P = softmax(G + means[:, None], axis=0)
    Pi = np.vstack([np.diag(p) for p in P])  # (C n, n)
    return np.diag(P.ravel()) - Pi @ Pi.T


def _laplace_problem(C, seed, n=10):
    _, K = _problem(n, seed, amp=3.0)
    rng = np.random.default_rng(seed + 20)
    return K + 1e-3 * np.eye(n), rng.integers(0, C, n), rng.normal(size=C) * 0.5


def test_laplace_mode_and_evidence_match_dense(x64):
    """C = 3: the mode equals scipy BFGS on the dense negative log posterior; log q equals
    ``log p(l | f) - g^T K^-1 g / 2 - log|I + K W| / 2`` by numpy's slogdet."""
    C = 3
    K, labels, means = _laplace_problem(C, 7)
    state = approx.laplace_multiclass(jnp.asarray(K), jnp.asarray(labels), jnp.asarray(means))
    f = _dense_log_post(None, K, means, labels)
    res = scipy.optimize.minimize(
        f, np.zeros(C * K.shape[0]), jac=True, method="BFGS", options={"gtol": 1e-11}
    )
    G = np.asarray(state.g)
    np.testing.assert_allclose(G, res.x.reshape(C, -1), atol=1e-6)
    W = _dense_w(G, means)
    logdet = np.linalg.slogdet(np.eye(C * K.shape[0]) + np.kron(np.eye(C), K) @ W)[1]
    assert float(state.log_q) == pytest.approx(-f(G.ravel())[0] - 0.5 * logdet, rel=1e-10)


def test_laplace_two_classes_matches_dense_newton(x64):
    """C = 2 against an independent dense Newton iteration on the stacked latent:
    ``g <- (K^-1 + W)^-1 (W g + y - pi)`` with (2n, 2n) numpy inverses."""
    C = 2
    K, labels, means = _laplace_problem(C, 8, n=9)
    n = K.shape[0]
    Kbig = np.kron(np.eye(C), K)
    Y = np.eye(C)[labels].T.ravel()
    g = np.zeros(C * n)
    for _ in range(60):
        W = _dense_w(g.reshape(C, n), means)
        pi = softmax(g.reshape(C, n) + means[:, None], axis=0).ravel()
        g = np.linalg.solve(np.linalg.inv(Kbig) + W, W @ g + Y - pi)
    state = approx.laplace_multiclass(jnp.asarray(K), jnp.asarray(labels), jnp.asarray(means))
    G = np.asarray(state.g)
    np.testing.assert_allclose(G.ravel(), g, atol=1e-8)
    # the evidence formula at the returned mode (as for C = 3): at the dense mode it would
    # differ by the modes' 1e-8 difference times the log-determinant's slope
    f = _dense_log_post(None, K, means, labels)
    logdet = np.linalg.slogdet(np.eye(C * n) + Kbig @ _dense_w(G, means))[1]
    assert float(state.log_q) == pytest.approx(-f(G.ravel())[0] - 0.5 * logdet, rel=1e-10)


@pytest.mark.slow  # ~10-25 s
def test_laplace_gradient_matches_finite_differences(x64):
    """d log q / d(log amplitude, log lengthscale, means) by one differentiable Newton step
    from the mode equals central differences of log q re-converged at each point."""
    X = jnp.asarray(np.random.default_rng(9).normal(size=(20, 2)))
    labels = jnp.asarray(np.random.default_rng(10).integers(0, 3, 20))

    def log_q(theta):
        d2 = jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
        K = jnp.exp(theta[0]) * jnp.exp(-0.5 * d2 / jnp.exp(2 * theta[1]))
        means = jnp.concatenate([theta[2:], jnp.zeros(1)])
        sg = jax.lax.stop_gradient
        state = approx.laplace_multiclass(sg(K), labels, sg(means), tol=1e-14)
        return approx.laplace_objective(K, labels, means, state)

    theta = jnp.array([0.9, -0.2, 0.3, -0.4])
    np.testing.assert_allclose(jax.grad(log_q)(theta), _fd(log_q, theta), rtol=1e-6, atol=1e-8)


def test_laplace_predict_matches_dense(x64):
    """Predictive mean ``m + K*^T (y - pi)`` and covariance ``k** I - Q*^T (K + W^-1)^-1
    Q*``, with ``(K + W^-1)^-1 = W^1/2 (I + W^1/2 K W^1/2)^-1 W^1/2`` (W is singular) by
    numpy."""
    C, n, m = 3, 10, 4
    rng = np.random.default_rng(11)
    X, Xs = rng.normal(size=(n, 2)), rng.normal(size=(m, 2))
    A = np.vstack([X, Xs])
    Kall = _rbf(A, 3.0, 0.9) + 0.3 * A @ A.T
    K, Kx, kss = Kall[:n, :n], Kall[n:, :n], np.diag(Kall[n:, n:])
    labels, means = rng.integers(0, C, n), np.array([0.3, -0.2, 0.0])
    state = approx.laplace_multiclass(jnp.asarray(K), jnp.asarray(labels), jnp.asarray(means))
    mu, cov = approx.laplace_predict(
        jnp.asarray(K),
        jnp.asarray(Kx),
        jnp.asarray(kss),
        jnp.asarray(labels),
        jnp.asarray(means),
        state,
    )
    G = np.asarray(state.g)
    P = softmax(G + means[:, None], axis=0)
    Y = np.eye(C)[labels].T
    np.testing.assert_allclose(mu, means[None, :] + Kx @ (Y - P).T, rtol=1e-9, atol=1e-10)
    evals, evecs = np.linalg.eigh(_dense_w(G, means))
    Wh = evecs @ np.diag(np.sqrt(np.maximum(evals, 0))) @ evecs.T
    Kbig = np.kron(np.eye(C), K)
    inner = Wh @ np.linalg.solve(np.eye(C * n) + Wh @ Kbig @ Wh, Wh)
    for j in range(m):
        Q = np.kron(np.eye(C), Kx[j][:, None])  # (C n, C)
        dense = kss[j] * np.eye(C) - Q.T @ inner @ Q
        np.testing.assert_allclose(cov[j], dense, rtol=1e-8, atol=1e-10)


def test_softmax_mc_two_classes_matches_quadrature(x64):
    """C = 2: ``E[softmax(f)_1] = E[sigmoid(f_1 - f_0)]``, a 1-d integral; 20000 draws with
    key 0 agree within 5 Monte Carlo standard errors (sd of a probability <= 1/2)."""
    mean = jnp.array([[0.3, -0.5], [1.0, 2.0]])
    cov = jnp.array([[[1.0, 0.3], [0.3, 0.5]], [[2.0, -0.4], [-0.4, 1.5]]])
    lp = approx.softmax_mc_log_proba(mean, cov, key=jax.random.key(0), n_draws=20000)
    for j in range(2):
        mu = float(mean[j, 1] - mean[j, 0])
        sd = float(np.sqrt(cov[j, 0, 0] + cov[j, 1, 1] - 2 * cov[j, 0, 1]))
        density = scipy.stats.norm(mu, sd).pdf
        exact = scipy.integrate.quad(lambda t, p=density: expit(t) * p(t), -40, 40)[0]
        assert float(np.exp(lp[j, 1])) == pytest.approx(exact, abs=5 * 0.5 / np.sqrt(20000))
        assert float(np.exp(lp[j]).sum()) == pytest.approx(1.0, abs=1e-12)
