"""The losses a training step combines (the step itself: :mod:`methods.nn.trainer`).

One step on a mini-batch ``(x, y)`` ``(B, d)``, ``(B,)`` with step key ``key`` minimises

    L(theta) = (1/B) sum_b l(f_theta(x_b), y_b) + sum_j R_j(f_theta, key, args_j),

where ``l`` is a per-point loss (raw outputs ``(B, n_out)`` and targets ``(B,)`` to ``(B,)``,
with an ``n_out`` attribute) and each loss term ``R_j(f, key, args) -> scalar`` sees the
network's raw outputs in eval mode at any inputs (the function-space prior of FSP-Laplace,
:mod:`methods.fsp_laplace`); ``args_j`` are its data-dependent arrays. The optimiser's
update is added to the parameters (``optax`` style). Losses and terms are hashable so that
compiled programs can be cached on them (:mod:`methods.nn.trainer`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import jax
import jax.numpy as jnp

from udora.methods.nn.heads import nll


class PointLoss(Protocol):
    """A hashable per-point loss ``(raw (B, n_out), y (B,)) -> (B,)``."""

    n_out: int

    def __call__(self, raw: jax.Array, y: jax.Array) -> jax.Array: ...


TRACED: dict[str, Any] = {"traced": True}
"""``dataclasses.field(metadata=TRACED)`` marks a float field of a loss that the compiled
program takes as an argument (a swept weight such as EDL's ``evi_reg``), so one program
serves every value (:func:`split_traced`)."""


def split_traced(loss: Any) -> tuple[Any, dict[str, jax.Array]]:
    """``(loss with its traced fields set to None, {field: float32 scalar})``: the first is
    the hashable key of the compiled program, the second its argument; inside the program
    ``dataclasses.replace(key, **args)`` is the loss again."""
    if not dataclasses.is_dataclass(loss):
        return loss, {}
    names = [f.name for f in dataclasses.fields(loss) if f.metadata.get("traced")]
    args = {n: jnp.asarray(getattr(loss, n), jnp.float32) for n in names}
    return (dataclasses.replace(loss, **dict.fromkeys(names)) if names else loss), args


LossTerm = Callable[[Callable[[jax.Array], jax.Array], jax.Array, Any], jax.Array]


@dataclass(frozen=True)
class GaussianNLL:
    """Per-point Gaussian NLL ``(B,)`` of raw outputs ``(B, 2)`` under ``head``."""

    head: str
    n_out: ClassVar[int] = 2

    def __call__(self, raw: jax.Array, y: jax.Array) -> jax.Array:
        return nll(raw, y, self.head)


@dataclass(frozen=True)
class SquaredError:
    """Per-point ``(y - out)^2`` of raw outputs ``(B, 1)``."""

    n_out: ClassVar[int] = 1

    def __call__(self, raw: jax.Array, y: jax.Array) -> jax.Array:
        return (y - raw[..., 0]) ** 2


@dataclass(frozen=True)
class SoftmaxCrossEntropy:
    """Per-point ``-log softmax(raw)_y`` ``(B,)`` of raw outputs ``(B, C)`` at class codes
    ``y`` ``(B,)`` (0..C-1, carried as floats like every target): the classification head
    of the neural-network methods (docs/design.md, "Classification: methods")."""

    n_out: int

    def __call__(self, raw: jax.Array, y: jax.Array) -> jax.Array:
        log_p = jax.nn.log_softmax(raw, axis=-1)
        return -jnp.take_along_axis(log_p, y.astype(jnp.int32)[..., None], axis=-1)[..., 0]
