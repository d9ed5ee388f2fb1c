"""CatBoost virtual ensembles (Malinin et al. 2021) for classification: one model with
posterior sampling, K truncated copies of it as the ensemble.

One ``CatBoostClassifier`` (``Logloss`` for two classes, ``MultiClass`` otherwise, every
class named) is fitted with ``posterior_sampling=True`` (Stochastic Gradient Langevin
Boosting) on the fit rows, early-stopped on a ``val_fraction`` split by its log loss, with
the tree settings of ``catboost_ps`` (:class:`~udora.methods.catboost_ps.CatBoostPS`).
CatBoost's ``virtual_ensembles_predict(prediction_type="VirtEnsembles")`` returns the raw
scores of K = ``n_members`` virtual members (truncations of the one model's sequence of
trees); member k's probabilities are ``sigmoid`` (binary) or ``softmax`` (multiclass) of
its scores, and AU = their expected entropy (CatBoost's data uncertainty), EU = their
mutual information (its knowledge uncertainty): ``tests/methods/test_cls_catboost_ve.py``
checks both against CatBoost's own ``TotalUncertainty``. Classification only: the
paper's CatBoost for regression is ``catboost_ps``'s explicit seed ensemble.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np
from pydantic import Field, model_validator
from scipy.special import expit

from udora.methods.base import Knowledge, MethodConfig, check_x, check_xy
from udora.methods.catboost_ps import CatBoostPS, CatBoostPSConfig
from udora.methods.classification.prediction import (
    ClassificationPrediction,
    check_labels,
    softmax_probabilities,
)
from udora.methods.registry import register
from udora.methods.seeding import numpy_rng
from udora.methods.trees import library_seeds, validation_split


class CatBoostVEConfig(MethodConfig):
    """The tree settings of ``catboost_ps`` (same defaults and ranges) for one model, and
    K = ``n_members`` virtual members (CatBoost's ``virtual_ensembles_count``). CatBoost
    forms K virtual members from at least 2K trees: ``n_estimators >= 2 n_members``, and a
    model early-stopped before 2K trees is refitted on the fit rows for exactly 2K."""

    n_members: int = Field(default=10, ge=2)
    n_estimators: int = Field(default=500, ge=1)
    learning_rate: float = Field(default=0.05, gt=0.0)
    depth: int = Field(default=6, ge=1, le=16)
    l2_leaf_reg: float = Field(default=3.0, ge=0.0)
    random_strength: float = Field(default=1.0, ge=0.0)
    bagging_temperature: float = Field(default=1.0, ge=0.0)
    val_fraction: float = Field(default=0.2, ge=0.0, lt=1.0)
    patience: int = Field(default=50, ge=1)
    thread_count: int = Field(default=1, ge=1)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        k: v
        for k, v in CatBoostPSConfig.SEARCH_SPACE.items()
        if k not in ("bagging_frac", "standardize_y")
    }
    QUICK: ClassVar[dict[str, Any]] = {"n_estimators": 100, "n_members": 5}

    @model_validator(mode="after")
    def _enough_trees(self) -> Self:
        if self.n_estimators < 2 * self.n_members:
            raise ValueError(
                f"n_estimators ({self.n_estimators}) must be at least 2 * n_members "
                f"({2 * self.n_members}): CatBoost forms K virtual members from 2K trees"
            )
        return self


@register("catboost_ve")
class CatBoostVE(CatBoostPS):
    """One CatBoost classifier with posterior sampling, K virtual ensemble members."""

    family = "trees"
    kinds = ("classification",)
    not_for = (
        (
            "regression",
            "the paper's CatBoost for regression is catboost_ps's explicit seed ensemble",
        ),
    )
    libraries = ("catboost", "scipy")
    Config = CatBoostVEConfig
    config: CatBoostVEConfig

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Fit the one model on ``X`` ``(n, d)`` and the class codes ``y`` ``(n,)``."""
        if knowledge is None or not knowledge.n_classes:
            raise ValueError("catboost_ve is a classification method: knowledge.classes names C")
        X, y = check_xy(X, y)
        cfg = self.config
        self.n_classes_ = knowledge.n_classes
        labels = check_labels(y, self.n_classes_)
        (random_seed,) = library_seeds(numpy_rng(seed, "catboost_members"), 1)
        self.model_ = self._member(random_seed)
        fit_rows, val_rows = np.arange(X.shape[0]), np.arange(0)
        if cfg.val_fraction > 0:
            fit_rows, val_rows = validation_split(
                X.shape[0], cfg.val_fraction, numpy_rng(seed, "validation")
            )
            self.model_.fit(
                X[fit_rows],
                labels[fit_rows],
                eval_set=(X[val_rows], labels[val_rows]),
                early_stopping_rounds=cfg.patience,
                use_best_model=True,
            )
            if self.model_.tree_count_ < 2 * cfg.n_members:
                # CatBoost's K virtual members need 2K trees; an early stop before them
                # leaves too few: the model is refitted on the fit rows for exactly 2K
                self.model_ = self._member(random_seed)
                self.model_.set_params(iterations=2 * cfg.n_members)
                self.model_.fit(X[fit_rows], labels[fit_rows])
        else:
            self.model_.fit(X, labels)
        # the raw scores have a column per class the model saw, in order of the codes
        self.seen_ = np.unique(labels[fit_rows])
        self.d_ = X.shape[1]
        self.fitted_ = True
        return self

    def member_probabilities(self, X: np.ndarray) -> np.ndarray:
        """``(K, m, C)`` probabilities of the K virtual members at ``X`` ``(m, d)``."""
        raw = np.asarray(
            self.model_.virtual_ensembles_predict(
                X,
                prediction_type="VirtEnsembles",
                virtual_ensembles_count=self.config.n_members,
                thread_count=self.config.thread_count,
            ),
            np.float64,
        )  # (m, K, 1) binary raw score, (m, K, C) multiclass
        if self.n_classes_ == 2:
            p1 = expit(raw[..., 0])
            return np.swapaxes(np.stack([1.0 - p1, p1], axis=-1), 0, 1)
        scores = np.full((*raw.shape[:2], self.n_classes_), -np.inf)
        scores[..., self.seen_] = raw  # a class absent from the fit rows: probability 0
        return np.swapaxes(softmax_probabilities(scores), 0, 1)

    def predict(self, X: np.ndarray) -> ClassificationPrediction:
        """The K virtual members combined at ``X`` ``(m, d)``; ``member_probs`` ``(K, m, C)``."""
        self._check_fitted()
        X = check_x(X, self.d_)
        return ClassificationPrediction.from_members(self.member_probabilities(X))
