"""DEUP, direct epistemic uncertainty prediction (Lahlou et al. 2021), two-stage form.

Stage 1 trains a mean regressor ``m(x)`` (the shared backbone with a one-wide head) on the
fit split with squared error, early-stopped on the validation split V. On V
(paper, Appendix D.4, "DEUP BNN"):

    sigma2_ale = (1/|V|) sum_{i in V} (y_i - m(x_i))^2,
    r_i = clip(log(max((y_i - m(x_i))^2 - sigma2_ale, 0) + eps), r_min, r_max),

and stage 2 fits a second network ``g`` to ``r_i`` at the V inputs with squared error.
Prediction: mean ``m(x)``, aleatoric ``sigma2_ale`` (one constant), epistemic
``exp(g(x))``. Everything runs in standardised units and is mapped back.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import jax.numpy as jnp
import numpy as np
from pydantic import Field

from udora.methods.base import Knowledge, Prediction, check_x
from udora.methods.nn.config import NNConfig
from udora.methods.nn.method import NNMethod, Recipe
from udora.methods.nn.network import predict_members
from udora.methods.nn.step import SquaredError
from udora.methods.nn.trainer import train_members
from udora.methods.registry import register
from udora.methods.seeding import jax_keys

EXCESS_EPS = 1e-4
LOG_EXCESS_RANGE = (np.log(EXCESS_EPS), 5.0)


class DEUPConfig(NNConfig):
    """:class:`NNConfig` for the mean regressor plus the excess-error network's schedule.

    The excess network shares the architecture; ``learning_rate_excess``,
    ``weight_decay_excess``, ``n_epochs_excess`` (its budget) and ``batch_size_excess`` are
    its own.
    ``val_fraction`` must be positive: V estimates the noise and trains the second stage.
    """

    n_members: int = Field(default=1, ge=1, le=1)
    val_fraction: float = Field(default=0.2, gt=0.0, lt=1.0)
    learning_rate_excess: float = Field(default=1e-3, gt=0.0)
    weight_decay_excess: float = Field(default=1e-4, ge=0.0)
    n_epochs_excess: int = Field(default=100, ge=1)
    batch_size_excess: int = Field(default=64, ge=1)

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

    Config = DEUPConfig
    config: DEUPConfig
    recipe = Recipe(loss=lambda cfg: SquaredError())

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
        """The mean network, the global noise from V's residuals, the excess network on V."""
        Xs, ys = self.train_networks(X, y, seed=seed)
        X_val = jnp.asarray(Xs[self.val_idx_])
        resid = ys[self.val_idx_] - np.asarray(self.raw_outputs(X_val)[0, :, 0], np.float64)
        self.sigma2_ale_ = float(np.mean(resid**2))
        excess = np.maximum(resid**2 - self.sigma2_ale_, 0.0)
        self.log_excess_ = np.clip(np.log(excess + EXCESS_EPS), *LOG_EXCESS_RANGE)
        key = jax_keys(seed, "excess")["excess"]
        rows = jnp.arange(X_val.shape[0], dtype=jnp.int32)[None, :]
        self.excess_variables_, _, _ = train_members(
            self._excess_config(),
            X_val,
            jnp.asarray(self.log_excess_, jnp.float32),
            X_val[:0],
            jnp.zeros((0,), jnp.float32),
            rows,
            key[None],
            loss=SquaredError(),
        )
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Mean ``m(x)``, AU ``sigma2_ale``, EU ``exp(g(x))`` at ``X`` ``(m, d)``."""
        self._check_fitted()
        X = check_x(X, self.d_)
        Xs = jnp.asarray(self.scaler_.x(X), dtype=jnp.float32)
        mean = np.asarray(self.raw_outputs(Xs)[0, :, 0], np.float64)
        log_eu = predict_members(
            self._excess_config(), self.excess_variables_, self.predict_key_[None], Xs, n_out=1
        )
        epistemic = np.exp(np.asarray(log_eu[0, :, 0], np.float64))
        return Prediction(
            mean=self.scaler_.mean_back(mean),
            aleatoric=self.scaler_.var_back(np.full(mean.shape, self.sigma2_ale_)),
            epistemic=self.scaler_.var_back(epistemic),
        )
