"""Bayesian logistic regression with a Laplace posterior: the linear baseline of the
classification tasks, as ``blr`` is of the regression ones (MacKay 1992; Bishop 2006,
section 4.5).

On standardised inputs (with a column of ones when ``fit_intercept``) ``phi(x)`` (p,), a
softmax over all C classes with weights ``W`` (p, C) and prior ``vec W ~ N(0, alpha^-1 I)``
(for two classes the softmax's two columns are the logistic model with prior variance
``2 / alpha`` on their difference; one code path for every C):

    W* = argmin  -sum_i log softmax(phi_i^T W)_{y_i} + alpha ||W||^2 / 2,
    H  = sum_i (diag(p_i) - p_i p_i^T) kron phi_i phi_i^T + alpha I,      q(W) = N(W*, H^-1),

with ``W*`` found by scipy's ``trust-exact`` Newton method from the gradient and this
Hessian. The predictive is the mean of ``n_samples`` (K, default 200) softmax
probabilities of weights drawn from ``q`` at fit time (stream ``laplace samples`` of the
run seed): AU the members' expected entropy, EU their mutual information, and the
Brier-scale parts from the same samples (the samples themselves are not stored). A class
missing from the training sample keeps its column: its logits are pushed down by the
other classes' labels and held by the prior.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np
from pydantic import Field
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax

from udora.methods.base import Knowledge, MethodConfig, UQMethod, check_x, check_xy
from udora.methods.classification.prediction import ClassificationPrediction, check_labels
from udora.methods.registry import register
from udora.methods.seeding import numpy_rng
from udora.oracle.standardise import Standardiser


class LogisticConfig(MethodConfig):
    """Prior precision ``alpha`` (as ``blr``'s, same range), intercept, and K samples."""

    alpha: float = Field(default=1.0, gt=0.0)
    fit_intercept: bool = True
    n_samples: int = Field(default=200, ge=2)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        "alpha": {"distribution": "log_uniform_values", "min": 1e-4, "max": 10.0},
        "fit_intercept": {"values": [True, False]},
    }
    QUICK: ClassVar[dict[str, Any]] = {}  # a few Newton steps: already cheap


@register("blr_logistic")
class BayesianLogisticRegression(UQMethod):
    """Bayesian logistic (softmax) regression with a Laplace posterior; K weight samples."""

    family = "linear & kernel"
    kinds = ("classification",)
    libraries = ("scipy",)
    Config = LogisticConfig
    config: LogisticConfig

    def _features(self, Xs: np.ndarray) -> np.ndarray:
        if self.config.fit_intercept:
            return np.concatenate([Xs, np.ones((Xs.shape[0], 1))], axis=1)
        return Xs

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """The MAP weights, the Laplace covariance and K weight samples from ``X`` ``(n, d)``
        and class codes ``y`` ``(n,)``; C from ``knowledge.classes``."""
        if knowledge is None or not knowledge.n_classes:
            raise ValueError("blr_logistic needs the task's classes: pass knowledge.classes")
        X, y = check_xy(X, y)
        C = knowledge.n_classes
        labels = check_labels(y, C)
        self.scaler_ = Standardiser.fit(X, y)
        phi = self._features(self.scaler_.x(X))
        p = phi.shape[1]
        onehot = np.eye(C)[labels]
        alpha = self.config.alpha

        def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
            W = w.reshape(p, C)
            logits = phi @ W
            nll = -np.sum(log_softmax(logits, axis=1) * onehot)
            grad = phi.T @ (softmax(logits, axis=1) - onehot) + alpha * W
            return nll + 0.5 * alpha * float(w @ w), grad.ravel()

        def hessian(w: np.ndarray) -> np.ndarray:
            P = softmax(phi @ w.reshape(p, C), axis=1)  # (n, C)
            # sum_i (diag(p_i) - p_i p_i^T) kron phi_i phi_i^T, ordered as W.ravel(): (p, C)
            outer = phi[:, :, None] * phi[:, None, :]  # (n, p, p)
            cov = np.einsum("ic,cd->icd", P, np.eye(C)) - P[:, :, None] * P[:, None, :]
            H = np.einsum("iab,icd->acbd", outer, cov).reshape(p * C, p * C)
            return H + alpha * np.eye(p * C)

        found = minimize(objective, np.zeros(p * C), jac=True, hess=hessian, method="trust-exact")
        if not found.success:
            raise RuntimeError(f"blr_logistic: the MAP search did not converge: {found.message}")
        chol = np.linalg.cholesky(hessian(found.x))  # H = L L^T, so W = W* + L^-T z
        z = numpy_rng(seed, "laplace samples").standard_normal((p * C, self.config.n_samples))
        draws = found.x[:, None] + np.linalg.solve(chol.T, z)
        self.weights_ = draws.T.reshape(self.config.n_samples, p, C)
        self.map_ = found.x.reshape(p, C)
        self.newton_steps_ = int(found.nit)
        self.d_ = X.shape[1]
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> ClassificationPrediction:
        """The mean of the K samples' probabilities at ``X`` ``(m, d)``, their expected
        entropy (AU) and mutual information (EU)."""
        self._check_fitted()
        phi = self._features(self.scaler_.x(check_x(X, self.d_)))
        members = softmax(np.einsum("mp,kpc->kmc", phi, self.weights_), axis=-1)
        return ClassificationPrediction.from_members(members, keep_members=False)

    def diagnostics(self) -> dict[str, float]:
        """The Newton iterations of the MAP search."""
        return {"newton_steps": float(getattr(self, "newton_steps_", 0))}
