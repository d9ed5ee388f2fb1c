"""The backbone as a network of K stacked variable sets, and its batched forward pass.

:func:`make_network` builds the configured residual MLP (flax) with an ``n_out``-wide
head; its variables are what the trainer returns and the methods keep.
:func:`predict_members` evaluates K variable sets (a leading K axis on every leaf) at the
same inputs in one jitted, vmapped program, deterministic or with MC dropout. It runs the
padded network (:mod:`methods.nn.padded`) at the search space's largest width and blocks
(:func:`methods.nn.padding.eval_padding`), so one compiled program serves a whole sweep.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from udora.methods.nn import padded as P
from udora.methods.nn.backbone import ResidualMLP
from udora.methods.nn.config import NNConfig
from udora.methods.nn.padded import Padding
from udora.methods.nn.padding import COMPILER_OPTIONS, dims_of, eval_padding, from_flax

Variables = dict[str, Any]


def make_network(cfg: NNConfig, n_out: int = 2) -> ResidualMLP:
    """The backbone with an ``n_out``-wide linear head (2: Gaussian), as configured."""
    return ResidualMLP(cfg.width, cfg.blocks, cfg.activation, cfg.norm, cfg.dropout, n_out=n_out)


@functools.lru_cache(maxsize=64)
def _predict_program(pad: Padding, sample: bool, features: bool = False) -> Callable:
    def one(variables, key, X, dims):
        positions = jnp.arange(X.shape[0])
        return P.apply(
            pad,
            dims,
            variables,
            X,
            train=False,
            sample=sample,
            features=features,
            key=key,
            positions=positions,
        )[0]

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, None)), compiler_options=COMPILER_OPTIONS)


def padded_apply(
    cfg: NNConfig,
    variables: Variables,
    keys: jax.Array,
    X: jax.Array,
    *,
    sample: bool = False,
    features: bool = False,
    n_out: int = 2,
) -> jax.Array:
    """Outputs ``(K, m, n_out)`` (``features``: ``(K, m, width)``) of K stacked
    :class:`ResidualMLP` variable sets at ``X`` ``(m, d)``, in a padded program
    (:func:`udora.methods.nn.padding.eval_padding`): one compiled program serves every
    width, number of blocks and dropout rate of the search space."""
    pad = eval_padding(cfg, n_out)
    padded = from_flax(pad, jax.tree.map(np.asarray, variables), cfg.width, cfg.blocks)
    out = _predict_program(pad, sample, features)(padded, keys, X, dims_of(cfg))
    return out[..., : cfg.width] if features else out


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
    return padded_apply(cfg, variables, keys, X, sample=sample, n_out=n_out)
