"""The head as a linear model in its weights, for last-layer posteriors.

With the backbone and the variance head fixed at their MAP values, the predictive mean is
linear in the mean-head weights ``w = (w_1..w_H, b)`` (``P = H + 1``):

    standard head:  mu(x) = phi(x)^T w,                 phi(x) = (h_L(x), 1),
    natural head:   mu(x) = v(x) (h_L(x), 1)^T w,       v(x) = the MAP variance,

since the natural mean is ``eta_1 v``. :func:`design` returns ``Phi`` with rows ``phi(x)``,
so ``mu = Phi w`` in both cases. The variance head ``v(x)`` stays at its MAP value.

A softmax head over C classes (classification) is linear in all of its weights: the
logits are ``f(x) = W^T phi(x)`` with ``phi(x) = (h_L(x), 1)`` and ``W`` ``(P, C)`` the head's
kernel with its bias as the last row (:func:`design_logits`, :func:`head_matrix`); a
sampled head ``W_k`` gives member probabilities ``softmax(W_k^T phi(x))``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from udora.methods.base import Prediction, check_x
from udora.methods.classification.prediction import (
    ClassificationPrediction,
    softmax_probabilities,
)
from udora.methods.combine import combine_standardised
from udora.methods.nn import padded as P
from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import mean_variance
from udora.methods.nn.method import NNMethod, Recipe
from udora.methods.nn.network import Variables
from udora.methods.nn.padded import Padding
from udora.methods.nn.padding import COMPILER_OPTIONS, dims_of, eval_padding, from_flax


def head_name(cfg: NNConfig) -> str:
    """flax name of the linear head: the last of the ``2 L + 2`` Dense layers."""
    return f"Dense_{2 * cfg.blocks + 1}"


def head_weights(cfg: NNConfig, variables: Variables) -> jax.Array:
    """MAP mean-head weights ``w`` ``(P,)``: the first head column, then its bias."""
    head = variables["params"][head_name(cfg)]
    return jnp.concatenate([head["kernel"][:, 0], head["bias"][:1]])


def head_matrix(cfg: NNConfig, variables: Variables) -> jax.Array:
    """MAP softmax-head weights ``W`` ``(P, C)``: the head's kernel, then its bias row."""
    head = variables["params"][head_name(cfg)]
    return jnp.concatenate([head["kernel"], head["bias"][None, :]], axis=0)


@functools.lru_cache(maxsize=32)
def _design_program(pad: Padding, head: str | None) -> Callable:
    def design_fn(variables, X, dims):
        h = P.apply(pad, dims, variables, X, train=False, features=True)[0]
        raw = P.apply(pad, dims, variables, X, train=False)[0]
        h = jnp.where(jnp.arange(h.shape[1]) < dims.width, h, 0.0)
        phi = jnp.concatenate([h, jnp.ones((h.shape[0], 1), h.dtype)], axis=1)
        if head is None:  # a softmax head: the logits themselves
            return phi, raw
        mean, var = mean_variance(raw, head)
        if head == "natural":
            phi = phi * var[:, None]
        return phi, mean, var

    return jax.jit(design_fn, compiler_options=COMPILER_OPTIONS)


def _run_design(
    cfg: NNConfig, variables: Variables, X: jax.Array, n_out: int, head: str | None
) -> tuple[jax.Array, ...]:
    """The design program's outputs, ``Phi`` cut to the real units and the constant."""
    pad = eval_padding(cfg, n_out)
    padded = from_flax(pad, jax.tree.map(np.asarray, variables), cfg.width, cfg.blocks)
    phi, *rest = _design_program(pad, head)(padded, X, dims_of(cfg))
    if pad.width != cfg.width:
        phi = phi[:, np.r_[np.arange(cfg.width), pad.width]]  # the real units, the constant
    return (phi, *rest)


def design(
    cfg: NNConfig, variables: Variables, X: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``Phi`` ``(m, P)``, MAP mean ``(m,)`` and MAP variance ``(m,)`` at ``X`` ``(m, d)``.

    ``variables`` belong to one network (no member axis); ``Phi @ head_weights = mean``.
    Runs in a padded program (one per search space, :func:`eval_padding`).
    """
    phi, mean, var = _run_design(cfg, variables, X, 2, cfg.head)
    return phi, mean, var


def design_logits(
    cfg: NNConfig, variables: Variables, X: jax.Array, n_classes: int
) -> tuple[jax.Array, jax.Array]:
    """``Phi`` ``(m, P)`` and the MAP logits ``(m, C)`` of a softmax head at ``X`` ``(m, d)``;
    ``Phi @ head_matrix = logits``."""
    phi, logits = _run_design(cfg, variables, X, n_classes, None)
    return phi, logits


def gaussian_nll(y: jax.Array, mean: jax.Array, var: jax.Array) -> jax.Array:
    """Mean Gaussian negative log density (with ``1/2 log 2 pi``) of ``y`` ``(n,)``."""
    return jnp.mean(0.5 * (jnp.log(2.0 * jnp.pi * var) + (y - mean) ** 2 / var))


def grid_argmin(
    objective: Callable[[float], float], log_min: float, log_max: float, size: int
) -> float:
    """The point of ``logspace(log_min, log_max, size)`` with the smallest ``objective``
    (NaN values skipped)."""
    grid = np.logspace(log_min, log_max, size)
    return float(grid[int(np.nanargmin([float(objective(g)) for g in grid]))])


class SampledHeadsMethod(NNMethod):
    """One MAP network whose mean head is replaced, at prediction, by K sampled weights.

    Subclasses fit ``head_samples_`` ``(K, P)`` in their ``fit`` after
    :meth:`NNMethod.train_networks`; the variance head and the backbone stay at their MAP
    values, so member k predicts ``N(Phi w_k, v)``. On a classification task the samples
    are softmax heads ``(K, P, C)`` and member k predicts ``softmax(W_k^T phi(x))``.
    """

    recipe = Recipe(one_network=True)

    def map_variables(self) -> Variables:
        """The MAP network's variables (the member axis dropped)."""
        return jax.tree.map(lambda a: a[0], self.variables_)

    def predict(self, X: np.ndarray) -> Prediction | ClassificationPrediction:
        """Combined K sampled heads at ``X`` ``(m, d)``; ``member_means`` is ``(K, m)``
        (classification: ``member_probs`` ``(K, m, C)``)."""
        self._check_fitted()
        X = check_x(X, self.d_)
        Xs = jnp.asarray(self.scaler_.x(X), dtype=jnp.float32)
        if self.n_classes_:
            phi, _ = design_logits(self.config, self.map_variables(), Xs, self.n_classes_)
            logits = np.einsum("mp,kpc->kmc", np.asarray(phi, np.float64), self.head_samples_)
            return ClassificationPrediction.from_members(softmax_probabilities(logits))
        phi, _, var = design(self.config, self.map_variables(), Xs)
        means = self.head_samples_ @ np.asarray(phi, np.float64).T
        variances = np.broadcast_to(np.asarray(var, np.float64)[None, :], means.shape)
        return combine_standardised(means, variances, self.scaler_)
