"""NUTS on the whitened latent at the unique training inputs, and its diagnostics.

The posterior of a classification task is over the latent at the ``u`` unique training
inputs, ``f_U = m + L v`` with ``L L^T = K_UU`` (one Cholesky factor shared by the
classes) and ``v ~ N(0, I)`` a priori, so the target density in ``v`` (u, L) is
``-||v||^2 / 2 + log p(labels | m + L v)`` (:func:`udora.oracle.classification.link.label_loglik`).
blackjax's NUTS with its window adaptation (a step size and a diagonal mass matrix per
chain) runs ``chains`` chains in parallel (``jax.vmap``), started from prior draws; more
draws continue the same chains with the adapted parameters (:func:`continue_chains`).

The diagnostics (docs/design.md, "Classification: diagnostics") are blackjax's:
rank-normalised split R-hat (the larger of bulk and folded, Vehtari et al. 2021) and bulk
and tail ESS, on arrays of shape (chains, draws, k).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import blackjax
import jax
import jax.numpy as jnp
import numpy as np

from udora.oracle.classification.link import label_loglik


def log_density(L: jax.Array, mean: jax.Array, counts: jax.Array):
    """The log posterior density of the whitened latent ``v`` (u, L_) up to a constant.

    Args:
        L: (u, u) lower Cholesky factor of the prior covariance at the unique inputs.
        mean: (L_,) the prior's constant mean of each latent function.
        counts: (u, C) label counts of each unique input.
    """

    def logdensity(v: jax.Array) -> jax.Array:
        return -0.5 * jnp.sum(v * v) + label_loglik(mean[None, :] + L @ v, counts)

    return logdensity


@dataclass(frozen=True)
class Chains:
    """Chains after warm-up and ``draws`` draws each.

    ``positions`` (chains, draws, u, L_); ``state`` the last NUTS state of each chain
    (batched); ``parameters`` the adapted step size (chains,) and inverse mass matrix
    (chains, u * L_); ``steps`` (chains, draws) integration steps; ``divergent``
    (chains, draws) booleans.
    """

    positions: np.ndarray
    state: Any
    parameters: dict[str, Any]
    steps: np.ndarray
    divergent: np.ndarray


def _draw(logdensity, parameters, state, key, draws: int):
    kernel = blackjax.nuts(logdensity, **parameters)

    def one(s, k):
        s, info = kernel.step(k, s)
        return s, (s.position, info.num_integration_steps, info.is_divergent)

    return jax.lax.scan(one, state, jax.random.split(key, draws))


def sample_chains(
    key: jax.Array,
    L: jax.Array,
    mean: jax.Array,
    counts: jax.Array,
    init: jax.Array,
    warmup: int,
    draws: int,
) -> tuple[Any, dict[str, Any], jax.Array, jax.Array, jax.Array]:
    """Adapt each chain from ``init`` (chains, u, L_) for ``warmup`` steps, then draw.

    Pure JAX (``jax.vmap`` over tasks works: simulation-based calibration runs a
    thousand small tasks at once). ``key`` is one JAX key, split among the chains;
    ``L``, ``mean`` and ``counts`` as :func:`log_density`.

    Returns:
        ``(states, parameters, positions (chains, draws, u, L_), steps (chains, draws),
        divergent (chains, draws))``.
    """
    logdensity = log_density(L, mean, counts)

    def chain(k, x0):
        k_warm, k_draw = jax.random.split(k)
        adapt = blackjax.window_adaptation(blackjax.nuts, logdensity)
        (state, parameters), _ = adapt.run(k_warm, x0, num_steps=warmup)
        state, (pos, steps, div) = _draw(logdensity, parameters, state, k_draw, draws)
        return state, parameters, pos, steps, div

    return jax.vmap(chain)(jax.random.split(key, init.shape[0]), init)


_sample_chains_compiled = jax.jit(sample_chains, static_argnums=(5, 6))


@partial(jax.jit, static_argnums=6)
def _continue_compiled(keys, parameters, state, L, mean, counts, draws: int):
    # L, mean and counts are arguments, not constants closed over: one program serves
    # every task of a shape, and the task's arrays are not baked into it
    logdensity = log_density(L, mean, counts)

    def chain(k, p, s):
        return _draw(logdensity, p, s, k, draws)

    return jax.vmap(chain)(keys, parameters, state)


def start_chains(
    key: jax.Array,
    L: jax.Array,
    mean: jax.Array,
    counts: jax.Array,
    init: jax.Array,
    warmup: int,
    draws: int,
) -> Chains:
    """:func:`sample_chains` of one task, compiled (one program per task shape), as
    :class:`Chains`."""
    state, parameters, pos, steps, div = _sample_chains_compiled(
        key, L, mean, counts, init, warmup, draws
    )
    return Chains(np.asarray(pos), state, parameters, np.asarray(steps), np.asarray(div))


def continue_chains(
    chains: Chains, key: jax.Array, L: jax.Array, mean: jax.Array, counts: jax.Array, draws: int
) -> Chains:
    """``chains`` with ``draws`` more draws per chain, continued from their last states
    with their adapted parameters (compiled as :func:`start_chains`)."""
    keys = jax.random.split(key, chains.positions.shape[0])
    state, (pos, steps, div) = _continue_compiled(
        keys, chains.parameters, chains.state, L, mean, counts, draws
    )
    return Chains(
        np.concatenate([chains.positions, np.asarray(pos)], axis=1),
        state,
        chains.parameters,
        np.concatenate([chains.steps, np.asarray(steps)], axis=1),
        np.concatenate([chains.divergent, np.asarray(div)], axis=1),
    )


def _rank_normal(x: np.ndarray) -> np.ndarray:
    """Rank-normalised values (Blom: ``Phi^-1((r - 3/8) / (n + 1/4))``, tied values given
    the average of their ranks) of ``x`` (chains, draws, k), ranked over chains and draws
    per column."""
    from scipy.special import ndtri

    c, n, k = x.shape
    m = c * n
    flat = np.ascontiguousarray(x.reshape(m, k).T)  # rank along the last axis: fast
    order = np.argsort(flat, axis=1)
    ordered = np.take_along_axis(flat, order, axis=1)
    same = ordered[:, 1:] == ordered[:, :-1]  # a tie with the previous sorted value
    first = np.concatenate([np.ones((k, 1), bool), ~same], axis=1)
    last = np.concatenate([~same, np.ones((k, 1), bool)], axis=1)
    pos = np.arange(m)
    start = np.maximum.accumulate(np.where(first, pos, 0), axis=1)
    end = np.minimum.accumulate(np.where(last, pos, m - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty_like(flat)
    np.put_along_axis(ranks, order, (start + end) / 2.0 + 1.0, axis=1)
    return ndtri((ranks.T.reshape(c, n, k) - 3.0 / 8.0) / (m + 0.25))


def convergence(x: np.ndarray, chunk: int = 8192) -> dict[str, np.ndarray]:
    """Rank-normalised split R-hat (the larger of bulk and folded), bulk ESS and tail ESS
    (5 % and 95 % quantile indicators) of each of the k quantities of ``x`` (chains,
    draws, k); three (k,) arrays, equal to blackjax's ``rhat``, ``ess_bulk`` and
    ``ess_tail`` (Vehtari et al. 2021).

    The split, ranking and folding are done here in numpy and the R-hat and ESS of the
    transformed draws by blackjax's ``potential_scale_reduction`` and
    ``effective_sample_size``: blackjax's own ``rhat`` ranks with XLA's sort, which on a
    CPU takes minutes for the tens of thousands of per-point targets of a task.
    A quantity that does not vary (a probability that is 1 in every draw) has an
    undefined R-hat and ESS; it is reported as R-hat 1 and ESS the number of draws.
    """
    x = np.asarray(x, dtype=np.float64)
    chains, draws, k = x.shape
    half = draws // 2
    split = np.concatenate([x[:, :half], x[:, half : 2 * half]], axis=0)
    out = {"rhat": np.empty(k), "ess_bulk": np.empty(k), "ess_tail": np.empty(k)}
    for lo in range(0, k, chunk):
        part = split[:, :, lo : lo + chunk]
        flat = part.reshape(-1, part.shape[2])
        bulk = _rank_normal(part)
        folded = _rank_normal(np.abs(part - np.median(flat, axis=0)))
        q_lo, q_hi = np.quantile(flat, [0.05, 0.95], axis=0)
        with jax.enable_x64(True):
            rhat = np.maximum(_psrf(jnp.asarray(bulk)), _psrf(jnp.asarray(folded)))
            ess = np.asarray(_ess(jnp.asarray(bulk)))
            tail = np.minimum(
                _ess(jnp.asarray((part <= q_lo).astype(np.float64))),
                _ess(jnp.asarray((part >= q_hi).astype(np.float64))),
            )
        hi = lo + part.shape[2]
        out["rhat"][lo:hi], out["ess_bulk"][lo:hi], out["ess_tail"][lo:hi] = rhat, ess, tail
    constant = np.ptp(x.reshape(-1, k), axis=0) == 0
    out["rhat"][constant] = 1.0
    out["ess_bulk"][constant] = out["ess_tail"][constant] = chains * draws
    return out


@jax.jit
def _psrf(z: jax.Array) -> jax.Array:
    with jax.numpy_rank_promotion("allow"):  # blackjax broadcasts (k,) against (c, n, k)
        return blackjax.diagnostics.potential_scale_reduction(z)


@jax.jit
def _ess(z: jax.Array) -> jax.Array:
    with jax.numpy_rank_promotion("allow"):
        return blackjax.diagnostics.effective_sample_size(z)
