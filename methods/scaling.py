"""Standardisation inside a method: z-score inputs and targets, map predictions back.

Methods fit in standardised units (``x~ = (x - x_mean) / x_sd``, ``y~ = (y - y_mu) / y_sd``)
and report in original units: ``mu = y_mu + y_sd * mu~`` and every variance
``v = y_sd^2 * v~``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Scaler:
    """Feature means/sds ``(d,)`` and target mean/sd (floats) of one training set."""

    x_mean: np.ndarray
    x_sd: np.ndarray
    y_mu: float
    y_sd: float

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray) -> Scaler:
        """From training data ``X`` ``(n, d)``, ``y`` ``(n,)``; constant columns get sd 1."""
        x_sd = X.std(axis=0)
        y_sd = float(y.std())
        return cls(
            x_mean=X.mean(axis=0),
            x_sd=np.where(x_sd > 0, x_sd, 1.0),
            y_mu=float(y.mean()),
            y_sd=y_sd if y_sd > 0 else 1.0,
        )

    def x(self, X: np.ndarray) -> np.ndarray:
        """Standardised inputs ``(m, d)``."""
        return (X - self.x_mean[None, :]) / self.x_sd[None, :]

    def y(self, y: np.ndarray) -> np.ndarray:
        """Standardised targets ``(n,)``."""
        return (y - self.y_mu) / self.y_sd

    def mean_back(self, mean: np.ndarray) -> np.ndarray:
        """Means (any shape) from standardised to original target units."""
        return self.y_mu + self.y_sd * np.asarray(mean, dtype=np.float64)

    def var_back(self, var: np.ndarray) -> np.ndarray:
        """Variances (any shape) from standardised to original target units."""
        return self.y_sd**2 * np.asarray(var, dtype=np.float64)
