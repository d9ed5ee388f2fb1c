"""Train K copies of one network in one jitted program: vmap over parameters and keys.

Member k sees the training rows ``rows[k]`` (``(K, m)`` indices into the fit split: all
rows for an ensemble, a bootstrap or subsample for bagging; repeated indices weight a row
by its multiplicity). Each epoch shuffles the member's rows, fills the last mini-batch up
with rows from the epoch's start, and takes ``ceil(m / B)`` optimiser steps on the mean
per-point NLL (:func:`methods.nn.heads.nll`). After each epoch the NLL on the validation
split (eval mode) decides early stopping: a member keeps its best-epoch variables and
stops after ``patience`` epochs without improvement. Under vmap the epoch loop runs until
every member has stopped; stopped members no longer change.

Methods with another objective pass ``loss``, a hashable per-point loss with an ``n_out``
attribute (raw outputs ``(B, n_out)`` and targets ``(B,)`` to ``(B,)``); the default is the
Gaussian NLL of the configured head. ``init`` continues from given variables instead of
a fresh initialisation, ``grad_clip`` clips the global gradient norm before the
optimiser, ``regulariser`` adds a term on the network function to every step's loss
(FSP-Laplace), and :func:`collect_moments` keeps running first and second moments of the
parameters every ``every`` epochs (SWAG).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import optax

from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import nll
from udora.methods.nn.network import Variables, make_network, program_key
from udora.methods.nn.optim import make_optimizer


@dataclass(frozen=True)
class GaussianNLL:
    """Per-point Gaussian NLL ``(B,)`` of raw outputs ``(B, 2)`` under ``head``."""

    head: str
    n_out: ClassVar[int] = 2

    def __call__(self, raw: jax.Array, y: jax.Array) -> jax.Array:
        return nll(raw, y, self.head)


@functools.lru_cache(maxsize=64)
def _train_program(
    key_cfg: NNConfig,
    batch: int,
    has_val: bool,
    loss: Callable | None = None,
    has_init: bool = False,
    grad_clip: float | None = None,
    every: int = 0,
    regulariser: Callable | None = None,
) -> Callable:
    loss = GaussianNLL(key_cfg.head) if loss is None else loss
    net = make_network(key_cfg, loss.n_out)
    tx = make_optimizer(key_cfg)
    if grad_clip is not None:
        tx = optax.chain(optax.clip_by_global_norm(grad_clip), tx)
    mutable = ["batch_stats"] if key_cfg.norm == "batch" else False

    def forward(params, state, x, *, train, rng=None):
        variables = {"params": params, **state}
        rngs = {"dropout": rng} if rng is not None else None
        if train and mutable:
            raw, new_state = net.apply(variables, x, train=True, rngs=rngs, mutable=mutable)
            return raw, new_state
        return net.apply(variables, x, train=train, rngs=rngs), state

    def train_one(key, rows, X, y, X_val, y_val, n_epochs, init, reg_args):
        k_init, k_drop, k_shuffle = jax.random.split(key, 3)
        if has_init:
            variables = init
        else:
            variables = net.init({"params": k_init, "dropout": k_drop}, X[:1], train=False)
        params = variables["params"]
        state = {k: v for k, v in variables.items() if k != "params"}
        m = rows.shape[0]
        steps = math.ceil(m / batch)

        def step(carry, inputs):
            params, state, opt_state = carry
            batch_rows, rng = inputs

            def loss_fn(p):
                raw, new_state = forward(p, state, X[batch_rows], train=True, rng=rng)
                value = jnp.mean(loss(raw, y[batch_rows]))
                if regulariser is not None:
                    f = lambda x: forward(p, state, x, train=False)[0]  # noqa: E731
                    value = value + regulariser(f, rng, reg_args)
                return value, new_state

            (value, new_state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            updates, opt_state = tx.update(grads, opt_state, params)
            params = jax.tree.map(jnp.add, params, updates)
            return (params, new_state, opt_state), value

        def val_loss(params, state):
            if not has_val:
                return jnp.zeros((), jnp.float32)
            raw, _ = forward(params, state, X_val, train=False)
            return jnp.mean(loss(raw, y_val))

        def epoch(carry):
            params, state, opt_state, best, best_val, bad, e, moments = carry
            perm = jax.random.permutation(jax.random.fold_in(k_shuffle, e), rows)
            order = jnp.concatenate([perm, perm[: steps * batch - m]]).reshape(steps, batch)
            rngs = jax.random.split(jax.random.fold_in(k_drop, e), steps)
            (params, state, opt_state), _ = jax.lax.scan(
                step, (params, state, opt_state), (order, rngs)
            )
            current = val_loss(params, state)
            better = (current < best_val) | (not has_val)
            best = jax.tree.map(lambda new, old: jnp.where(better, new, old), (params, state), best)
            best_val = jnp.where(better, current, best_val)
            bad = jnp.where(better, 0, bad + 1)
            if every:
                take = (e + 1) % every == 0
                first, second, count = moments
                first = jax.tree.map(lambda s, p: s + jnp.where(take, p, 0.0), first, params)
                second = jax.tree.map(lambda s, p: s + jnp.where(take, p * p, 0.0), second, params)
                moments = (first, second, count + take.astype(jnp.float32))
            return params, state, opt_state, best, best_val, bad, e + 1, moments

        def go_on(carry):
            *_, bad, e, _ = carry
            return (e < n_epochs) & (bad < key_cfg.patience)

        carry0 = (
            params,
            state,
            tx.init(params),
            (params, state),
            jnp.asarray(jnp.inf, jnp.float32),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), jnp.int32),
            (
                jax.tree.map(jnp.zeros_like, params) if every else (),
                jax.tree.map(jnp.zeros_like, params) if every else (),
                jnp.zeros((), jnp.float32),
            ),
        )
        out = jax.lax.while_loop(go_on, epoch, carry0)
        (best_params, best_state), best_val, n_run = out[3], out[4], out[6]
        result = ({"params": best_params, **best_state}, best_val, n_run)
        if not every:
            return result
        first, second, count = out[7]
        count = jnp.maximum(count, 1.0)
        first, second = (jax.tree.map(lambda a: a / count, t) for t in (first, second))
        return (*result, (first, second))

    # Optional trailing arguments: initial variables (per member), regulariser data.
    has_reg = regulariser is not None

    def program(key, rows, X, y, X_val, y_val, n_epochs, *extra):
        init = extra[0] if has_init else None
        reg_args = extra[-1] if has_reg else None
        return train_one(key, rows, X, y, X_val, y_val, n_epochs, init, reg_args)

    in_axes = (0, 0, None, None, None, None, None) + (0,) * has_init + (None,) * has_reg
    return jax.jit(jax.vmap(program, in_axes=in_axes))


def train_members(
    cfg: NNConfig,
    X: jax.Array,
    y: jax.Array,
    X_val: jax.Array,
    y_val: jax.Array,
    rows: jax.Array,
    keys: jax.Array,
    *,
    loss: Callable | None = None,
    init: Variables | None = None,
    grad_clip: float | None = None,
    regulariser: Callable | None = None,
    regulariser_args: Any = None,
) -> tuple[Variables, jax.Array, jax.Array]:
    """Train K members; inputs are standardised float32.

    Args:
        cfg: the method's config (architecture, optimiser, schedule).
        X, y: fit split ``(n, d)``, ``(n,)``.
        X_val, y_val: validation split ``(v, d)``, ``(v,)``; ``v = 0`` disables early stopping.
        rows: ``(K, m)`` int32 row indices of each member's training sample.
        keys: ``(K,)`` JAX keys, one per member (initialisation, shuffling, dropout).
        loss: hashable per-point loss with ``n_out`` (default: the head's Gaussian NLL).
        init: variables with a leading K axis to start from (default: fresh init).
        grad_clip: clip the global gradient norm to this value before the optimiser.
        regulariser: hashable ``R(f, key, args) -> scalar`` added to every step's loss,
            with ``f`` the network's raw outputs (eval mode) at any inputs, ``key`` the
            step's key and ``args`` = ``regulariser_args`` (arrays: no recompilation when
            only they change).

    Returns:
        variables: flax variables with a leading member axis K on every leaf.
        best_val: ``(K,)`` best validation loss per member (0 without a split).
        epochs_run: ``(K,)`` epochs each member ran.
    """
    batch = min(cfg.batch_size, rows.shape[1])
    program = _train_program(
        program_key(cfg),
        batch,
        X_val.shape[0] > 0,
        loss,
        init is not None,
        grad_clip,
        0,
        regulariser,
    )
    n_epochs = jnp.asarray(cfg.train_epochs, jnp.int32)
    extra = (() if init is None else (init,)) + (() if regulariser is None else (regulariser_args,))
    return program(keys, rows, X, y, X_val, y_val, n_epochs, *extra)


def collect_moments(
    cfg: NNConfig,
    X: jax.Array,
    y: jax.Array,
    rows: jax.Array,
    keys: jax.Array,
    init: Variables,
    *,
    every: int,
    n_checkpoints: int,
    grad_clip: float | None = None,
) -> tuple[Variables, Any, Any]:
    """Continue training from ``init`` for ``every * n_checkpoints`` epochs (no early stop).

    After every ``every``-th epoch the parameters ``theta_c`` enter running moments
    ``E[theta] = (1/C) sum_c theta_c`` and ``E[theta^2] = (1/C) sum_c theta_c^2``.

    Returns:
        variables: the last iterate (leading K axis).
        first, second: ``E[theta]`` and ``E[theta^2]`` as params trees (leading K axis).
    """
    batch = min(cfg.batch_size, rows.shape[1])
    program = _train_program(program_key(cfg), batch, False, None, True, grad_clip, every)
    n_epochs = jnp.asarray(every * n_checkpoints, jnp.int32)
    variables, _, _, (first, second) = program(keys, rows, X, y, X[:0], y[:0], n_epochs, init)
    return variables, first, second


def lower_members(
    cfg: NNConfig,
    X: jax.Array,
    y: jax.Array,
    X_val: jax.Array,
    y_val: jax.Array,
    rows: jax.Array,
    keys: jax.Array,
) -> jax.stages.Lowered:
    """The program :func:`train_members` runs for these arguments, lowered but not compiled.

    ``.compile()`` on it times compilation alone (benchmarks); calling the compiled
    program with the same arguments plus ``n_epochs`` (an int32 scalar) trains.
    """
    batch = min(cfg.batch_size, rows.shape[1])
    program = _train_program(program_key(cfg), batch, X_val.shape[0] > 0)
    n_epochs = jnp.asarray(cfg.train_epochs, jnp.int32)
    return program.lower(keys, rows, X, y, X_val, y_val, n_epochs)
