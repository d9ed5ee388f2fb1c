"""Bayesian linear regression, conjugate and closed form (MacKay 1992; paper, Appendix D.1).

On standardised inputs (with a column of ones when ``fit_intercept``) ``phi(x)`` and
standardised targets, with prior ``w ~ N(0, alpha^-1 I)`` and noise ``N(0, sigma^2)``,
``beta = sigma^-2``:

    S_N = (alpha I + beta Phi^T Phi)^-1,      m_N = beta S_N Phi^T y,
    mu(x) = phi(x)^T m_N,   epistemic(x) = phi(x)^T S_N phi(x),   aleatoric = sigma^2,

all mapped back to original target units (variances times ``y_sd^2``). Computed in
float64 numpy with a Cholesky factor of ``S_N^-1``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np
from pydantic import Field

from udora.methods.base import Knowledge, MethodConfig, Prediction, UQMethod, check_x, check_xy
from udora.methods.joint import over_batches
from udora.methods.registry import register
from udora.oracle.standardise import Standardiser


class BLRConfig(MethodConfig):
    """Prior precision ``alpha``, noise std ``sigma`` (standardised target units), intercept.

    The paper gives only the ranges; alpha = 1 and sigma = 0.5 are our defaults.
    """

    alpha: float = Field(default=1.0, gt=0.0)
    sigma: float = Field(default=0.5, gt=0.0)
    fit_intercept: bool = True

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        "alpha": {"distribution": "log_uniform_values", "min": 1e-4, "max": 10.0},
        "sigma": {"distribution": "log_uniform_values", "min": 1e-2, "max": 2.0},
        "fit_intercept": {"values": [True, False]},
    }
    QUICK: ClassVar[dict[str, Any]] = {}  # closed form: already cheap


@register("blr")
class BayesianLinearRegression(UQMethod):
    """Conjugate Bayesian linear regression with fixed noise (closed form)."""

    family = "linear & kernel"
    not_for = (
        (
            "classification",
            "a conjugate Gaussian model; blr_logistic is its twin",
        ),
    )
    aleatoric = "constant"
    libraries = ("numpy",)
    Config = BLRConfig
    config: BLRConfig

    def _features(self, Xs: np.ndarray) -> np.ndarray:
        """``(m, d)`` standardised inputs -> design rows ``(m, p)``, p = d (+1 intercept)."""
        if self.config.fit_intercept:
            return np.concatenate([Xs, np.ones((Xs.shape[0], 1))], axis=1)
        return Xs

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Posterior ``N(m_N, S_N)`` from ``X`` ``(n, d)``, ``y`` ``(n,)``; ``seed`` is unused."""
        del seed  # closed form: nothing random
        X, y = check_xy(X, y)
        self.scaler_ = Standardiser.fit(X, y)
        phi = self._features(self.scaler_.x(X))
        beta = self.config.sigma**-2
        precision = self.config.alpha * np.eye(phi.shape[1]) + beta * phi.T @ phi
        self.chol_ = np.linalg.cholesky(precision)  # S_N^-1 = C C^T
        rhs = beta * phi.T @ self.scaler_.y(y)
        self.m_N_ = _cho_solve(self.chol_, rhs)
        self.d_ = X.shape[1]
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Predictive at ``X`` ``(m, d)``: mean, aleatoric ``sigma^2``, EU ``phi^T S_N phi``."""
        self._check_fitted()
        phi = self._features(self.scaler_.x(check_x(X, self.d_)))
        half = np.linalg.solve(self.chol_, phi.T)  # (p, m): C^-1 phi, so |.|^2 = phi^T S_N phi
        epistemic = np.sum(half**2, axis=0)
        return Prediction(
            mean=self.scaler_.mean_back(phi @ self.m_N_),
            aleatoric=self.scaler_.var_back(np.full(phi.shape[0], self.config.sigma**2)),
            epistemic=self.scaler_.var_back(epistemic),
        )

    def predict_joint(self, X: np.ndarray) -> np.ndarray:
        """Epistemic covariance ``phi(x)^T S_N phi(x')`` over batches ``X`` (B, tau, d):
        (B, tau, tau), original units."""
        self._check_fitted()

        def covariance(U: np.ndarray) -> np.ndarray:
            half = np.linalg.solve(
                self.chol_, self._features(self.scaler_.x(check_x(U, self.d_))).T
            )
            return self.scaler_.var_back(half.T @ half)

        return over_batches(X, covariance)


def _cho_solve(chol: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(C C^T)^-1 b`` for a lower-triangular ``C`` ``(p, p)`` and ``b`` ``(p,)``."""
    return np.linalg.solve(chol.T, np.linalg.solve(chol, b))
