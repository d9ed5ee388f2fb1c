"""The small synthetic task of the method contract (:mod:`udora.methods.contract`).

200 noisy points of a smooth function on [-1, 1]^2, 300 test points from the same
distribution and 300 in [3, 5]^2, far from the data; a hand-made GP prior stands in for
the oracle's for the reference methods that declare ``uses_task_prior``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from udora.oracle.prior import TaskKnowledge
from udora.oracle.standardise import Standardiser

__all__ = ["HandPrior", "Task", "make_task", "smooth_f"]


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
    """A regression task with the noise-free function at the near test points."""

    X: np.ndarray  # (n, 2) training inputs in [-1, 1]^2
    y: np.ndarray  # (n,)
    X_near: np.ndarray  # (m, 2) test inputs from the training distribution
    f_near: np.ndarray  # (m,)
    X_far: np.ndarray  # (m, 2) test inputs in [3, 5]^2, far outside the data
    prior: HandPrior


def make_task(n: int = 200, seed: int = 0) -> Task:
    """``n`` training points ``(n, 2)`` with noise sd 0.1, 300 near and 300 far test points."""
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
