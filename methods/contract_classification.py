"""The method contract's classification rules, for every method that declares the
classification kind (:mod:`udora.methods.contract` runs them beside the regression ones).

The task: 200 training points in [-1, 1]^2 with labels of three classes drawn from
``softmax(3 x_0, 3 x_1, -12)``, so the third class is missing from the training sample
(its probability is below 1e-5 everywhere there) while the task has three classes, as
letter's 26 classes at n = 750 leave some with a handful of labels or none; 300 near test
points from the same distribution and 300 in [3, 5]^2, far from the data. A hand-made
latent-GP prior (of the oracle's own ``ClassificationPrior`` type) stands in for the
oracle's for the reference methods that declare ``uses_task_prior``.

The rules: predictions are :class:`ClassificationPrediction` of m points and all three
classes (rows summing to 1, AU and EU >= 0, also for one point); the same seed gives the
same prediction; the AU varies unless the class declares ``aleatoric = "constant"``; the
predicted class agrees with the Bayes class at >= 85 % of the near points; the missing
class gets a median probability below 1/3 near the data; the median EU far from the data
exceeds the median near it (for tree methods, which predict a constant beyond the data,
the far prediction is the corner's instead).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from udora.methods.base import aleatoric_on
from udora.methods.classification.prediction import SUM_TOLERANCE, ClassificationPrediction
from udora.oracle.classification.preset import CLASSIFICATION, Sampler
from udora.oracle.classification.task import ClassificationPrior
from udora.oracle.prior import TaskKnowledge
from udora.oracle.standardise import Standardiser

CLASSES = ("c0", "c1", "c2")
MISSING = 2  # the class no training label has


def true_probabilities(X: np.ndarray) -> np.ndarray:
    """Class probabilities ``(m, 3)`` of the task at ``(m, 2)`` inputs."""
    logits = np.stack([3.0 * X[:, 0], 3.0 * X[:, 1], np.full(X.shape[0], -12.0)], axis=1)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class ClassificationTask:
    """The contract's classification task (module docstring); labels ``y`` (n,) int64."""

    X: np.ndarray
    y: np.ndarray
    X_near: np.ndarray
    bayes_near: np.ndarray  # (m,) the most probable class at each near point
    X_far: np.ndarray
    prior: ClassificationPrior

    def knowledge(self, *, with_prior: bool) -> TaskKnowledge:
        return TaskKnowledge(
            feature_names=("x0", "x1"),
            d=2,
            n=self.X.shape[0],
            prior=self.prior if with_prior else None,
            classes=CLASSES,
        )


def make_classification_task(n: int = 200, seed: int = 0) -> ClassificationTask:
    """The task of the module docstring with ``n`` training points."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 2))
    p = true_probabilities(X)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).astype(np.int64)
    assert not np.any(y == MISSING), "the missing class was drawn; change the seed"
    X_near = rng.uniform(-1.0, 1.0, size=(300, 2))
    prior = ClassificationPrior(
        kernel=({"type": "rbf", "variance": 1.0, "lengthscale": [1.0, 1.0]},),
        mean=(0.0, 0.0, 0.0),
        latent_scale=2.0,
        standardiser=Standardiser(np.zeros(2), np.full(2, 0.58), 0.0, 1.0),
        classes=CLASSES,
        sampler=Sampler(warmup=200, draws=400, batches=10, softmax_draws=16),
    )
    return ClassificationTask(
        X,
        y,
        X_near,
        np.argmax(true_probabilities(X_near), axis=1),
        rng.uniform(3.0, 5.0, size=(300, 2)),
        prior,
    )


@dataclasses.dataclass
class ClassificationSubject:
    """One method under the classification rules: class, overrides, task, shared fit."""

    cls: type
    overrides: dict
    task: ClassificationTask
    constant_extrapolation: bool = False  # a tree method: a constant beyond the data
    _fitted: object = dataclasses.field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.cls.name

    def fit(self, seed: int = 3):
        knowledge = self.task.knowledge(with_prior=self.cls.uses_task_prior)
        model = self.cls(**self.overrides)
        return model.fit(self.task.X, self.task.y, seed=seed, knowledge=knowledge)

    @property
    def fitted(self):
        if self._fitted is None:
            self._fitted = self.fit()
        return self._fitted


def _check(pred: object, m: int) -> ClassificationPrediction:
    assert isinstance(pred, ClassificationPrediction), f"predict returned {type(pred).__name__}"
    assert pred.prob.shape == (m, len(CLASSES)), f"prob has shape {pred.prob.shape}"
    assert np.all(np.abs(pred.prob.sum(axis=1) - 1) <= SUM_TOLERANCE), "rows do not sum to 1"
    for name in ("aleatoric", "epistemic"):
        arr = getattr(pred, name)
        assert arr.shape == (m,) and np.all(np.isfinite(arr)) and np.all(arr >= 0), name
    return pred


def check_cls_shapes(s: ClassificationSubject) -> None:
    _check(s.fitted.predict(s.task.X_near), s.task.X_near.shape[0])
    _check(s.fitted.predict(s.task.X_near[:1]), 1)


def check_cls_same_seed_same_prediction(s: ClassificationSubject) -> None:
    first, again = s.fitted.predict(s.task.X_near), s.fit().predict(s.task.X_near)
    for name in ("prob", "aleatoric", "epistemic"):
        np.testing.assert_array_equal(getattr(again, name), getattr(first, name), err_msg=name)


def check_cls_aleatoric_as_declared(s: ClassificationSubject) -> None:
    au = s.fitted.predict(s.task.X_near).aleatoric
    constant = float(np.ptp(au)) <= 1e-12 * max(float(np.max(au)), 1e-300)
    if aleatoric_on(s.cls.aleatoric, CLASSIFICATION) == "constant":
        assert constant, f'declares aleatoric = "constant", but its AU ranges over {np.ptp(au):.3g}'
    else:
        assert not constant, f"its AU is {au[0]:.4g} at every point; declare it constant"


def check_cls_accuracy(s: ClassificationSubject) -> None:
    pred = s.fitted.predict(s.task.X_near)
    agree = float(np.mean(np.argmax(pred.prob, axis=1) == s.task.bayes_near))
    assert agree >= 0.85, f"the predicted class is the Bayes class at {agree:.0%} of near points"


def check_cls_missing_class(s: ClassificationSubject) -> None:
    p = np.median(s.fitted.predict(s.task.X_near).prob[:, MISSING])
    assert p < 1 / 3, (
        f"the class missing from training gets median probability {p:.3f} near the data"
    )


def check_cls_epistemic_grows_far_from_data(s: ClassificationSubject) -> None:
    method = s.fitted
    if s.constant_extrapolation:
        corner = method.predict(s.task.X.max(axis=0, keepdims=True))
        far = method.predict(s.task.X_far)
        np.testing.assert_allclose(
            far.prob, np.broadcast_to(corner.prob, far.prob.shape), rtol=1e-12
        )
        return
    near = np.median(method.predict(s.task.X_near).epistemic)
    far = np.median(method.predict(s.task.X_far).epistemic)
    assert far > near, f"median EU far {far:.4g} <= near {near:.4g}"


CLASSIFICATION_RULES = [
    check_cls_shapes,
    check_cls_same_seed_same_prediction,
    check_cls_aleatoric_as_declared,
    check_cls_accuracy,
    check_cls_missing_class,
    check_cls_epistemic_grows_far_from_data,
]
