"""Train K copies of one network in one jitted program: vmap over members, loop over epochs.

Member k sees the training rows ``rows[k]`` (``(K, m)`` indices into ``X``: the fit rows
for an ensemble, a bootstrap or subsample for bagging; repeated indices weight a row by
its multiplicity; with ``row_counts`` only the first of each row are real). Each epoch
shuffles the member's rows and takes ``ceil(m / B)`` optimiser steps, the last on the
epoch's remaining rows (micro-steps of the padded program, :mod:`methods.nn.padded`:
per-point loss plus loss terms). After each
epoch the validation loss (eval mode, 0 rows: none) goes to the trackers
(:mod:`methods.nn.trackers`); the loop ends after ``n_epochs`` or when a tracker is done
(early stopping, only with ``cfg.early_stopping``; by default the budget is the schedule).
Under vmap the loop runs until every member is done; a member that is done no longer
changes.

Programs are cached on their static parts (config key, loss, terms, trackers, whether
gradients are clipped); the data, the rows, the epoch budget, the initial variables, the
terms' arrays, the trackers' arguments, the clip norm and the optimizer's numbers
(:func:`udora.methods.nn.optim.hyperparams`: Adam's and SGD's learning rate, momentum,
weight decay, ...) are call arguments, so changing only them does not recompile.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from udora.methods.nn import padded as P
from udora.methods.nn.config import NNConfig
from udora.methods.nn.initial import fresh_variables
from udora.methods.nn.network import Variables
from udora.methods.nn.optim import (
    hyperparams,
    make_optimizer,
    optimizer_config,
    optimizer_key,
    set_hyperparams,
)
from udora.methods.nn.padded import Padding
from udora.methods.nn.padding import (
    COMPILER_OPTIONS,
    cut_trees,
    dims_of,
    from_flax,
    padding,
)
from udora.methods.nn.step import GaussianNLL, LossTerm, PointLoss, split_traced
from udora.methods.nn.trackers import (
    Tracker,
    best_epoch,
    last_epoch,
)

TRAINER_VERSION = 5
"""In the identity of every NN run (``trainer_version``): 5 draws the initialisation and
predicts in one program per search space (:func:`fresh_variables`,
:func:`~udora.methods.nn.padding.eval_padding`), steps the optimiser on one flat parameter
vector and trains SWAG's fit split padded to the training sample; 4 is the padded,
micro-batched program with the swept method parts as arguments (EDL's ``evi_reg``,
bagging's resample size, DEUP's excess micro-step, SWAG's checkpoint schedule and clip
norm); 3 compiled one SWAG collection per schedule and clip norm, 2 one program per value
of the others, 1 one per architecture. Runs of earlier versions are never reused."""


@functools.lru_cache(maxsize=64)
def _epoch_program(
    opt_key: tuple[Any, ...],
    pad: Padding,
    loss: PointLoss,
    terms: tuple[LossTerm, ...],
    trackers: tuple[Tracker, ...],
    clipped: bool,
    counted: bool,
) -> Callable:
    """The jitted, member-vmapped epoch loop for these static parts (see the module doc).

    ``loss`` is a key of :func:`~udora.methods.nn.step.split_traced` (traced fields come as
    ``loss_args``). With ``counted``, only ``count`` of a member's padded ``rows`` are real:
    an epoch sorts uniform keys to shuffle them first (not ``jax.random.permutation``).
    With ``clipped``, the global gradient norm is clipped first, at ``hp["max_norm"]``.

    The parameters travel through the loop as one flat vector (``ravel_pytree``): the
    gradient sums, the mask and AdamW's or SGD's update are then a handful of operations on
    one array instead of a copy per leaf (a third less to compile). Muon and
    SOAP, whose updates depend on the matrix shapes, update the tree."""
    tx = make_optimizer(optimizer_config(opt_key))
    if clipped:  # the clip norm is a hyperparameter of the state, like the learning rate
        tx = optax.chain(optax.inject_hyperparams(optax.clip_by_global_norm)(max_norm=1.0), tx)
    shaped = opt_key[0] not in ("adam", "sgd")
    R = pad.micro

    def evaluate(params, state, x, dims):
        return P.apply(pad, dims, {"params": params, **state}, x, train=False)[0]

    def val_loss(params, state, X_val, y_val, dims, point):
        if X_val.shape[0] == 0:
            return None
        return jnp.mean(point(evaluate(params, state, X_val, dims), y_val))

    def train_one(
        key,
        rows,
        count,
        X,
        y,
        X_val,
        y_val,
        n_epochs,
        dims,
        init,
        term_args,
        hp,
        loss_args,
        tracker_args,
    ):
        point = dataclasses.replace(loss, **loss_args) if loss_args else loss
        _, k_drop, k_shuffle = jax.random.split(key, 3)  # the first drew the init
        flat0, unravel = ravel_pytree(init["params"])
        state = {k: v for k, v in init.items() if k != "params"}
        keep = ravel_pytree(P.gradient_mask(pad, dims, init["params"]))[0]

        def update(g, opt_state, flat):
            if not shaped:
                return tx.update(g, opt_state, flat)
            u, opt_state = tx.update(unravel(g), opt_state, unravel(flat))
            return ravel_pytree(u)[0], opt_state

        m = count if counted else rows.shape[0]
        batch = jnp.minimum(dims.batch, m)
        n_batches = (m + batch - 1) // batch

        def batch_step(j, carry, perm, e):
            """One optimiser step on rows ``perm[j B : min((j + 1) B, m)]``."""
            flat, state, opt_state = carry
            params = unravel(flat)
            start = j * batch
            count = jnp.minimum(batch, m - start)
            k_batch = jax.random.fold_in(jax.random.fold_in(k_drop, e), j)
            k_dropout, k_term = jax.random.fold_in(k_batch, 0), jax.random.fold_in(k_batch, 1)

            def micro(i, acc):
                grads, st = acc
                positions = i * R + jnp.arange(R)
                real = positions < count
                idx = jax.lax.dynamic_slice(perm, (start + i * R,), (R,))

                def summed(p):
                    variables = {"params": p, **st}
                    raw, new_st = P.apply(
                        pad,
                        dims,
                        variables,
                        X[idx],
                        train=True,
                        key=k_dropout,
                        positions=positions,
                        row_mask=real,
                    )
                    return jnp.sum(jnp.where(real, point(raw, y[idx]), 0.0)), new_st

                g, new_st = jax.grad(summed, has_aux=True)(params)
                return jax.tree.map(jnp.add, grads, g), new_st

            zeros = jax.tree.map(jnp.zeros_like, params)
            n_micro = (count + R - 1) // R
            grads, new_state = jax.lax.fori_loop(0, n_micro, micro, (zeros, state))
            grads = ravel_pytree(grads)[0] / count.astype(flat.dtype)
            if terms:

                def penalty(f):
                    net = lambda x: evaluate(unravel(f), state, x, dims)  # noqa: E731
                    return sum(t(net, k_term, a) for t, a in zip(terms, term_args, strict=True))

                grads = grads + jax.grad(penalty)(flat)
            updates, opt_state = update(jnp.where(keep, grads, 0.0), opt_state, flat)
            return flat + updates, new_state, opt_state

        def epoch(carry):
            flat, state, opt_state, e, tracked = carry
            k_epoch = jax.random.fold_in(k_shuffle, e)
            if counted:  # the real rows first, in random order
                u = jax.random.uniform(k_epoch, rows.shape)
                perm = rows[jnp.argsort(jnp.where(jnp.arange(rows.shape[0]) < m, u, 2.0))]
            else:
                perm = jax.random.permutation(k_epoch, rows)
            perm = jnp.concatenate([perm, jnp.zeros((R,), perm.dtype)])  # slack for slicing
            flat, state, opt_state = jax.lax.fori_loop(
                0, n_batches, lambda j, c: batch_step(j, c, perm, e), (flat, state, opt_state)
            )
            params = unravel(flat)
            current = val_loss(params, state, X_val, y_val, dims, point)
            tracked = tuple(
                t.update(s, e, params, state, current)
                for t, s in zip(trackers, tracked, strict=True)
            )
            return flat, state, opt_state, e + 1, tracked

        def go_on(carry):
            *_, e, tracked = carry
            stop = functools.reduce(
                jnp.logical_or, (t.done(s) for t, s in zip(trackers, tracked, strict=True)), False
            )
            return (e < n_epochs) & jnp.logical_not(stop)

        tracked0 = tuple(
            t.init(init["params"], state, a) for t, a in zip(trackers, tracker_args, strict=True)
        )
        opt_state = set_hyperparams(tx.init(init["params"] if shaped else flat0), hp)
        carry0 = (flat0, state, opt_state, jnp.zeros((), jnp.int32), tracked0)
        flat, state, _, n_run, tracked = jax.lax.while_loop(go_on, epoch, carry0)
        results = tuple(t.result(s) for t, s in zip(trackers, tracked, strict=True))
        return {"params": unravel(flat), **state}, results, n_run

    in_axes = (
        0,
        0,
        0 if counted else None,
        None,
        None,
        None,
        None,
        None,
        None,
        0,
        None,
        None,
        None,
        None,
    )
    return jax.jit(jax.vmap(train_one, in_axes=in_axes), compiler_options=COMPILER_OPTIONS)


def run_epochs(
    cfg: NNConfig,
    X: jax.Array,
    y: jax.Array,
    X_val: jax.Array,
    y_val: jax.Array,
    rows: jax.Array,
    keys: jax.Array,
    n_epochs: int,
    trackers: tuple[Tracker, ...],
    *,
    loss: PointLoss | None = None,
    terms: tuple[LossTerm, ...] = (),
    term_args: tuple[Any, ...] = (),
    init: Variables | None = None,
    grad_clip: float | None = None,
    row_counts: jax.Array | None = None,
    tracker_args: tuple[Any, ...] | None = None,
) -> tuple[Variables, tuple[Any, ...], jax.Array]:
    """Train K members for at most ``n_epochs`` epochs with ``trackers``; inputs float32.

    Args:
        cfg: the method's config (architecture, optimiser, batch size).
        X, y: the data ``(n, d)``, ``(n,)`` that ``rows`` index (NNMethod passes the whole
            training sample; the fit split is the rows).
        X_val, y_val: validation split ``(v, d)``, ``(v,)``; ``v = 0``: no validation loss.
        rows: ``(K, m)`` int32 row indices of each member's training sample; with
            ``row_counts`` ``(K,)`` only the first ``row_counts[k]`` of row k are real (the
            others padding, so samples of any size share one program).
        keys: ``(K,)`` JAX keys, one per member (initialisation, shuffling, dropout).
        trackers: hashable trackers, updated after each epoch (they see padded trees).
        loss: hashable per-point loss with ``n_out`` (default: the head's Gaussian NLL).
        terms, term_args: hashable loss terms and, one entry each, their arrays.
        init: :class:`~udora.methods.nn.backbone.ResidualMLP` variables with a leading K
            axis to start from (default: fresh init).
        grad_clip: clip the global gradient norm to this value before the optimiser.
        tracker_args: one entry per tracker, its traced ``args`` (default None each).

    Returns:
        variables: the last iterate as ResidualMLP variables, leading K axis on every leaf.
        results: each tracker's ``result`` of its final state (leading K axis), in the
            order of ``trackers``, with every variables tree in it cut to the true shapes.
        epochs_run: ``(K,)`` epochs each member's loop ran.
    """
    loss, loss_args = split_traced(GaussianNLL(cfg.head) if loss is None else loss)
    pad = padding(cfg, loss.n_out)
    counted = row_counts is not None
    program = _epoch_program(
        optimizer_key(cfg),
        pad,
        loss,
        tuple(terms),
        tuple(trackers),
        grad_clip is not None,
        counted,
    )
    if init is None:
        init = fresh_variables(cfg, loss.n_out, keys, X.shape[1])
    init = from_flax(pad, jax.tree.map(np.asarray, init), cfg.width, cfg.blocks)
    budget = jnp.asarray(n_epochs, jnp.int32)
    count = jnp.asarray(row_counts, jnp.int32) if counted else None
    if tracker_args is None:
        tracker_args = (None,) * len(trackers)
    hp = hyperparams(cfg)
    if grad_clip is not None:
        hp["max_norm"] = jnp.asarray(grad_clip, jnp.float32)
    last, results, n_run = program(
        keys,
        rows,
        count,
        X,
        y,
        X_val,
        y_val,
        budget,
        dims_of(cfg),
        init,
        tuple(term_args),
        hp,
        loss_args,
        tuple(tracker_args),
    )
    return cut_trees(last, cfg.width, cfg.blocks), cut_trees(results, cfg.width, cfg.blocks), n_run


def schedule_tracker(cfg: NNConfig) -> Tracker:
    """The tracker of ``cfg``'s schedule: :func:`best_epoch` ``(patience)`` with
    ``early_stopping``, else :func:`last_epoch` (exactly ``n_epochs``, the last iterate)."""
    return best_epoch(cfg.patience) if cfg.early_stopping else last_epoch()


def train_members(
    cfg: NNConfig, *data: jax.Array, **parts: Any
) -> tuple[Variables, jax.Array, jax.Array]:
    """Train K members for ``cfg.n_epochs`` on ``cfg``'s schedule (:func:`schedule_tracker`).

    ``data`` are :func:`run_epochs`'s arrays ``X, y, X_val, y_val, rows, keys`` (same
    shapes); ``parts`` its keywords (loss, terms, term_args, init, grad_clip).

    Returns:
        variables: with ``early_stopping``, each member's best-epoch variables (no split:
            the last); without, the last iterate after exactly ``n_epochs`` epochs.
        val_loss: ``(K,)`` validation loss of the kept variables (0 without a split).
        epochs_run: ``(K,)`` epochs each member ran.
    """
    tracker = schedule_tracker(cfg)
    last, (result,), n_run = run_epochs(cfg, *data, cfg.n_epochs, (tracker,), **parts)
    if not cfg.early_stopping:
        return last, result, n_run
    params, state = result.best
    return {"params": params, **state}, result.best_val, n_run
