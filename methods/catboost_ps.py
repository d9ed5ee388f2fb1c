"""CatBoost posterior sampling: K CatBoost models with a Gaussian output (paper, App. D.3).

Each member is a CatBoost regressor (Prokhorenkova et al. 2019) with the
``RMSEWithUncertainty`` loss, the Gaussian negative log-likelihood of a mean and a
log-scale head, so it predicts ``N(mu_k(x), v_k(x))``; ``posterior_sampling=True`` turns
on Stochastic Gradient Langevin Boosting (Ustimenko and Prokhorenkova 2021), as Malinin et
al. (2021) do for uncertainty. Members differ by seed and
by their rows: ``round(bagging_frac * n_fit)`` of the fit rows, drawn without replacement.
A ``val_fraction`` split of the training data, shared by all members, stops each member
early on its validation NLL and keeps its best iteration; without it the variance head
overfits. Members combine as mean = average member mean, aleatoric = average ``v_k``,
epistemic = variance of the member means (ddof 0), in original units when the target is
standardised.

On a classification task (``knowledge.classes``) each member is a ``CatBoostClassifier``
with ``Logloss`` (two classes) or ``MultiClass``, the same posterior sampling, rows and
early stopping (on the validation log loss), and every class named (``class_names``), so a
class missing from a member's rows keeps its column (probability 0 from CatBoost, floored
at 1e-12 inside the log loss like every probability). The K members' probabilities give
AU = their expected entropy and EU = their mutual information. This is an explicit seed
ensemble, like the regression twin, not CatBoost's virtual ensembles of one model.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np
from catboost import CatBoostClassifier, CatBoostRegressor
from pydantic import Field

from udora.methods.base import Knowledge, MethodConfig, Prediction, UQMethod, check_x, check_xy
from udora.methods.classification.prediction import ClassificationPrediction, check_labels
from udora.methods.combine import combine_standardised
from udora.methods.registry import register
from udora.methods.seeding import numpy_rng
from udora.methods.trees import library_seeds, resample_rows, target_scaler, validation_split


class CatBoostPSConfig(MethodConfig):
    """Members, CatBoost settings, early stopping, threads and target scaling.

    The paper gives ranges only; our defaults are CatBoost's own where they lie inside
    them (depth 6, l2_leaf_reg 3, random_strength 1, bagging_temperature 1 with the
    Bayesian bootstrap), with 500 trees at rate 0.05. ``n_estimators`` is CatBoost's
    ``iterations`` (each member's cap: early stopping may keep fewer) and ``patience``
    its ``early_stopping_rounds``, named as in the other methods (docs/adding_a_method.md).
    ``val_fraction``, ``patience`` and ``thread_count`` are ours and not tuned;
    ``val_fraction = 0`` disables early stopping. ``QUICK`` (what ``udora bench --quick``
    applies): 5 members of at most 100 trees.
    """

    n_members: int = Field(default=10, ge=2)  # K = 1 would give EU = 0 everywhere
    n_estimators: int = Field(default=500, ge=1)
    learning_rate: float = Field(default=0.05, gt=0.0)
    depth: int = Field(default=6, ge=1, le=16)
    l2_leaf_reg: float = Field(default=3.0, ge=0.0)
    random_strength: float = Field(default=1.0, ge=0.0)
    bagging_temperature: float = Field(default=1.0, ge=0.0)
    bagging_frac: float = Field(default=0.8, gt=0.0, le=1.0)
    val_fraction: float = Field(default=0.2, ge=0.0, lt=1.0)
    patience: int = Field(default=50, ge=1)
    standardize_y: bool = True
    thread_count: int = Field(default=1, ge=1)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        "n_estimators": {"distribution": "int_uniform", "min": 100, "max": 600},
        "learning_rate": {"distribution": "log_uniform_values", "min": 0.01, "max": 0.3},
        "depth": {"distribution": "int_uniform", "min": 3, "max": 8},
        "l2_leaf_reg": {"distribution": "log_uniform_values", "min": 0.5, "max": 10.0},
        "random_strength": {"distribution": "uniform", "min": 0.0, "max": 2.0},
        "bagging_temperature": {"distribution": "uniform", "min": 0.0, "max": 2.0},
        "n_members": {"distribution": "int_uniform", "min": 5, "max": 20},
        "bagging_frac": {"distribution": "uniform", "min": 0.6, "max": 1.0},
        "standardize_y": {"values": [True, False]},
    }
    UNUSED_ON: ClassVar[dict[str, tuple[str, ...]]] = {"classification": ("standardize_y",)}
    QUICK: ClassVar[dict[str, Any]] = {"n_estimators": 100, "n_members": 5}


@register("catboost_ps")
class CatBoostPS(UQMethod):
    """K CatBoost models with posterior sampling (RMSEWithUncertainty; Logloss/MultiClass)."""

    family = "trees"
    kinds = ("regression", "classification")
    libraries = ("catboost",)
    Config = CatBoostPSConfig
    config: CatBoostPSConfig

    def _member(self, random_seed: int) -> CatBoostRegressor | CatBoostClassifier:
        cfg = self.config
        if self.n_classes_:
            head = {
                "loss_function": "Logloss" if self.n_classes_ == 2 else "MultiClass",
                "class_names": list(range(self.n_classes_)),
            }
            model = CatBoostClassifier
        else:
            head, model = {"loss_function": "RMSEWithUncertainty"}, CatBoostRegressor
        return model(
            **head,
            posterior_sampling=True,
            iterations=cfg.n_estimators,
            learning_rate=cfg.learning_rate,
            depth=cfg.depth,
            l2_leaf_reg=cfg.l2_leaf_reg,
            random_strength=cfg.random_strength,
            bootstrap_type="Bayesian",
            bagging_temperature=cfg.bagging_temperature,
            random_seed=random_seed,
            thread_count=cfg.thread_count,
            allow_writing_files=False,
            verbose=False,
        )

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Fit K members on ``X`` ``(n, d)``, ``y`` ``(n,)``.

        Sets ``val_rows_`` (the held-out rows, possibly empty) and ``member_rows_``
        ``(K, m)``: the training rows (indices into X) each member fitted.
        """
        X, y = check_xy(X, y)
        cfg = self.config
        self.n_classes_ = knowledge.n_classes if knowledge is not None else 0
        self.scaler_ = target_scaler(X, y, cfg.standardize_y and not self.n_classes_)
        ys = check_labels(y, self.n_classes_) if self.n_classes_ else self.scaler_.y(y)
        n, k = X.shape[0], cfg.n_members
        if cfg.val_fraction > 0:
            fit_rows, self.val_rows_ = validation_split(
                n, cfg.val_fraction, numpy_rng(seed, "validation")
            )
            eval_set = (X[self.val_rows_], ys[self.val_rows_])
        else:
            fit_rows, self.val_rows_ = np.arange(n), np.arange(0)
            eval_set = None
        picks = resample_rows(fit_rows.size, cfg.bagging_frac, False, k, numpy_rng(seed, "bagging"))
        self.member_rows_ = fit_rows[picks]
        seeds = library_seeds(numpy_rng(seed, "catboost_members"), k)
        self.members_ = []
        for s, rows in zip(seeds, self.member_rows_, strict=True):
            member = self._member(s)
            if eval_set is None:
                member.fit(X[rows], ys[rows])
            else:
                member.fit(
                    X[rows],
                    ys[rows],
                    eval_set=eval_set,
                    early_stopping_rounds=cfg.patience,
                    use_best_model=True,
                )
            self.members_.append(member)
        self.d_ = X.shape[1]
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> Prediction | ClassificationPrediction:
        """Combined predictive at ``X`` ``(m, d)``; ``member_means`` is ``(K, m)``
        (classification: ``member_probs`` ``(K, m, C)``)."""
        self._check_fitted()
        X = check_x(X, self.d_)
        threads = self.config.thread_count
        if self.n_classes_:
            probs = [member.predict_proba(X, thread_count=threads) for member in self.members_]
            probs = np.stack(probs)
            return ClassificationPrediction.from_members(probs / probs.sum(-1, keepdims=True))
        # RMSEWithUncertainty predicts (m, 2) columns: mean and variance (CatBoost >= 0.24.2).
        out = np.stack([member.predict(X, thread_count=threads) for member in self.members_])
        return combine_standardised(out[:, :, 0], out[:, :, 1], self.scaler_)
