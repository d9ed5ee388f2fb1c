"""The initial variables of K members: one program per search space.

:func:`fresh_variables` draws the members' initial :class:`ResidualMLP` variables in the
padded initialisation (:func:`methods.nn.padded.init`) at the search space's largest width
and blocks (:func:`~udora.methods.nn.padding.eval_padding`) and cuts them to the config's
sizes, so a sweep over widths compiles this program once; the training program
(:mod:`methods.nn.trainer`) takes the variables as an argument.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import numpy as np

from udora.methods.nn import padded as P
from udora.methods.nn.config import NNConfig
from udora.methods.nn.padded import Padding, Variables
from udora.methods.nn.padding import COMPILER_OPTIONS, dims_of, eval_padding, to_flax


@functools.lru_cache(maxsize=16)
def _init_program(pad: Padding, d: int) -> Callable:
    """Fresh padded variables of K members (keys ``(K,)``) at ``pad``'s sizes for inputs of
    width ``d``: :func:`methods.nn.padded.init` from the first of each member key's three
    splits (the trainer draws shuffles and dropout from the other two)."""

    def one(key, dims):
        return P.init(pad, dims, jax.random.split(key, 3)[0], d)

    return jax.jit(jax.vmap(one, in_axes=(0, None)), compiler_options=COMPILER_OPTIONS)


def fresh_variables(cfg: NNConfig, n_out: int, keys: jax.Array, d: int) -> Variables:
    """Initial :class:`ResidualMLP` variables of K members (``keys`` ``(K,)``), true shapes,
    host arrays with a leading K axis.

    Drawn in one program per search space (:func:`eval_padding`): row ``i`` of a layer
    draws at the padded width and keeps its first ``width`` entries, which equal a draw at
    ``width`` (:mod:`methods.nn.padded`), so the variables are those of a program at the
    config's own sizes."""
    pad = eval_padding(cfg, n_out)
    padded = _init_program(pad, d)(keys, dims_of(cfg))
    return to_flax(jax.tree.map(np.asarray, padded), cfg.width, cfg.blocks)
