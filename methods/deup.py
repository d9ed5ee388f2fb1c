"""DEUP, direct epistemic uncertainty prediction (Lahlou et al. 2021), two-stage form.

Stage 1 trains a mean regressor ``m(x)`` (the shared backbone with a one-wide head) on the
fit split with squared error (``n_epochs`` epochs; early-stopped on the validation split V
only with ``early_stopping``). V (``val_fraction``, always held out) is for the second
stage: on V (paper, Appendix D.4, "DEUP BNN"):

    sigma2_ale = (1/|V|) sum_{i in V} (y_i - m(x_i))^2,
    r_i = clip(log(max((y_i - m(x_i))^2 - sigma2_ale, 0) + eps), r_min, r_max),

and stage 2 fits a second network ``g`` to ``r_i`` at the V inputs with squared error.
Prediction: mean ``m(x)``, aleatoric ``sigma2_ale`` (one constant), epistemic
``exp(g(x))``. Everything runs in standardised units and is mapped back.

Bias of this recipe (kept as ``deup``, the paper's method). Write ``e = max((y -
m(x))^2 - sigma2_ale, 0)`` for the excess error at x. The squared-error fit of g to
``log(e + eps)`` (ignoring the clip) has the minimiser

    g*(x) = E[log(e + eps) | x],   so   exp(g*(x)) = exp E[log(e + eps) | x]
                                                  <= E[e + eps | x]          (Jensen),

the conditional geometric mean, not the mean the EU should be. The gap is large here:
e is a clipped, squared, roughly Gaussian residual, so a good share of the targets are 0
and enter as ``log(eps)`` (``eps = 1e-4``: ``log eps = -9.2``), which drags the geometric
mean towards eps; and even with no clipping, for ``e = v z^2`` with ``z ~ N(0, 1)``,
``exp E[log e] = v exp(E log z^2) = v exp(-gamma_E - log 2) ~ 0.28 v``. The factor depends on
the unstated floor eps and on the shape of e's distribution, so exp(g) is biased low by an
x-dependent, eps-dependent factor (EU/AU ratios of ~0.003 on synthetic tasks).
``deup_unbiased`` (:class:`DEUPUnbiased`) fits ``log E[e | x]`` instead.

Classification (docs/design.md, "Classification: methods"): the same recipe with the
softmax head and the log loss in place of the Gaussian mean and the squared error.
Stage 1 is a softmax classifier ``q(x)`` trained by cross-entropy on the fit split; the
aleatoric estimate is its predictive entropy ``H(q(x))`` (per point, where regression
has one noise variance). On V the excess error is the out-of-fold log loss over that
aleatoric estimate, kept positive as the squared residual's excess is,

    e_i = max(-log max(q(x_i)_{y_i}, eps) - H(q(x_i)), 0),      eps = 1e-12 (the targets'
                                                                 floor),

and stage 2 and the epistemic estimate ``exp(g(x))`` are the regression ones (the clipped
log targets and their Jensen bias; ``deup_unbiased`` is regression only, its
``not_for`` says why).
Under the true class probabilities ``p(x)``, ``E[l | x] - H(q(x)) = KL(p || q) + H(p) -
H(q)`` (the excess risk over the Bayes log loss plus the error of the aleatoric
estimate); ``E[e | x]`` is the mean of its positive part, at least the positive part of
that mean. The probabilities are ``q``; there are no members, so the Brier-side metrics
are empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Self

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from udora.methods.base import Knowledge, Prediction, check_x
from udora.methods.classification.prediction import (
    ClassificationPrediction,
    softmax_probabilities,
)
from udora.methods.nn.config import NNConfig
from udora.methods.nn.method import NNMethod, Recipe
from udora.methods.nn.network import predict_members
from udora.methods.nn.step import PointLoss, SquaredError
from udora.methods.nn.trainer import train_members
from udora.methods.registry import register
from udora.methods.seeding import jax_keys
from udora.oracle.classification.targets import EPS, entropy

EXCESS_EPS = 1e-4
LOG_EXCESS_RANGE = (np.log(EXCESS_EPS), 5.0)


class DEUPConfig(NNConfig):
    """:class:`NNConfig` for the mean regressor plus the excess-error network's schedule.

    The excess network shares the architecture; ``learning_rate_excess``,
    ``weight_decay_excess``, ``n_epochs_excess`` (its budget) and ``batch_size_excess`` are
    its own.
    ``val_fraction`` must be positive: V estimates the noise and trains the second stage
    (and early-stops the mean network only with ``early_stopping``).
    """

    n_members: int = Field(default=1, ge=1, le=1)
    val_fraction: float = Field(default=0.2, gt=0.0, lt=1.0)
    learning_rate_excess: float = Field(default=1e-3, gt=0.0)
    weight_decay_excess: float = Field(default=1e-4, ge=0.0)
    n_epochs_excess: int = Field(default=100, ge=1)
    batch_size_excess: int = Field(default=64, ge=1)

    BATCH_FIELDS: ClassVar[tuple[str, ...]] = ("batch_size", "batch_size_excess")
    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        **NNConfig.SEARCH_SPACE,
        "learning_rate_excess": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-1},
        "weight_decay_excess": {"distribution": "log_uniform_values", "min": 1e-6, "max": 1e-2},
        "n_epochs_excess": {"distribution": "int_uniform", "min": 30, "max": 200},
        "batch_size_excess": {"values": [32, 64, 128, 256]},
    }
    QUICK: ClassVar[dict[str, Any]] = {"n_epochs": 30, "n_epochs_excess": 30}


@register("deup")
class DEUP(NNMethod):
    """DEUP: a mean network, a global noise variance, a network on the log excess error."""

    family = "NN"
    kinds = ("regression", "classification")
    aleatoric = {"regression": "constant", "classification": "per point"}  # noqa: RUF012
    Config = DEUPConfig
    config: DEUPConfig
    recipe = Recipe(loss=lambda cfg: SquaredError())
    excess_loss: ClassVar[PointLoss] = SquaredError()

    def holds_out_validation(self) -> bool:
        """Always: V estimates the noise and trains the excess network."""
        return True

    def excess_targets(self, excess: np.ndarray) -> np.ndarray:
        """``clip(log(excess + eps), r_min, r_max)``: the paper's log excess targets."""
        return np.clip(np.log(excess + EXCESS_EPS), *LOG_EXCESS_RANGE)

    def fit_excess(self, Xs: np.ndarray, excess: np.ndarray, *, seed: int) -> None:
        """Fit the excess network g on ``Xs`` ``(v, d)`` (standardised) and the excess errors
        ``excess`` ``(v,)`` through :meth:`excess_targets` and ``excess_loss``."""
        self.excess_targets_ = self.excess_targets(np.asarray(excess, np.float64))
        key = jax_keys(seed, "excess")["excess"]
        X_e = jnp.asarray(Xs, jnp.float32)
        rows = jnp.arange(X_e.shape[0], dtype=jnp.int32)[None, :]
        self.excess_variables_, _, _ = train_members(
            self._excess_config(),
            X_e,
            jnp.asarray(self.excess_targets_, jnp.float32),
            X_e[:0],
            jnp.zeros((0,), jnp.float32),
            rows,
            key[None],
            loss=self.excess_loss,
        )
        self.excess_key_ = key

    def excess_variance(self, Xs: np.ndarray | jax.Array) -> np.ndarray:
        """``exp(g(x))`` ``(m,)`` at standardised ``Xs`` ``(m, d)``."""
        g = predict_members(
            self._excess_config(),
            self.excess_variables_,
            self.excess_key_[None],
            jnp.asarray(Xs, jnp.float32),
            n_out=1,
        )
        return np.exp(np.asarray(g[0, :, 0], np.float64))

    def _excess_config(self) -> NNConfig:
        cfg = self.config
        return cfg.model_copy(
            update={
                "learning_rate": cfg.learning_rate_excess,
                "weight_decay": cfg.weight_decay_excess,
                "n_epochs": cfg.n_epochs_excess,
                "batch_size": cfg.batch_size_excess,
            }
        )

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """The mean network, the global noise from V's residuals, the excess network on V
        (classification: the classifier, the excess log loss on V, its network)."""
        n_classes = knowledge.n_classes if knowledge is not None else 0
        Xs, ys = self.train_networks(X, y, seed=seed, n_classes=n_classes)
        X_val = jnp.asarray(Xs[self.val_idx_])
        if n_classes:
            q = softmax_probabilities(self.raw_outputs(X_val)[0])
            at_y = q[np.arange(q.shape[0]), ys[self.val_idx_].astype(np.int64)]
            excess = np.maximum(-np.log(np.maximum(at_y, EPS)) - entropy(q), 0.0)
            self.fit_excess(Xs[self.val_idx_], excess, seed=seed)
            self.fitted_ = True
            return self
        resid = ys[self.val_idx_] - np.asarray(self.raw_outputs(X_val)[0, :, 0], np.float64)
        self.sigma2_ale_ = float(np.mean(resid**2))
        excess = np.maximum(resid**2 - self.sigma2_ale_, 0.0)
        self.fit_excess(Xs[self.val_idx_], excess, seed=seed)
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> Prediction | ClassificationPrediction:
        """Mean ``m(x)``, AU ``sigma2_ale``, EU ``exp(g(x))`` at ``X`` ``(m, d)``
        (classification: ``q(x)``, AU ``H(q(x))``, EU ``exp(g(x))``)."""
        self._check_fitted()
        X = check_x(X, self.d_)
        Xs = jnp.asarray(self.scaler_.x(X), dtype=jnp.float32)
        if self.n_classes_:
            q = softmax_probabilities(self.raw_outputs(Xs)[0])
            return ClassificationPrediction(
                prob=q, aleatoric=entropy(q), epistemic=self.excess_variance(Xs)
            )
        mean = np.asarray(self.raw_outputs(Xs)[0, :, 0], np.float64)
        epistemic = self.excess_variance(Xs)
        return Prediction(
            mean=self.scaler_.mean_back(mean),
            aleatoric=self.scaler_.var_back(np.full(mean.shape, self.sigma2_ale_)),
            epistemic=self.scaler_.var_back(epistemic),
        )


LOG_MEAN_RANGE = 30.0


@dataclass(frozen=True)
class PoissonLogMean:
    """Per-point ``exp(g) - e g`` of raw outputs ``g`` ``(B, 1)`` and targets ``e >= 0``.

    For each x its expectation ``exp(g) - E[e | x] g`` is convex in g with minimiser
    ``g = log E[e | x]`` (the Poisson / Gamma log-link deviance up to terms free of g).
    ``g`` is clipped to ``+-LOG_MEAN_RANGE`` inside exp to keep it finite.
    """

    n_out: ClassVar[int] = 1

    def __call__(self, raw: jax.Array, y: jax.Array) -> jax.Array:
        g = jnp.clip(raw[..., 0], -LOG_MEAN_RANGE, LOG_MEAN_RANGE)
        return jnp.exp(g) - y * g


@register("deup_unbiased")
class DEUPUnbiased(DEUP):
    """DEUP variant (not the paper's): exp of the excess network is the mean excess error.

    Same as ``deup`` except the second stage. Its targets are the excess errors themselves,
    ``e_i = max((y_i - m(x_i))^2 - sigma2_ale, 0)`` on V (no log, no floor eps, no clip), and
    g minimises the mean of ``exp(g(x_i)) - e_i g(x_i)`` (:class:`PoissonLogMean`), whose
    pointwise minimiser is ``g(x) = log E[e | x]``. So ``exp(g(x))`` estimates the expected
    excess squared error itself rather than its geometric mean (the Jensen bias of
    ``deup``, module doc). Configuration is :class:`DEUPConfig`.
    """

    family = "NN"
    kinds = ("regression",)
    not_for = (
        (
            "classification",
            "its log-link fit of the positive excess log loss does not grow away from the "
            "data (contract task: median EU 0.060 far, 0.084 near); deup is the "
            "classification form",
        ),
    )
    aleatoric = "constant"
    excess_loss: ClassVar[PointLoss] = PoissonLogMean()

    def excess_targets(self, excess: np.ndarray) -> np.ndarray:
        """The excess errors themselves, ``e >= 0``."""
        return np.maximum(excess, 0.0)
