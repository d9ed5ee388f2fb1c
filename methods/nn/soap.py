"""SOAP: Adam run in the eigenbasis of Shampoo's preconditioner, as an optax transform.

Vyas et al., "SOAP: Improving and Stabilizing Shampoo using Adam" (2024). For a matrix
parameter with gradient ``G`` ``(a, b)`` at step t:

    L <- b2 L + (1 - b2) G G^T        R <- b2 R + (1 - b2) G^T G        (Shampoo factors)
    Q_L, Q_R = eigenvectors of L, R   (refreshed every ``precondition_frequency`` steps)
    m <- b1 m + (1 - b1) G            (first moment, original basis)
    G' = Q_L^T G Q_R,  M' = Q_L^T m Q_R
    v <- b2 v + (1 - b2) G'^2         (second moment, rotated basis)
    update = Q_L [ (M' / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) ] Q_R^T

Vectors (biases) are rotated on their one side only when ``precondition_1d``; otherwise
they, like scalars and any side longer than ``max_precond_dim``, get plain Adam (identity
basis). The basis is refreshed with a full ``eigh`` (the reference code uses a QR power
step after the first); fine for the widths used here (<= 64).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax


class SoapLeafState(NamedTuple):
    """Per-parameter state; ``factors``/``bases`` hold one ``(s, s)`` matrix per rotated side
    ``s`` (an empty ``(0, 0)`` placeholder for a side left unrotated)."""

    mu: jax.Array  # same shape as the parameter
    nu: jax.Array  # same shape as the parameter, rotated basis
    factors: tuple[jax.Array, ...]
    bases: tuple[jax.Array, ...]


class SoapState(NamedTuple):
    count: jax.Array  # () int32, steps taken
    leaves: optax.Params  # pytree of SoapLeafState


def _rotated_sides(shape: tuple[int, ...], precondition_1d: bool, max_dim: int) -> tuple[bool, ...]:
    if len(shape) == 2:
        return tuple(s <= max_dim for s in shape)
    if len(shape) == 1:
        return (precondition_1d and shape[0] <= max_dim,)
    return tuple(False for _ in shape)


def _rotate(x: jax.Array, bases: tuple[jax.Array, ...], back: bool) -> jax.Array:
    """``Q_L^T x Q_R`` (or ``Q_L x Q_R^T`` with ``back``) over the rotated sides of x."""
    for axis, q in enumerate(bases):
        if q.shape[0] == 0:
            continue
        q = q if back else q.T
        x = jnp.moveaxis(jnp.tensordot(q, x, axes=([1], [axis])), 0, axis)
    return x


def _factor_update(g: jax.Array, axis: int) -> jax.Array:
    """``g g^T`` contracted over every axis except ``axis``: an ``(s, s)`` matrix."""
    other = [a for a in range(g.ndim) if a != axis]
    return jnp.tensordot(g, g, axes=(other, other))


def scale_by_soap(
    b1: float = 0.9,
    b2: float = 0.95,
    eps: float = 1e-8,
    precondition_frequency: int = 10,
    precondition_1d: bool = False,
    max_precond_dim: int = 1024,
) -> optax.GradientTransformation:
    """The SOAP direction (no learning rate, no weight decay); see the module docstring."""

    def init_leaf(p: jax.Array) -> SoapLeafState:
        sides = _rotated_sides(p.shape, precondition_1d, max_precond_dim)
        mats = tuple(
            jnp.zeros((s, s), p.dtype) if on else jnp.zeros((0, 0), p.dtype)
            for s, on in zip(p.shape, sides, strict=True)
        )
        eyes = tuple(jnp.eye(m.shape[0], dtype=p.dtype) for m in mats)
        return SoapLeafState(jnp.zeros_like(p), jnp.zeros_like(p), mats, eyes)

    def init_fn(params: optax.Params) -> SoapState:
        return SoapState(jnp.zeros((), jnp.int32), jax.tree.map(init_leaf, params))

    def update_fn(updates, state: SoapState, params=None):
        del params
        count = state.count + 1
        refresh = (count == 1) | (count % precondition_frequency == 0)
        t = count.astype(jnp.float32)

        def leaf(g: jax.Array, s: SoapLeafState) -> tuple[jax.Array, SoapLeafState]:
            mu = b1 * s.mu + (1.0 - b1) * g
            g_rot = _rotate(g, s.bases, back=False)
            nu = b2 * s.nu + (1.0 - b2) * g_rot**2
            mu_hat = _rotate(mu, s.bases, back=False) / (1.0 - b1**t)
            nu_hat = nu / (1.0 - b2**t)
            step = _rotate(mu_hat / (jnp.sqrt(nu_hat) + eps), s.bases, back=True)
            factors, bases = [], []
            for axis, (f, q) in enumerate(zip(s.factors, s.bases, strict=True)):
                if f.shape[0] == 0:
                    factors.append(f)
                    bases.append(q)
                    continue
                f = b2 * f + (1.0 - b2) * _factor_update(g, axis)
                fresh = jnp.linalg.eigh(f)[1]
                factors.append(f)
                bases.append(jnp.where(refresh, fresh, q))
            return step, SoapLeafState(mu, nu, tuple(factors), tuple(bases))

        flat, treedef = jax.tree.flatten(updates)
        outs = [leaf(g, s) for g, s in zip(flat, treedef.flatten_up_to(state.leaves), strict=True)]
        steps = treedef.unflatten([o[0] for o in outs])
        leaves = treedef.unflatten([o[1] for o in outs])
        return steps, SoapState(count, leaves)

    return optax.GradientTransformation(init_fn, update_fn)


def soap(
    learning_rate: float,
    b1: float = 0.9,
    b2: float = 0.95,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    precondition_frequency: int = 10,
    precondition_1d: bool = False,
) -> optax.GradientTransformation:
    """SOAP with decoupled weight decay (as AdamW): ``p <- p - lr (step + wd p)``."""
    return optax.chain(
        scale_by_soap(b1, b2, eps, precondition_frequency, precondition_1d),
        optax.add_decayed_weights(weight_decay),
        optax.scale_by_learning_rate(learning_rate),
    )
