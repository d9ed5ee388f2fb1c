"""The training program of :func:`udora.methods.nn.trainer.train_members`, lowered and not
compiled, so a benchmark can time compilation alone (``benchmarks/bench_nn_ensemble.py``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from udora.methods.nn.config import NNConfig
from udora.methods.nn.initial import fresh_variables
from udora.methods.nn.optim import hyperparams, optimizer_key
from udora.methods.nn.padding import dims_of, from_flax, padding
from udora.methods.nn.step import GaussianNLL
from udora.methods.nn.trainer import _epoch_program, schedule_tracker


def member_args(cfg: NNConfig, X, y, X_val, y_val, rows, keys) -> tuple:
    """The arguments of the compiled program of :func:`lower_members` for these arrays
    (as in :func:`run_epochs`; fresh init, ``cfg.n_epochs`` epochs)."""
    n_epochs = jnp.asarray(cfg.n_epochs, jnp.int32)
    pad = padding(cfg, GaussianNLL.n_out)
    init = from_flax(pad, fresh_variables(cfg, pad.n_out, keys, X.shape[1]), cfg.width, cfg.blocks)
    return (
        keys,
        rows,
        None,
        X,
        y,
        X_val,
        y_val,
        n_epochs,
        dims_of(cfg),
        init,
        (),
        hyperparams(cfg),
        {},
        (None,),
    )


def lower_members(cfg: NNConfig, *data: jax.Array) -> jax.stages.Lowered:
    """The program :func:`train_members` runs for these arguments, lowered, not compiled.

    ``data`` are ``X, y, X_val, y_val, rows, keys`` as in :func:`run_epochs`.
    ``.compile()`` on it times compilation alone (benchmarks); the compiled program takes
    :func:`member_args` ``(cfg, *data)``.
    """
    loss = GaussianNLL(cfg.head)
    pad = padding(cfg, loss.n_out)
    program = _epoch_program(
        optimizer_key(cfg), pad, loss, (), (schedule_tracker(cfg),), False, False
    )
    return program.lower(*member_args(cfg, *data))
