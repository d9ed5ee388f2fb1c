"""The likelihood of the labels and the per-draw integrals over a Gaussian latent.

Binary tasks have one latent function and the probit link ``p(y = 1 | f) = Phi(f)``;
multiclass tasks have C latent functions and the softmax link (docs/design.md,
"Classification"). Given a posterior draw of the latent at the unique training inputs, the
latent at a pool point is Gaussian, ``f(x) ~ N(mu, s^2)`` (independently per class, with
one ``s`` shared by the classes: the kernel is shared), and each draw contributes three
per-point quantities, integrated over that Gaussian:

- ``prob`` (C,): ``E[p_f(x)]``; probit: ``Phi(h)``, ``h = mu / sqrt(1 + s^2)``;
- ``entropy``: ``E[H(p_f(x))]`` (nats); probit: Gauss-Hermite with
  :data:`GH_NODES` nodes, or Gauss-Legendre over the integrand's bump where the latent's
  sd is wide (:func:`probit_moments`);
- ``square``: ``E[||p_f(x)||^2]``; probit: ``1 - 2 Phi(h) + 2 E[Phi(f)^2]`` with
  ``E[Phi(f)^2] = Phi(h) - 2 T(h, 1 / sqrt(1 + 2 s^2))`` (Owen's T).

Softmax has no closed form: conditional Monte Carlo with ``R`` standard normal draws per
(posterior draw, point), ``f_c = mu_c + s eps_c``; their error is part of the draws'
variance and so of the batch-means standard errors. All functions are JAX, float64.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr, ndtr, owens_t

GH_NODES = 32
"""Gauss-Hermite nodes of the probit entropy integral (exact for polynomials of degree
63 in the standardised latent)."""


def _hermite(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights normalised to sum to 1: (nodes,)."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    return x, w / w.sum()


def label_loglik(f: jax.Array, counts: jax.Array) -> jax.Array:
    """The log-likelihood of the training labels given the latent at the unique inputs.

    Args:
        f: (u, L) latent values, L = 1 (probit) or C (softmax).
        counts: (u, C) how many training labels of each class each unique input has
            (C = 2 for the probit: column 1 counts the positives).

    Returns:
        A scalar: ``sum_u sum_c counts[u, c] log p(c | f_u)``.
    """
    if f.shape[-1] == 1:
        g = f[..., 0]
        return jnp.sum(counts[..., 1] * log_ndtr(g) + counts[..., 0] * log_ndtr(-g))
    return jnp.sum(counts * jax.nn.log_softmax(f, axis=-1))


def probit_moments(
    mu: jax.Array, s2: jax.Array, nodes: int = GH_NODES, *, wide: bool | None = None
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(prob (..., 2), entropy (...), square (...))`` of ``Phi(f)``, ``f ~ N(mu, s2)``.

    ``mu`` and ``s2`` broadcast against each other (any shape ``...``); ``s2 >= 0``. The
    entropy integrand ``H(Phi(f))`` is a bump of width about 1 around ``f = 0``: for
    ``s <= WIDE_SD`` Gauss-Hermite with ``nodes`` nodes resolves it; a wider Gaussian puts
    too few Hermite nodes on the bump, so there the integral is taken over the bump
    instead, by Gauss-Legendre on ``[-BUMP, BUMP]`` (outside, ``H(Phi(f)) < 1e-20``).
    ``wide``: None chooses per element; True or False says every ``s`` is above or at
    most ``WIDE_SD`` (the caller sorted them; half the work).
    """
    mu, s2 = jnp.broadcast_arrays(mu, s2)
    h = mu / jnp.sqrt(1.0 + s2)
    p1 = ndtr(h)
    phi2 = p1 - 2.0 * owens_t(h, 1.0 / jnp.sqrt(1.0 + 2.0 * s2))
    square = 1.0 - 2.0 * p1 + 2.0 * phi2
    lead = (1,) * mu.ndim
    s = jnp.sqrt(s2)[..., None]
    if wide is not True:
        x, w = (jnp.asarray(a).reshape((*lead, -1)) for a in _hermite(nodes))
        narrow = jnp.sum(_probit_entropy(mu[..., None] + s * x) * w, axis=-1)
    if wide is not False:
        g, wg = (jnp.asarray(a).reshape((*lead, -1)) for a in _legendre())
        sw = jnp.maximum(s, WIDE_SD)  # the branch not taken stays finite
        density = jnp.exp(-0.5 * ((g - mu[..., None]) / sw) ** 2) / (sw * np.sqrt(2 * np.pi))
        broad = jnp.sum(_probit_entropy(g) * wg * density, axis=-1)
    if wide is None:
        entropy = jnp.where(s[..., 0] <= WIDE_SD, narrow, broad)
    else:
        entropy = broad if wide else narrow
    return jnp.stack([1.0 - p1, p1], axis=-1), entropy, square


WIDE_SD = 1.5
"""Latent sds above this integrate the probit entropy over its bump (Gauss-Legendre)."""
BUMP = 10.0
LEGENDRE_NODES = 128


def _legendre() -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on ``[-BUMP, BUMP]``: (LEGENDRE_NODES,) each."""
    x, w = np.polynomial.legendre.leggauss(LEGENDRE_NODES)
    return BUMP * x, BUMP * w


def _probit_entropy(g: jax.Array) -> jax.Array:
    """``H(Phi(g))`` in nats, elementwise, stable in both tails."""
    lp, lq = log_ndtr(g), log_ndtr(-g)
    return -(jnp.exp(lp) * lp + jnp.exp(lq) * lq)


def softmax_moments(
    mu: jax.Array, s: jax.Array, eps: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Conditional Monte Carlo ``(prob (..., C), entropy (...), square (...))`` of
    ``softmax(f)``, ``f_c = mu_c + s eps_c``.

    Args:
        mu: (..., C) latent means; s: (...) latent sd (shared by the classes).
        eps: (..., R, C) standard normals, R draws per point.
    """
    f = mu[..., None, :] + s[..., None, None] * eps
    logp = jax.nn.log_softmax(f, axis=-1)
    p = jnp.exp(logp)
    prob = jnp.mean(p, axis=-2)
    entropy = jnp.mean(-jnp.sum(p * logp, axis=-1), axis=-1)
    square = jnp.mean(jnp.sum(p * p, axis=-1), axis=-1)
    return prob, entropy, square
