"""The backbone as a network of K stacked variable sets, and its batched forward pass.

:func:`make_network` builds the configured residual MLP with an ``n_out``-wide head;
:func:`predict_members` evaluates K variable sets (a leading K axis on every leaf) at the
same inputs in one jitted, vmapped program, deterministic or with MC dropout. Programs are
cached per :func:`program_key` of the config, so configs that differ only in array sizes,
loop bounds or the optimizer's call-time numbers share one compiled program.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax

from udora.methods.nn.backbone import ResidualMLP
from udora.methods.nn.config import NNConfig

Variables = dict[str, Any]


def make_network(cfg: NNConfig, n_out: int = 2) -> ResidualMLP:
    """The backbone with an ``n_out``-wide linear head (2: Gaussian), as configured."""
    return ResidualMLP(cfg.width, cfg.blocks, cfg.activation, cfg.norm, cfg.dropout, n_out=n_out)


def program_key(cfg: NNConfig) -> NNConfig:
    """``cfg`` with the fields that need no new program set to constants: K and epochs
    (array sizes, loop bounds) and the optimizer numbers passed at call time
    (:data:`udora.methods.nn.optim.DYNAMIC`)."""
    from udora.methods.nn.optim import DYNAMIC

    fixed = {field: type(cfg).model_fields[field].default
             for field in DYNAMIC.get(cfg.optimizer, {}).values()}  # fmt: skip
    return cfg.model_copy(update={"n_members": 1, "n_epochs": 1, **fixed})


@functools.lru_cache(maxsize=64)
def _predict_program(key_cfg: NNConfig, sample: bool, n_out: int = 2) -> Callable:
    net = make_network(key_cfg, n_out)

    def one(variables, key, X):
        rngs = {"dropout": key} if sample else None
        return net.apply(variables, X, train=False, sample=sample, rngs=rngs)

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None)))


def predict_members(
    cfg: NNConfig,
    variables: Variables,
    keys: jax.Array,
    X: jax.Array,
    *,
    sample: bool = False,
    n_out: int = 2,
) -> jax.Array:
    """Raw head outputs ``(K, m, n_out)`` at ``X`` ``(m, d)`` for K stacked variable sets.

    With ``sample`` dropout stays on (MC dropout) and ``keys`` ``(K,)`` draw the masks;
    otherwise the pass is deterministic and ``keys`` are unused.
    """
    return _predict_program(program_key(cfg), sample, n_out)(variables, keys, X)
