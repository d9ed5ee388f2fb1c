"""CatBoost kernel gradient boosting: GP posterior samples, epistemic only (paper, App. D.3).

``catboost.sample_gaussian_process`` implements the sampler of Ustimenko, Beliakov and
Prokhorenkova (2023, Algorithm 4): gradient boosting with symmetric trees and randomised
split scores draws functions ``f_k``, k = 1..K, approximately from the posterior of a GP
with prior ``f ~ GP(0, sigma^2 K + delta^2 I)`` (K the kernel of the tree-structure
distribution). We report

    mean = (1/K) sum_k f_k(x),   epistemic = (1/K) sum_k (f_k(x) - mean)^2,   aleatoric = 0,

because the sampler gives function values only and no observation-noise estimate: this
method has no aleatoric uncertainty, and its total variance is its epistemic variance.
Original units when the target is standardised (``sigma`` and ``delta`` are then in
standardised units).
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np
from catboost import sample_gaussian_process
from pydantic import Field

from udora.methods.base import Knowledge, MethodConfig, Prediction, UQMethod, check_x, check_xy
from udora.methods.combine import combine_standardised
from udora.methods.registry import register
from udora.methods.seeding import numpy_rng
from udora.methods.trees import library_seeds, scratch_cwd, target_scaler


class CatBoostKGBConfig(MethodConfig):
    """Sampler settings (``n_members`` is the number of samples K) and target scaling.

    The paper gives ranges only; our defaults are CatBoost's own where they lie inside
    them (900 posterior and 100 prior iterations, rate 0.1, depth 6, sigma 0.1,
    random_strength 0.1, eps 1e-4); CatBoost's default ``delta = 0`` lies outside the
    paper's range, so we take 0.1. ``n_estimators`` is CatBoost's ``posterior_iterations``
    and ``n_prior_estimators`` its ``prior_iterations`` (the project's one name for a
    boosting budget, docs/adding_a_method.md). The quick budget (``QUICK``, what
    ``udora bench --quick`` applies) keeps 100 posterior trees and 5 samples and leaves the
    100 prior trees as they are. ``prediction_thread_count`` sets CatBoost's threads for
    predicting only: the sampler does not expose its training threads (it uses all cores).
    """

    n_members: int = Field(default=10, ge=2)  # K = 1 would give EU = 0 everywhere
    n_estimators: int = Field(default=900, ge=1)
    n_prior_estimators: int = Field(default=100, ge=1)
    learning_rate: float = Field(default=0.1, gt=0.0, le=1.0)
    depth: int = Field(default=6, ge=1, le=16)
    sigma: float = Field(default=0.1, gt=0.0)
    delta: float = Field(default=0.1, ge=0.0)
    random_strength: float = Field(default=0.1, gt=0.0)
    eps: float = Field(default=1e-4, gt=0.0, le=1.0)
    standardize_y: bool = True
    prediction_thread_count: int = Field(default=1, ge=1)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        "n_estimators": {"distribution": "int_uniform", "min": 200, "max": 1000},
        "n_prior_estimators": {"distribution": "int_uniform", "min": 50, "max": 300},
        "learning_rate": {"distribution": "log_uniform_values", "min": 0.03, "max": 0.3},
        "depth": {"distribution": "int_uniform", "min": 4, "max": 8},
        "sigma": {"distribution": "log_uniform_values", "min": 0.05, "max": 0.5},
        "delta": {"distribution": "log_uniform_values", "min": 0.01, "max": 0.5},
        "random_strength": {"distribution": "log_uniform_values", "min": 0.05, "max": 1.0},
        "eps": {"distribution": "log_uniform_values", "min": 1e-5, "max": 1e-3},
        "n_members": {"distribution": "int_uniform", "min": 5, "max": 20},
        "standardize_y": {"values": [True, False]},
    }
    QUICK: ClassVar[dict[str, Any]] = {"n_estimators": 100, "n_members": 5}


@register("catboost_kgb")
class CatBoostKGB(UQMethod):
    """CatBoost KGB GP-posterior samples: EU = their variance; AU = 0 (no noise estimate)."""

    family = "trees"
    not_for = (
        (
            "classification",
            "CatBoost's KGB posterior samples are of an RMSE regression",
        ),
    )
    aleatoric = "constant"
    libraries = ("catboost",)
    Config = CatBoostKGBConfig
    config: CatBoostKGBConfig

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Draw K posterior function samples from ``X`` ``(n, d)``, ``y`` ``(n,)``."""
        X, y = check_xy(X, y)
        cfg = self.config
        self.scaler_ = target_scaler(X, y, cfg.standardize_y)
        (random_seed,) = library_seeds(numpy_rng(seed, "catboost_kgb"), 1)
        with scratch_cwd():
            self.samples_ = sample_gaussian_process(
                X,
                self.scaler_.y(y),
                random_seed=random_seed,
                samples=cfg.n_members,
                posterior_iterations=cfg.n_estimators,
                prior_iterations=cfg.n_prior_estimators,
                learning_rate=cfg.learning_rate,
                depth=cfg.depth,
                sigma=cfg.sigma,
                delta=cfg.delta,
                random_strength=cfg.random_strength,
                eps=cfg.eps,
                verbose=False,
            )
        self.d_ = X.shape[1]
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Sample mean and variance at ``X`` ``(m, d)``, AU = 0; ``member_means`` ``(K, m)``."""
        self._check_fitted()
        X = check_x(X, self.d_)
        threads = self.config.prediction_thread_count
        draws = np.stack([model.predict(X, thread_count=threads) for model in self.samples_])
        return combine_standardised(draws, np.zeros_like(draws), self.scaler_)
