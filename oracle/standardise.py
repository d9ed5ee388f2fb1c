"""One standardisation: z-scored inputs and target, and the way back to original units.

With feature means and sds ``x_mean``, ``x_sd`` (d,) and target mean and sd ``y_mean``,
``y_sd`` of one reference table:

    z = (x - x_mean) / x_sd,      t = (y - y_mean) / y_sd,
    mu = y_mean + y_sd * mu_t,    v = y_sd^2 * v_t       (means and variances back).

The same class serves three places (docs/design.md, "One standardisation"):

- the **kernel fit and the oracle** use the statistics of the preset's whole real table
  (:meth:`Standardiser.fit` on every row the data source returned), so a fitted
  lengthscale is applied in exactly the units it was fitted in;
- the **reference methods** receive that object with the task's prior;
- every **other method** fits its own on its training sample (it must not see the
  table's statistics).

A constant feature gets sd 1 (it stays 0 after centring); a constant target gets sd 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Standardiser:
    """Feature means/sds ``(d,)`` and target mean/sd (floats) of one reference table."""

    x_mean: np.ndarray
    x_sd: np.ndarray
    y_mean: float
    y_sd: float

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray) -> Standardiser:
        """From ``X`` ``(n, d)`` and ``y`` ``(n,)``: column means and (population) sds."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        x_sd = X.std(axis=0)
        y_sd = float(y.std())
        return cls(
            x_mean=X.mean(axis=0),
            x_sd=np.where(x_sd > 0, x_sd, 1.0),
            y_mean=float(y.mean()),
            y_sd=y_sd if y_sd > 0 else 1.0,
        )

    @property
    def d(self) -> int:
        return int(self.x_mean.shape[0])

    def x(self, X: np.ndarray) -> np.ndarray:
        """Standardised inputs ``(m, d)`` of original-unit ``X`` ``(m, d)``."""
        return (X - self.x_mean[None, :]) / self.x_sd[None, :]

    def y(self, y: np.ndarray) -> np.ndarray:
        """Standardised targets ``(n,)`` of original-unit ``y`` ``(n,)``."""
        return (y - self.y_mean) / self.y_sd

    def mean_back(self, mean: np.ndarray) -> np.ndarray:
        """Means or latent values (any shape) from standardised to original units."""
        return self.y_mean + self.y_sd * np.asarray(mean, dtype=np.float64)

    def var_back(self, var: np.ndarray) -> np.ndarray:
        """Variances (any shape) from standardised to original target units."""
        return self.y_sd**2 * np.asarray(var, dtype=np.float64)

    def to_dict(self) -> dict[str, list[float] | float]:
        """Plain values for JSON (``x_mean``, ``x_sd`` as lists)."""
        return {
            "x_mean": self.x_mean.tolist(),
            "x_sd": self.x_sd.tolist(),
            "y_mean": self.y_mean,
            "y_sd": self.y_sd,
        }
