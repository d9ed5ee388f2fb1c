"""k-nearest-neighbour regression with a local noise estimate and a distance-aware EU.

With N_k(x) the k nearest training points of x (standardised inputs), r(x) their mean
distance and a(x) the variance of their targets:
mu(x) = mean of y over N_k(x), aleatoric = a(x), epistemic = a(x) / k * (1 + r(x)^2).
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np
from pydantic import Field

from udora.methods.base import Knowledge, MethodConfig, Prediction, UQMethod, check_x, check_xy
from udora.oracle.standardise import Standardiser


class KNNConfig(MethodConfig):
    """Number of neighbours k."""

    k: int = Field(default=10, ge=2)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        "k": {"distribution": "int_uniform", "min": 3, "max": 50},
    }
    QUICK: ClassVar[dict[str, Any]] = {}  # no training budget to cut


class KNN(UQMethod):
    """k-nearest neighbours: local mean, local target variance, distance-inflated EU."""

    Config = KNNConfig
    config: KNNConfig

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Store standardised ``X`` ``(n, d)`` and ``y`` ``(n,)``; nothing random."""
        del seed, knowledge  # deterministic, and nothing about the task is needed
        X, y = check_xy(X, y)
        self.scaler_ = Standardiser.fit(X, y)
        self.Z_ = self.scaler_.x(X)
        self.t_ = self.scaler_.y(y)
        self.d_ = X.shape[1]
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Predictive at ``X`` ``(m, d)``."""
        self._check_fitted()
        Z = self.scaler_.x(check_x(X, self.d_))
        k = min(self.config.k, self.Z_.shape[0])
        dist = np.sqrt(np.sum((Z[:, None, :] - self.Z_[None, :, :]) ** 2, axis=-1))  # (m, n)
        nearest = np.argsort(dist, axis=1)[:, :k]  # (m, k)
        targets = self.t_[nearest]  # (m, k)
        radius = np.take_along_axis(dist, nearest, axis=1).mean(axis=1)  # (m,)
        aleatoric = targets.var(axis=1)
        return Prediction(
            mean=self.scaler_.mean_back(targets.mean(axis=1)),
            aleatoric=self.scaler_.var_back(aleatoric),
            epistemic=self.scaler_.var_back(aleatoric / k * (1.0 + radius**2)),
        )
