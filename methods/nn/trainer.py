"""Train K copies of one network in one jitted program: vmap over parameters and keys.

Member k sees the training rows ``rows[k]`` (``(K, m)`` indices into the fit split: all
rows for an ensemble, a bootstrap or subsample for bagging; repeated indices weight a row
by its multiplicity). Each epoch shuffles the member's rows, fills the last mini-batch up
with rows from the epoch's start, and takes ``ceil(m / B)`` optimiser steps on the mean
per-point NLL (:func:`methods.nn.heads.nll`). After each epoch the NLL on the validation
split (eval mode) decides early stopping: a member keeps its best-epoch variables and
stops after ``patience`` epochs without improvement. Under vmap the epoch loop runs until
every member has stopped; stopped members no longer change.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from methods.nn.backbone import ResidualMLP
from methods.nn.config import NNConfig
from methods.nn.heads import nll
from methods.nn.optim import make_optimizer

Variables = dict[str, Any]


def make_network(cfg: NNConfig) -> ResidualMLP:
    """The backbone with a 2-wide Gaussian head, as configured."""
    return ResidualMLP(cfg.width, cfg.blocks, cfg.activation, cfg.norm, cfg.dropout, n_out=2)


def _program_key(cfg: NNConfig) -> NNConfig:
    # Fields that only change array sizes or loop bounds do not need a new program.
    return cfg.model_copy(update={"n_members": 1, "epochs": 1, "max_epochs": None})


@functools.lru_cache(maxsize=64)
def _train_program(key_cfg: NNConfig, batch: int, has_val: bool) -> Callable:
    net = make_network(key_cfg)
    tx = make_optimizer(key_cfg)
    head = key_cfg.head
    mutable = ["batch_stats"] if key_cfg.norm == "batch" else False

    def forward(params, state, x, *, train, rng=None):
        variables = {"params": params, **state}
        rngs = {"dropout": rng} if rng is not None else None
        if train and mutable:
            raw, new_state = net.apply(variables, x, train=True, rngs=rngs, mutable=mutable)
            return raw, new_state
        return net.apply(variables, x, train=train, rngs=rngs), state

    def train_one(key, rows, X, y, X_val, y_val, n_epochs):
        k_init, k_drop, k_shuffle = jax.random.split(key, 3)
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
                return jnp.mean(nll(raw, y[batch_rows], head)), new_state

            (loss, new_state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            updates, opt_state = tx.update(grads, opt_state, params)
            params = jax.tree.map(jnp.add, params, updates)
            return (params, new_state, opt_state), loss

        def val_loss(params, state):
            if not has_val:
                return jnp.zeros((), jnp.float32)
            raw, _ = forward(params, state, X_val, train=False)
            return jnp.mean(nll(raw, y_val, head))

        def epoch(carry):
            params, state, opt_state, best, best_val, bad, e = carry
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
            return params, state, opt_state, best, best_val, bad, e + 1

        def go_on(carry):
            *_, bad, e = carry
            return (e < n_epochs) & (bad < key_cfg.patience)

        init = (
            params,
            state,
            tx.init(params),
            (params, state),
            jnp.asarray(jnp.inf, jnp.float32),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), jnp.int32),
        )
        *_, (best_params, best_state), best_val, _, n_run = jax.lax.while_loop(go_on, epoch, init)
        return {"params": best_params, **best_state}, best_val, n_run

    members = jax.vmap(train_one, in_axes=(0, 0, None, None, None, None, None))
    return jax.jit(members)


def train_members(
    cfg: NNConfig,
    X: jax.Array,
    y: jax.Array,
    X_val: jax.Array,
    y_val: jax.Array,
    rows: jax.Array,
    keys: jax.Array,
) -> tuple[Variables, jax.Array, jax.Array]:
    """Train K members; inputs are standardised float32.

    Args:
        cfg: the method's config (architecture, optimiser, schedule).
        X, y: fit split ``(n, d)``, ``(n,)``.
        X_val, y_val: validation split ``(v, d)``, ``(v,)``; ``v = 0`` disables early stopping.
        rows: ``(K, m)`` int32 row indices of each member's training sample.
        keys: ``(K,)`` JAX keys, one per member (initialisation, shuffling, dropout).

    Returns:
        variables: flax variables with a leading member axis K on every leaf.
        best_val: ``(K,)`` best validation NLL per member (0 without a split).
        epochs_run: ``(K,)`` epochs each member ran.
    """
    batch = min(cfg.batch_size, rows.shape[1])
    program = _train_program(_program_key(cfg), batch, X_val.shape[0] > 0)
    n_epochs = jnp.asarray(cfg.train_epochs, jnp.int32)
    return program(keys, rows, X, y, X_val, y_val, n_epochs)


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
    program = _train_program(_program_key(cfg), batch, X_val.shape[0] > 0)
    n_epochs = jnp.asarray(cfg.train_epochs, jnp.int32)
    return program.lower(keys, rows, X, y, X_val, y_val, n_epochs)


@functools.lru_cache(maxsize=64)
def _predict_program(key_cfg: NNConfig, sample: bool) -> Callable:
    net = make_network(key_cfg)

    def one(variables, key, X):
        rngs = {"dropout": key} if sample else None
        return net.apply(variables, X, train=False, sample=sample, rngs=rngs)

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None)))


def predict_members(
    cfg: NNConfig, variables: Variables, keys: jax.Array, X: jax.Array, *, sample: bool = False
) -> jax.Array:
    """Raw head outputs ``(K, m, 2)`` at ``X`` ``(m, d)`` for K stacked variable sets.

    With ``sample`` dropout stays on (MC dropout) and ``keys`` ``(K,)`` draw the masks;
    otherwise the pass is deterministic and ``keys`` are unused.
    """
    return _predict_program(_program_key(cfg), sample)(variables, keys, X)
