"""Helpers for the method tests: a small synthetic task, a hand-made GP prior, a dense GP."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from udora.oracle.prior import TaskKnowledge
from udora.oracle.standardise import Standardiser


def smooth_f(X: np.ndarray) -> np.ndarray:
    """A smooth target on ``(m, 2)`` inputs with a strong linear part: ``(m,)``."""
    return 2.0 * X[:, 0] - X[:, 1] + 0.5 * np.sin(3.0 * X[:, 0])


@dataclass(frozen=True)
class HandPrior:
    """A prior with what ``gp_oracle`` reads of ``oracle.prior.GPPrior``, built by hand.

    Its noise model is not the oracle's rank model but a logistic one, so the reference
    method is checked against a noise function it did not come with.
    """

    kernel: tuple[dict, ...]
    mean_value: float
    standardiser: Standardiser
    noise_scale: float = 0.1

    def noise_std(self, X: np.ndarray) -> np.ndarray:
        """Heteroscedastic sigma_eps (original units): grows with the first input."""
        s = self.standardiser
        z = (X[:, 0] - s.x_mean[0]) / s.x_sd[0]
        return s.y_sd * self.noise_scale * (1.0 + 0.5 / (1.0 + np.exp(-z)))

    def knowledge(self, X: np.ndarray) -> TaskKnowledge:
        """Task knowledge for training inputs ``X`` ``(n, d)`` with this prior."""
        names = tuple(f"x{j}" for j in range(X.shape[1]))
        return TaskKnowledge(feature_names=names, d=X.shape[1], n=X.shape[0], prior=self)


@dataclass(frozen=True)
class Task:
    X: np.ndarray  # (n, 2) training inputs in [-1, 1]^2
    y: np.ndarray  # (n,)
    X_near: np.ndarray  # (m, 2) test inputs from the training distribution
    f_near: np.ndarray  # (m,)
    X_far: np.ndarray  # (m, 2) test inputs in [3, 5]^2, far outside the data
    prior: HandPrior


def make_task(n: int = 200, seed: int = 0) -> Task:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 2))
    y = smooth_f(X) + 0.1 * rng.standard_normal(n)
    X_near = rng.uniform(-1.0, 1.0, size=(300, 2))
    X_far = rng.uniform(3.0, 5.0, size=(300, 2))
    prior = HandPrior(
        kernel=(
            {"type": "rbf", "variance": 0.5, "lengthscale": [0.8, 1.2]},
            {"type": "linear", "variance": 1.0},
        ),
        mean_value=0.0,
        standardiser=Standardiser(x_mean=np.zeros(2), x_sd=np.full(2, 0.58), y_mean=0.0, y_sd=1.3),
        noise_scale=0.07,
    )
    return Task(X, y, X_near, smooth_f(X_near), X_far, prior)


def rbf_linear_gram(prior: HandPrior, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Dense ``(a, b)`` Gram of the hand prior's rbf + linear kernel (standardised inputs)."""
    rbf, lin = prior.kernel
    ls = np.asarray(rbf["lengthscale"])
    diff = (A[:, None, :] - B[None, :, :]) / ls
    return rbf["variance"] * np.exp(-0.5 * np.sum(diff**2, axis=-1)) + lin["variance"] * A @ B.T


def dense_gp_posterior(prior: HandPrior, X: np.ndarray, y: np.ndarray, X_test: np.ndarray):
    """Textbook conditioning in float64 numpy: mean ``(m,)`` and latent variance ``(m,)``.

    ``A = K_SS + diag(s^2)``, ``m_S = m + K_xS A^-1 (y - m)``, ``s2_f = k(x,x) - K_xS A^-1 K_Sx``,
    in standardised units, then mapped to original units.
    """
    x_mean, x_sd = prior.standardiser.x_mean, prior.standardiser.x_sd
    y_mean, y_sd = prior.standardiser.y_mean, prior.standardiser.y_sd
    Z = (X - x_mean) / x_sd
    Zt = (X_test - x_mean) / x_sd
    s = prior.noise_std(X) / y_sd
    A = rbf_linear_gram(prior, Z, Z) + np.diag(s**2)
    Kxs = rbf_linear_gram(prior, Zt, Z)
    resid = (y - y_mean) / y_sd - prior.mean_value
    mean = prior.mean_value + Kxs @ np.linalg.solve(A, resid)
    prior_var = np.diag(rbf_linear_gram(prior, Zt, Zt))
    var = prior_var - np.sum(Kxs * np.linalg.solve(A, Kxs.T).T, axis=1)
    return y_mean + y_sd * mean, y_sd**2 * var
