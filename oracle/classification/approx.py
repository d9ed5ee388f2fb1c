"""Approximate inference for GP classification: probit EP (binary), softmax Laplace (multiclass).

Rasmussen & Williams, *Gaussian Processes for Machine Learning* (2006; "GPML"), ch. 3, in
the stable forms of its algorithms: every matrix that is factored is ``B = I + S K S`` with
``S`` a diagonal of square roots of non-negative weights, so ``K`` is never inverted and
needs no jitter.

Binary: labels ``l_i`` in {0, 1}, ``y_i = 2 l_i - 1``, ``p(y_i | f_i) = Phi(y_i f_i)``,
``f ~ N(m 1, K)``. Multiclass: C latent functions ``f^c ~ N(m_c 1, K)``, independent and
sharing ``K``, ``p(l_i = c | f_i) = softmax(f_i)_c``. Both are written for ``g = f - m``
(prior ``N(0, K)``), the form of GPML's algorithms; the mean enters the likelihood.

All functions are pure JAX on float64 arrays: call them inside ``jax.enable_x64(True)``.
Site and mode finding is a ``lax.while_loop`` and carries no gradient; ``ep_objective`` and
``laplace_objective`` give the approximate log marginal likelihood with the gradients
explained there.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax.scipy.special import log_ndtr
from jax.scipy.stats import norm

sg = jax.lax.stop_gradient
EP_TOL = 1e-9  # largest site change (tau or nu) at which EP has converged
NEWTON_TOL = 1e-10  # gain of Psi (nats) at which Newton's method has converged


class EPState(NamedTuple):
    """Converged EP sites of a binary probit GP classifier (GPML sec. 3.6).

    ``tau`` (n,) site precisions (>= 0: the probit is log-concave); ``nu`` (n,) site
    precision-times-mean of ``g = f - m``; ``log_z`` () log Z_EP; ``sweeps`` () parallel
    sweeps run; ``change`` () the largest site change the last sweep proposed.
    """

    tau: jax.Array
    nu: jax.Array
    log_z: jax.Array
    sweeps: jax.Array
    change: jax.Array


def _ep_posterior(K, tau, nu):
    """``(L (n, n), V (n, n), mu (n,), var (n,))``: ``L L^T = B = I + S K S``, ``S = diag
    sqrt(tau)``, ``V = L^-1 S K``, and the Gaussian posterior of g: ``Sigma = K - V^T V``,
    ``mu = Sigma nu`` (GPML eq. 3.53 and Alg. 3.5 lines 13-15)."""
    s = jnp.sqrt(tau)
    L = jnp.linalg.cholesky(jnp.eye(K.shape[0]) + s[:, None] * K * s[None, :])
    V = jsl.solve_triangular(L, s[:, None] * K, lower=True)
    return L, V, K @ nu - V.T @ (V @ nu), jnp.diag(K) - jnp.sum(V * V, axis=0)


def _probit_site(y, mean, tau_c, nu_c):
    """log Z_i of ``Phi(y (g + m))`` under the cavity ``N(g | nu_c / tau_c, 1 / tau_c)``
    and its first two derivatives in the cavity mean (GPML eqs. 3.58, 3.82): (n,) each."""
    var_c = 1.0 / tau_c
    root = jnp.sqrt(1.0 + var_c)
    z = y * (nu_c * var_c + mean) / root
    log_zi = log_ndtr(z)
    ratio = jnp.exp(norm.logpdf(z) - log_zi)  # N(z) / Phi(z), stable for z << 0
    return log_zi, y * ratio / root, -ratio * (z + ratio) / (1.0 + var_c)


def _ep_cavity(K, y, mean, tau, nu):
    L, _, mu, var = _ep_posterior(K, tau, nu)
    tau_c = 1.0 / var - tau
    nu_c = mu / var - nu
    return L, mu, tau_c, nu_c, _probit_site(y, mean, tau_c, nu_c)


def _ep_log_z(K, y, mean, tau, nu):
    """log Z_EP, GPML eq. 3.65 in the stable form of eqs. 3.73-3.74 (no 1 / tau)."""
    L, mu, tau_c, nu_c, (log_zi, _, _) = _ep_cavity(K, y, mean, tau, nu)
    mu_c = nu_c / tau_c
    return (
        jnp.sum(log_zi)
        + 0.5 * jnp.sum(jnp.log1p(tau / tau_c))
        - jnp.sum(jnp.log(jnp.diag(L)))
        + 0.5 * nu @ mu
        - 0.5 * jnp.sum(nu**2 / (tau_c + tau))
        + 0.5 * jnp.sum(tau_c * (tau * mu_c**2 - 2.0 * mu_c * nu) / (tau_c + tau))
    )


def ep_binary(
    K: jax.Array,
    labels: jax.Array,
    mean: jax.Array | float,
    *,
    step: float = 0.5,
    max_sweeps: int = 500,
    tol: float = EP_TOL,
    init: tuple[jax.Array, jax.Array] | None = None,
) -> EPState:
    """EP for the probit GP classifier, parallel updates (GPML Alg. 3.5, all sites at once).

    Each sweep computes every cavity from the current posterior, the moment-matched site
    ``tau_new = -d2 / (1 + d2 / tau_c)``, ``nu_new = (d1 - mu_c d2) / (1 + d2 / tau_c)``
    (``d1, d2`` the derivatives of ``log Z_i`` in the cavity mean) and moves the sites a
    fraction ``step`` towards them (damping: undamped parallel EP can oscillate on
    near-separable data). Stops when the largest proposed change of a site parameter is
    below ``tol`` or after ``max_sweeps`` sweeps; ``EPState.change`` says which.

    Args:
        K: (n, n) prior covariance of the latent at the training inputs.
        labels: (n,) integers in {0, 1}.
        mean: () the constant prior mean m.
        step: fraction of the proposed site change taken per sweep, in (0, 1].
        init: ``(tau (n,), nu (n,))`` sites to start from (a warm start); zeros if None.

    Returns:
        :class:`EPState` with ``log_z`` = log Z_EP (GPML eq. 3.65).
    """
    n = K.shape[0]
    y = 2.0 * jnp.asarray(labels, dtype=K.dtype) - 1.0
    mean = jnp.asarray(mean, dtype=K.dtype)
    tau0, nu0 = init if init is not None else (jnp.zeros(n, K.dtype), jnp.zeros(n, K.dtype))

    def sweep(carry):
        tau, nu, k, _ = carry
        _, _, tau_c, nu_c, (_, d1, d2) = _ep_cavity(K, y, mean, tau, nu)
        denom = 1.0 + d2 / tau_c
        tau_new = jnp.maximum(-d2 / denom, 0.0)
        nu_new = (d1 - nu_c / tau_c * d2) / denom
        change = jnp.maximum(jnp.max(jnp.abs(tau_new - tau)), jnp.max(jnp.abs(nu_new - nu)))
        return tau + step * (tau_new - tau), nu + step * (nu_new - nu), k + 1, change

    def going(carry):
        return (carry[3] > tol) & (carry[2] < max_sweeps)

    tau, nu, k, change = jax.lax.while_loop(
        going, sweep, (tau0, nu0, jnp.asarray(0), jnp.asarray(jnp.inf, K.dtype))
    )
    return EPState(tau, nu, _ep_log_z(K, y, mean, tau, nu), k, change)


def ep_objective(K: jax.Array, labels: jax.Array, mean: jax.Array, state: EPState) -> jax.Array:
    """log Z_EP with its gradient in ``K`` and ``m`` at the EP fixed point (GPML sec. 5.5.2).

    At convergence log Z_EP is stationary in the site parameters, so its total derivative
    is that of the one term in which K and m appear with the sites ``(Z~, mu~, s~^2)`` held
    fixed, ``log N(mu~ | m 1, K + S~^-1)``. Written stably with ``p = nu_f - tau m``
    (``nu_f`` the sites' natural mean of f, held fixed): up to a constant,
    ``-sum log diag L + p^T Sigma p / 2 + m sum nu_f - m^2 sum tau / 2``. The value
    returned is ``state.log_z``; ``state`` must be the converged EP of ``(K, m)``.

    Args:
        K: (n, n) prior covariance; labels: (n,) in {0, 1} (unused: the converged sites
        carry them; kept for the signature Laplace shares); mean: () m; state:
        :func:`ep_binary` of the same ``K``, ``labels``, ``mean``.

    Returns:
        () log Z_EP.
    """
    del labels
    tau = sg(state.tau)
    nu_f = sg(state.nu + state.tau * mean)
    p = nu_f - tau * mean
    s = jnp.sqrt(tau)
    L = jnp.linalg.cholesky(jnp.eye(K.shape[0]) + s[:, None] * K * s[None, :])
    Kp = K @ p
    Vp = jsl.solve_triangular(L, s * Kp, lower=True)
    gauss = (
        -jnp.sum(jnp.log(jnp.diag(L)))
        + 0.5 * (p @ Kp - Vp @ Vp)
        + mean * jnp.sum(nu_f)
        - 0.5 * mean**2 * jnp.sum(tau)
    )
    return gauss + sg(state.log_z - gauss)


def ep_predict(
    K: jax.Array, K_cross: jax.Array, k_diag: jax.Array, mean: jax.Array, state: EPState
) -> tuple[jax.Array, jax.Array]:
    """Latent predictive mean and variance at test points (GPML Alg. 3.6).

    ``mu* = m + k*^T (nu - S B^-1 S K nu)``, ``s*^2 = k** - ||L^-1 S k*||^2``.

    Args:
        K: (n, n) training covariance; K_cross: (m, n) test-by-training covariance;
        k_diag: (m,) prior variances at the test points; mean: () m; state: the sites.

    Returns:
        ``(mu (m,), var (m,))`` of f at the test points.
    """
    s = jnp.sqrt(state.tau)
    L = jnp.linalg.cholesky(jnp.eye(K.shape[0]) + s[:, None] * K * s[None, :])
    z = s * jsl.cho_solve((L, True), s * (K @ state.nu))
    V = jsl.solve_triangular(L, s[:, None] * K_cross.T, lower=True)
    return mean + K_cross @ (state.nu - z), jnp.maximum(k_diag - jnp.sum(V * V, axis=0), 0.0)


def probit_log_proba(mu: jax.Array, var: jax.Array) -> jax.Array:
    """``log p(l | x)`` (m, 2) for classes 0 and 1 from the latent ``N(mu, var)``, (m,) each:
    ``p(l = 1) = Phi(mu / sqrt(1 + var))`` (GPML eq. 3.80), logs by log_ndtr."""
    h = mu / jnp.sqrt(1.0 + var)
    return jnp.stack([log_ndtr(-h), log_ndtr(h)], axis=-1)


class LaplaceState(NamedTuple):
    """The Laplace approximation of a multiclass softmax GP classifier (GPML sec. 3.5).

    ``g`` (C, n) the posterior mode of ``f - m`` (class-major: row c is ``g^c``); ``a``
    (C, n) with ``g^c = K a^c``; ``log_q`` () the approximate log marginal likelihood;
    ``iterations`` () Newton steps run; ``gain`` () the increase of the objective in the
    last step.
    """

    g: jax.Array
    a: jax.Array
    log_q: jax.Array
    iterations: jax.Array
    gain: jax.Array


def _one_hot(labels, n_classes, dtype):
    return jax.nn.one_hot(labels, n_classes, dtype=dtype).T  # (C, n)


def _psi(a, g, means, onehot):
    """``Psi = -a^T g / 2 + log p(l | g + m)``, GPML eq. 3.41 with ``g^T K^-1 g = a^T g``."""
    logp = jax.nn.log_softmax(g + means[:, None], axis=0)
    return -0.5 * jnp.sum(a * g) + jnp.sum(onehot * logp)


def _blocks(K, pi):
    """GPML Alg. 3.3 lines 6-9: per class ``L_c L_c^T = I + D_c^1/2 K D_c^1/2`` and
    ``E_c = D_c^1/2 B_c^-1 D_c^1/2`` (C, n, n), then ``M M^T = sum_c E_c`` (n, n)."""

    def one(p):
        s = jnp.sqrt(p)
        L = jnp.linalg.cholesky(jnp.eye(K.shape[0]) + s[:, None] * K * s[None, :])
        return L, s[:, None] * jsl.cho_solve((L, True), jnp.diag(s))

    # lax.map, not vmap: batched triangular solves of jaxlib 0.10's CPU backend can
    # deadlock when two run at once on a small intra-op thread pool (seen on 2 cores)
    L, E = jax.lax.map(one, pi)
    return L, E, jnp.linalg.cholesky(jnp.sum(E, axis=0))


def _newton(K, g, means, onehot):
    """One Newton step of GPML Alg. 3.3 from ``g`` (C, n): the new ``a`` (C, n), with
    ``W = D - Pi Pi^T`` and ``(K^-1 + W)^-1`` through the block structure."""
    pi = jax.nn.softmax(g + means[:, None], axis=0)
    _, E, M = _blocks(K, pi)
    b = pi * g - pi * jnp.sum(pi * g, axis=0, keepdims=True) + onehot - pi  # W g + y - pi
    c = jnp.einsum("cij,cj->ci", E, b @ K)  # E_c K b_c (K symmetric)
    v = jsl.cho_solve((M, True), jnp.sum(c, axis=0))
    return b - c + jnp.einsum("cij,j->ci", E, v)


def _log_q(K, a, g, means, onehot):
    """``Psi - log|I + K W| / 2`` (GPML eq. 3.44); the determinant by the block structure:
    ``|I + K W| = prod_c |B_c| * |sum_c E_c|`` (W = D - D R R^T D, matrix determinant
    lemma, ``sum_c D_c = I``)."""
    L, _, M = _blocks(K, jax.nn.softmax(g + means[:, None], axis=0))
    half_logdet = jnp.sum(jnp.log(jnp.diagonal(L, axis1=1, axis2=2))) + jnp.sum(
        jnp.log(jnp.diag(M))
    )
    return _psi(a, g, means, onehot) - half_logdet


_STEPS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.0)


def laplace_multiclass(
    K: jax.Array,
    labels: jax.Array,
    means: jax.Array,
    *,
    max_iters: int = 100,
    tol: float = NEWTON_TOL,
    init: jax.Array | None = None,
) -> LaplaceState:
    """The Laplace approximation of the softmax GP classifier (GPML Alg. 3.3).

    Newton's method on ``Psi(g) = log p(l | g + m) - g^T K^-1 g / 2`` (concave), kept in
    the form ``g^c = K a^c``. Each step takes the best of the step lengths ``1, 1/2, ...,
    1/32, 0`` along the Newton direction in ``a``, so ``Psi`` never decreases. Stops when a
    step gains less than ``tol`` (nats) or after ``max_iters`` steps.

    Args:
        K: (n, n) prior covariance shared by the C latent functions.
        labels: (n,) integers in 0..C-1.
        means: (C,) the per-class constant prior means m_c.
        init: (C, n) ``a`` to start from (a warm start); zeros if None.

    Returns:
        :class:`LaplaceState` with ``log_q`` the approximate log marginal likelihood.
    """
    n_classes = means.shape[0]
    onehot = _one_hot(labels, n_classes, K.dtype)
    a0 = init if init is not None else jnp.zeros((n_classes, K.shape[0]), K.dtype)
    g0 = a0 @ K
    steps = jnp.asarray(_STEPS, K.dtype)

    def newton(carry):
        a, g, psi, k, _ = carry
        da = _newton(K, g, means, onehot) - a
        dg = da @ K
        psis = jax.vmap(lambda t: _psi(a + t * da, g + t * dg, means, onehot))(steps)
        best = jnp.argmax(jnp.where(jnp.isfinite(psis), psis, -jnp.inf))
        t = steps[best]
        return a + t * da, g + t * dg, psis[best], k + 1, psis[best] - psi

    def going(carry):
        return (carry[4] > tol) & (carry[3] < max_iters)

    psi0 = _psi(a0, g0, means, onehot)
    a, g, _, k, gain = jax.lax.while_loop(
        going, newton, (a0, g0, psi0, jnp.asarray(0), jnp.asarray(jnp.inf, K.dtype))
    )
    return LaplaceState(g, a, _log_q(K, a, g, means, onehot), k, gain)


def laplace_objective(
    K: jax.Array, labels: jax.Array, means: jax.Array, state: LaplaceState
) -> jax.Array:
    """The Laplace log marginal likelihood with its exact gradient in ``K`` and ``m``.

    One differentiable Newton step from the converged mode (held by stop_gradient) gives
    ``g(theta)``: at the mode the Newton map's derivative in ``g`` vanishes and its
    derivative in ``theta`` is the implicit ``dg/dtheta`` of the mode, so autodiff through
    that one step differentiates log q through the mode's dependence on ``theta``
    (GPML sec. 5.5.1) without unrolling the loop.

    Args:
        K: (n, n); labels: (n,) in 0..C-1; means: (C,); state: :func:`laplace_multiclass`
            of the same arguments.

    Returns:
        () log q(l | X, theta), equal to ``state.log_q`` up to the mode's tolerance.
    """
    onehot = _one_hot(labels, means.shape[0], K.dtype)
    a = _newton(K, sg(state.g), means, onehot)
    return _log_q(K, a, a @ K, means, onehot)


def laplace_predict(
    K: jax.Array,
    K_cross: jax.Array,
    k_diag: jax.Array,
    labels: jax.Array,
    means: jax.Array,
    state: LaplaceState,
) -> tuple[jax.Array, jax.Array]:
    """Gaussian latent predictive at test points (GPML Alg. 3.4, eqs. 3.40, 3.42).

    ``E[f*^c] = m_c + k*^T (y^c - pi^c)``; ``Cov[f*]_cc' = delta_cc' (k** - k*^T E_c k*)
    + (E_c k*)^T (sum E)^-1 (E_c' k*)``, i.e. ``k** - Q*^T (K + W^-1)^-1 Q*``.

    Args:
        K: (n, n); K_cross: (m, n) test-by-training covariance; k_diag: (m,) prior
            variances at the test points; labels: (n,); means: (C,); state: the mode.

    Returns:
        ``(mean (m, C), cov (m, C, C))`` of the latent at the test points.
    """
    n_classes = means.shape[0]
    onehot = _one_hot(labels, n_classes, K.dtype)
    pi = jax.nn.softmax(state.g + means[:, None], axis=0)
    _, E, M = _blocks(K, pi)
    mu = means[None, :] + K_cross @ (onehot - pi).T
    Ek = jnp.einsum("cij,mj->cim", E, K_cross)  # (C, n, m): E_c k*
    own = k_diag[None, :] - jnp.einsum("cim,mi->cm", Ek, K_cross)  # (C, m)
    U = jax.lax.map(lambda b: jsl.solve_triangular(M, b, lower=True), Ek)  # (C, n, m)
    cov = jnp.einsum("cim,dim->mcd", U, U) + jax.vmap(jnp.diag)(own.T)
    return mu, cov


def softmax_mc_log_proba(
    mean: jax.Array, cov: jax.Array, *, key: jax.Array, n_draws: int = 2000
) -> jax.Array:
    """``log E[softmax(f)]`` (m, C) for ``f ~ N(mean, cov)`` by Monte Carlo.

    ``n_draws`` joint draws per point from ``key``, ``log mean_s softmax(f_s)`` by
    logsumexp (no log of a rounded-off zero). A jitter of 1e-10 times the mean diagonal is
    added before each (C, C) Cholesky factor (the covariance can be singular to rounding).

    Args:
        mean: (m, C); cov: (m, C, C); key: a JAX PRNG key; n_draws: draws per point.

    Returns:
        (m, C) log class probabilities.
    """
    n_classes = mean.shape[-1]
    scale = jnp.mean(jnp.diagonal(cov, axis1=1, axis2=2), axis=1)
    jitter = 1e-10 * scale[:, None, None] * jnp.eye(n_classes, dtype=cov.dtype)[None]
    chol = jax.lax.map(jnp.linalg.cholesky, cov + jitter)  # unbatched: see _blocks
    eps = jax.random.normal(key, (n_draws, *mean.shape), dtype=mean.dtype)
    f = mean[None] + jnp.einsum("mcd,smd->smc", chol, eps)
    logp = jax.nn.log_softmax(f, axis=-1)
    return jax.scipy.special.logsumexp(logp, axis=0) - jnp.log(n_draws)
