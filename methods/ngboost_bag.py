"""Bagged NGBoost: K Normal NGBoost regressors, each on its own resample (paper, App. D.3).

Member k fits NGBoost (Duan et al. 2020; Normal output, log score, sklearn regression
trees) to ``m = round(sample_fraction * n)`` rows drawn from the n training rows with or
without replacement, giving ``N(mu_k(x), s_k(x)^2)``. Members combine as mean = average
member mean, aleatoric = average member variance ``s_k^2``, epistemic = variance of the
member means (ddof 0), in original units when the target is standardised.

On a classification task (``knowledge.classes``) each member is NGBoost with a
categorical output over the C classes (Bernoulli for two; ``ngboost.distns.k_categorical``
with the log score) fitted to class codes; the members' probabilities give AU = their
expected entropy and EU = their mutual information. NGBoost's own initial fit takes the
log of each class's frequency and its classifier refuses a sample without every class, so
a member whose resample lacks a class could not be fitted: here the initial frequencies
get one pseudo-count per class (:func:`smoothed_categorical`) and the members are fitted
through NGBoost's base class on the codes. A single NGBoost classifier has no EU of its
own, so only the bagged form is offered.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np
from ngboost import NGBoost, NGBRegressor
from ngboost.distns import k_categorical
from ngboost.distns.distn import RegressionDistn
from ngboost.scores import LogScore
from pydantic import Field, model_validator

from udora.methods.base import Knowledge, MethodConfig, Prediction, UQMethod, check_x, check_xy
from udora.methods.classification.prediction import ClassificationPrediction, check_labels
from udora.methods.combine import combine_standardised
from udora.methods.registry import register
from udora.methods.seeding import numpy_rng
from udora.methods.trees import (
    FiniteSteps,
    LeanTree,
    library_seeds,
    resample_rows,
    target_scaler,
)


class NormalLogScore(LogScore):
    """Log score of ``N(loc, scale^2)`` in ``theta = (loc, log scale)`` and its Fisher matrix.

    ``L = log(scale) + (y - loc)^2 / (2 scale^2) + log(2 pi) / 2``,
    ``dL/dtheta = ((loc - y) / scale^2, 1 - (y - loc)^2 / scale^2)``,
    Fisher ``diag(1 / scale^2, 2)``.
    """

    def score(self, Y: np.ndarray) -> np.ndarray:
        z = (Y - self.loc) / self.scale
        return np.log(self.scale) + 0.5 * z**2 + 0.5 * np.log(2.0 * np.pi)

    def d_score(self, Y: np.ndarray) -> np.ndarray:
        r = Y - self.loc
        return np.stack([-r / self.var, 1.0 - r**2 / self.var], axis=1)

    def metric(self) -> np.ndarray:
        fisher = np.zeros((self.loc.shape[0], 2, 2))
        fisher[:, 0, 0] = 1.0 / self.var
        fisher[:, 1, 1] = 2.0
        return fisher


class Normal(RegressionDistn):
    """NGBoost's Normal in numpy only: ``theta = (loc, log scale)`` ``(2, n)``.

    Same parameterisation, initial fit and score as ``ngboost.distns.Normal``, without
    building a frozen scipy distribution per line-search step (about half of the run time).
    """

    n_params = 2
    scores: ClassVar[list[type]] = [NormalLogScore]

    def __init__(self, params: np.ndarray) -> None:
        super().__init__(params)
        self.loc = params[0]
        self.scale = np.exp(params[1])
        self.var = self.scale**2

    @staticmethod
    def fit(Y: np.ndarray) -> np.ndarray:
        """Initial theta ``(2,)``: the maximum-likelihood ``(mean, log std)`` of Y."""
        return np.array([np.mean(Y), np.log(np.std(Y))])

    def mean(self) -> np.ndarray:
        return self.loc

    @property
    def params(self) -> dict[str, np.ndarray]:
        return {"loc": self.loc, "scale": self.scale}


def smoothed_categorical(n_classes: int) -> type:
    """NGBoost's categorical over ``n_classes`` whose initial fit counts one pseudo-label
    per class, so a sample without some class still starts from finite logits."""
    base = k_categorical(n_classes)

    class SmoothedCategorical(base):
        @staticmethod
        def fit(Y: np.ndarray) -> np.ndarray:
            counts = np.bincount(np.asarray(Y, dtype=np.int64), minlength=n_classes) + 1.0
            p = counts / counts.sum()
            return np.log(p[1:]) - np.log(p[0])

    SmoothedCategorical.__name__ = f"SmoothedCategorical{n_classes}"
    return SmoothedCategorical


class NGBoostBagConfig(MethodConfig):
    """Members, per-member boosting settings, resampling and target scaling.

    The paper gives ranges only; our defaults (10 members, NGBoost's own 500 trees at rate
    0.01, depth 3, 80% of the rows with replacement) sit inside them. The paper calls the
    resample size both ``bagging_frac`` and ``sample_fraction``; we use the latter.
    ``QUICK`` (what ``udora bench --quick`` applies): 5 members of 100 trees. Members
    must differ: ``replace=False`` with ``sample_fraction=1`` gives each one every row,
    so it is refused unless ``minibatch_frac`` or ``col_sample`` is below 1.
    """

    n_members: int = Field(default=10, ge=2)  # K = 1 would give EU = 0 everywhere
    n_estimators: int = Field(default=500, ge=1)
    learning_rate: float = Field(default=0.01, gt=0.0)
    max_depth: int = Field(default=3, ge=1)
    minibatch_frac: float = Field(default=1.0, gt=0.0, le=1.0)
    col_sample: float = Field(default=1.0, gt=0.0, le=1.0)
    natural_gradient: bool = True
    sample_fraction: float = Field(default=0.8, gt=0.0, le=1.0)
    replace: bool = True
    standardize_y: bool = True

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        "n_estimators": {"distribution": "int_uniform", "min": 200, "max": 800},
        "learning_rate": {"distribution": "log_uniform_values", "min": 0.005, "max": 0.1},
        "max_depth": {"distribution": "int_uniform", "min": 2, "max": 6},
        "minibatch_frac": {"distribution": "uniform", "min": 0.5, "max": 1.0},
        "col_sample": {"distribution": "uniform", "min": 0.5, "max": 1.0},
        "natural_gradient": {"values": [True, False]},
        "n_members": {"distribution": "int_uniform", "min": 5, "max": 25},
        "sample_fraction": {"distribution": "uniform", "min": 0.6, "max": 0.95},
        "replace": {"values": [True, False]},
        "standardize_y": {"values": [True, False]},
    }
    UNUSED_ON: ClassVar[dict[str, tuple[str, ...]]] = {"classification": ("standardize_y",)}
    QUICK: ClassVar[dict[str, Any]] = {"n_estimators": 100, "n_members": 5}

    @model_validator(mode="after")
    def _members_differ(self) -> Self:
        """Refuse K copies of one model (every row, no subsampling): EU would be 0."""
        same_rows = not self.replace and self.sample_fraction == 1.0
        if same_rows and self.minibatch_frac == 1.0 and self.col_sample == 1.0:
            raise ValueError(
                "replace=False with sample_fraction=1.0 fits every member to all rows, and "
                "minibatch_frac=col_sample=1.0 leaves nothing random: the members are one "
                "model and EU is 0; set replace=True or lower one of those fractions"
            )
        return self


class FiniteNGBoost(FiniteSteps, NGBoost):
    """NGBoost that raises when a fit diverges (:class:`~udora.methods.trees.FiniteSteps`)."""


class FiniteNGBRegressor(FiniteSteps, NGBRegressor):
    """NGBRegressor that raises when a fit diverges (ngboost_bag's and ngboost_nig's)."""


@register("ngboost_bag")
class NGBoostBag(UQMethod):
    """Bagging of K NGBoost models (Normal; categorical), each fitted to a resample."""

    family = "trees"
    kinds = ("regression", "classification")
    libraries = ("ngboost", "scikit-learn")
    Config = NGBoostBagConfig
    config: NGBoostBagConfig

    def _member(self, random_state: int) -> NGBRegressor | NGBoost:
        cfg = self.config
        model = FiniteNGBoost if self.n_classes_ else FiniteNGBRegressor
        return model(
            Dist=smoothed_categorical(self.n_classes_) if self.n_classes_ else Normal,
            Score=LogScore,
            Base=LeanTree(max_depth=cfg.max_depth),
            natural_gradient=cfg.natural_gradient,
            n_estimators=cfg.n_estimators,
            learning_rate=cfg.learning_rate,
            minibatch_frac=cfg.minibatch_frac,
            col_sample=cfg.col_sample,
            verbose=False,
            random_state=random_state,
            n_jobs=1,
        )

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Fit K members to resamples of ``X`` ``(n, d)``, ``y`` ``(n,)``.

        Sets ``member_rows_`` ``(K, m)``: the training rows each member saw.
        """
        X, y = check_xy(X, y)
        cfg = self.config
        self.n_classes_ = knowledge.n_classes if knowledge is not None else 0
        self.scaler_ = target_scaler(X, y, cfg.standardize_y and not self.n_classes_)
        ys = check_labels(y, self.n_classes_) if self.n_classes_ else self.scaler_.y(y)
        k = cfg.n_members
        self.member_rows_ = resample_rows(
            X.shape[0], cfg.sample_fraction, cfg.replace, k, numpy_rng(seed, "bagging")
        )
        seeds = library_seeds(numpy_rng(seed, "ngboost_members"), k)
        self.members_ = [
            self._member(s).fit(X[rows], ys[rows])
            for s, rows in zip(seeds, self.member_rows_, strict=True)
        ]
        self.d_ = X.shape[1]
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> Prediction | ClassificationPrediction:
        """Combined predictive at ``X`` ``(m, d)``; ``member_means`` is ``(K, m)``
        (classification: ``member_probs`` ``(K, m, C)``)."""
        self._check_fitted()
        X = check_x(X, self.d_)
        dists = [member.pred_dist(X) for member in self.members_]
        if self.n_classes_:
            probs = np.stack([dist.class_probs() for dist in dists])
            return ClassificationPrediction.from_members(probs / probs.sum(-1, keepdims=True))
        means = np.stack([dist.loc for dist in dists])
        variances = np.stack([dist.scale**2 for dist in dists])
        return combine_standardised(means, variances, self.scaler_)
