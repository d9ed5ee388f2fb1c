"""Prediction fields from scikit-learn-style regressors and classifiers, ready for
:func:`udora.experiments.open.forms.parse` (docs/evaluate_any_model.md, "Adapters").

:func:`sklearn_fields` reads one fitted model's own predictive distribution; it splits the
variance into AU and EU only where the model says which part is its noise. Shapes: a task
has ``n`` training rows and ``N`` pool rows; every returned array has ``N`` on its last
axis, in pool order, and the fields carry the task's ``task_hash``.

What scikit-learn's ``predict(X, return_std=True)`` returns (scikit-learn 1.6):

- ``BayesianRidge``/``ARDRegression``: the std of the predictive, noise included:
  ``std^2 = 1/alpha_ + x^T sigma_ x``. The second term uses ``x`` uncentred although
  ``sigma_`` is fitted on centred inputs (scikit-learn issue #33757, fixed after 1.6); the
  adapter keeps the model's own number.
- ``GaussianProcessRegressor``: ``kernel_.diag(x)`` minus the explained part, times the
  training std of ``y`` under ``normalize_y``. A ``WhiteKernel`` term adds its noise to
  ``kernel_.diag`` but not to the cross-covariances, so the std includes it; ``alpha``
  (the noise assumed in fitting) is never added.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from udora.errors import UserError
from udora.experiments.open.tasks import PublicTask

NOISE_EXPOSED = ("BayesianRidge", "ARDRegression", "GaussianProcessRegressor")  # and subclasses


class NoPredictiveStd(UserError):
    """A model that predicts no standard deviation, given where one is needed."""


def estimator_from_path(path: str, **kwargs: Any) -> Any:
    """An instance of the class (or factory) at ``path``, ``"package.module:Name"`` (or
    ``"package.module.Name"``), called with ``kwargs``. Any failure to import, find or
    build it is one UserError naming ``path``."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise UserError(f"{path!r}: expected an import path 'package.module:Name'")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
        estimator = target(**kwargs)
    except (ImportError, AttributeError, TypeError, ValueError) as err:
        raise UserError(
            f"{path!r}: cannot build an estimator ({type(err).__name__}: {err})"
        ) from None
    if not hasattr(estimator, "fit") or not hasattr(estimator, "predict"):
        raise UserError(f"{path!r}: built a {type(estimator).__name__}, which has no fit/predict")
    return estimator


def _final_step(estimator: Any) -> Any:
    """The model that predicts: a Pipeline's last step, else ``estimator`` itself."""
    steps = getattr(estimator, "steps", None)
    return steps[-1][1] if isinstance(steps, list) and steps else estimator


def _takes_return_std(model: Any) -> bool:
    try:
        return "return_std" in inspect.signature(model.predict).parameters
    except (TypeError, ValueError):
        return False


def _gp_noise(gp: Any, X: np.ndarray) -> np.ndarray:
    """(N,) the noise variance a fitted GaussianProcessRegressor assumes at ``X``: what its
    ``WhiteKernel`` terms add to ``kernel_.diag`` (found at any depth of the kernel), else
    its scalar ``alpha``; in units of ``y`` (``normalize_y`` scaled back)."""
    from sklearn.gaussian_process.kernels import WhiteKernel

    kernel = gp.kernel_
    scale = float(np.ravel(getattr(gp, "_y_train_std", 1.0))[0]) ** 2
    if isinstance(kernel, WhiteKernel):
        return kernel.diag(X) * scale
    whites = [name for name, part in kernel.get_params().items() if isinstance(part, WhiteKernel)]
    if whites:
        quiet = kernel.clone_with_theta(kernel.theta)
        quiet.set_params(**{f"{name}__noise_level": 0.0 for name in whites})
        return (kernel.diag(X) - quiet.diag(X)) * scale
    alpha = np.asarray(gp.alpha, dtype=float)
    if alpha.size != 1:
        raise UserError(
            "GaussianProcessRegressor: a per-sample alpha has no value on the "
            "pool; give the kernel a WhiteKernel term for the noise"
        )
    return np.full(X.shape[0], float(alpha) * scale)


def _has_white(gp: Any) -> bool:
    from sklearn.gaussian_process.kernels import WhiteKernel

    kernel = gp.kernel_
    parts = [kernel, *kernel.get_params().values()]
    return any(isinstance(part, WhiteKernel) for part in parts)


def _transformed(estimator: Any, X: np.ndarray) -> np.ndarray:
    """``X`` as a Pipeline's last step sees it (``X`` itself for a bare model)."""
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list) and len(steps) > 1:
        return estimator[:-1].transform(X)
    return X


def sklearn_fields(estimator: Any, task: PublicTask) -> dict[str, Any]:
    """Fit ``estimator`` on ``task.X_train`` (n, d), ``task.y_train`` (n,) and predict
    ``task.X_pool`` (N, d). Returns the fields of one prediction form, each (N,):

    - ``split`` (mean, aleatoric, epistemic) where the model exposes its noise
      (:data:`NOISE_EXPOSED`, also as a Pipeline's last step): AU the noise (constant:
      ``1/alpha_``; a GP's ``WhiteKernel`` noise, else its ``alpha``), EU the rest of
      ``std^2``, clipped at 0 (a GP's std excludes ``alpha``, so there EU is ``std^2``);
    - ``gaussian`` (mean, variance = ``std^2``) for any other ``predict(X, return_std=True)``;
    - ``gaussian`` (loc, scale^2) for NGBoost's ``NGBRegressor`` with its Normal.

    Fits ``estimator`` in place. A model without a predictive std is a UserError that
    points to :func:`bagged_fields`. On a classification task: :func:`classifier_fields`."""
    if task.kind == "classification":
        return classifier_fields(estimator, task)
    model = _final_step(estimator)
    name = type(model).__name__
    ngboost = hasattr(model, "pred_dist")
    if not ngboost and not _takes_return_std(model):
        raise NoPredictiveStd(
            f"{name}.predict has no return_std: sklearn_fields needs a model "
            f"that predicts a standard deviation (predict(X, return_std=True), "
            f"or NGBoost's pred_dist); for any other regressor use "
            f"bagged_fields(make_estimator, task)"
        )
    estimator.fit(task.X_train, task.y_train)
    X = task.X_pool
    if ngboost:
        params = model.pred_dist(_transformed(estimator, X)).params
        if set(params) != {"loc", "scale"}:
            raise UserError(
                f"{name}: expected a Normal predictive (loc, scale); got the "
                f"parameters {sorted(params)}"
            )
        mean, var = np.asarray(params["loc"]), np.asarray(params["scale"]) ** 2
        return {"mean": mean, "variance": var, "task_hash": task.task_hash}
    mean, std = estimator.predict(X, return_std=True)
    mean, var = np.asarray(mean, dtype=float), np.asarray(std, dtype=float) ** 2
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.linear_model import ARDRegression, BayesianRidge

    if isinstance(model, (BayesianRidge, ARDRegression)):
        noise = np.full(len(mean), 1.0 / float(model.alpha_))
    elif isinstance(model, GaussianProcessRegressor):
        noise = _gp_noise(model, _transformed(estimator, X))
        if not _has_white(model):
            var = var + noise  # the GP's std is the latent one: the noise comes on top
    else:
        return {"mean": mean, "variance": var, "task_hash": task.task_hash}
    epistemic = np.clip(var - noise, 0.0, None)
    return {"mean": mean, "aleatoric": noise, "epistemic": epistemic, "task_hash": task.task_hash}


def _class_probabilities(fitted: Any, X: np.ndarray, task: PublicTask) -> np.ndarray:
    """``fitted.predict_proba(X)`` as (N, C) over the task's classes: column ``c`` is label
    ``c`` (its ``classes_`` say which column is which); a class the model never saw in
    training gets probability 0."""
    proba = np.asarray(fitted.predict_proba(X), dtype=np.float64)
    seen = np.asarray(getattr(_final_step(fitted), "classes_", np.arange(proba.shape[1])))
    C = len(task.classes)
    if seen.dtype.kind not in "iuf" or np.any((seen < 0) | (seen >= C) | (seen != np.rint(seen))):
        raise UserError(
            f"{type(_final_step(fitted)).__name__}.classes_ is {seen.tolist()}; expected the "
            f"task's labels 0..{C - 1} (fit it on y_train as given)"
        )
    out = np.zeros((proba.shape[0], C))
    out[:, seen.astype(int)] = proba
    return out


def _check_proba(estimator: Any) -> None:
    """A classification task needs class probabilities: an estimator (its last pipeline
    step) without ``predict_proba`` is refused before any fit (scikit-learn's SVC has it
    only with ``probability=True``)."""
    if not hasattr(_final_step(estimator), "predict_proba"):
        raise UserError(
            f"{type(_final_step(estimator)).__name__} has no predict_proba: a classification "
            "task needs class probabilities"
        )


def classifier_fields(estimator: Any, task: PublicTask) -> dict[str, Any]:
    """Fit a classifier on ``task.X_train`` (n, d), ``task.y_train`` (n,) labels and
    return the ``probs`` form: ``prob`` (N, C), its ``predict_proba`` on ``task.X_pool``
    (total-only: one model has no AU/EU split; :func:`bagged_fields` gives members).
    Fits ``estimator`` in place."""
    _check_proba(estimator)
    estimator.fit(task.X_train, task.y_train)
    return {"prob": _class_probabilities(estimator, task.X_pool, task), "task_hash": task.task_hash}


def _member_maker(make_estimator: Any) -> Callable[[], Any]:
    """A function returning a fresh unfitted member: ``make_estimator`` called (a class or
    factory), or an estimator instance cloned."""
    if isinstance(make_estimator, type) or not hasattr(make_estimator, "fit"):
        return make_estimator
    from sklearn.base import clone

    return lambda: clone(make_estimator)


def bagged_fields(
    make_estimator: Any, task: PublicTask, n_members: int = 10, seed: int = 0
) -> dict[str, Any]:
    """A bagged ensemble of any regressor as the ``members`` form: ``member_means``
    (K, N) and ``member_variances`` (K, N), K = ``n_members``.

    ``rng = numpy.random.default_rng(seed)``; member k is fitted on the training rows
    ``rng.integers(0, n, n)`` (a bootstrap resample; drawn in member order), and an
    estimator with a ``random_state`` parameter gets ``int(rng.integers(2**31))`` drawn
    right after them. ``make_estimator`` is a class, a factory or an unfitted estimator
    (cloned per member).

    Member k's variance is one constant: the mean squared residual of its prediction on
    its out-of-bag rows (the training rows its resample missed). That measures its error
    on unseen points, so it holds the member's own error besides the noise: an honest,
    high AU. EU is the spread of the member means (:func:`forms.parse`). Training rows
    repeated in the task may sit on both sides of a bag.

    On a classification task the members are classifiers and the form is ``members``
    with ``member_probs`` (K, N, C), each member's ``predict_proba`` over the task's
    classes (a class its resample missed gets probability 0)."""
    if n_members < 2:
        raise UserError(f"n_members: a bagged ensemble needs at least 2 members, got {n_members}")
    make = _member_maker(make_estimator)
    rng = np.random.default_rng(seed)
    X, y = task.X_train, task.y_train
    n = len(y)
    means, variances = [], []
    for k in range(n_members):
        rows = rng.integers(0, n, n)
        member = make()
        if hasattr(member, "get_params") and "random_state" in member.get_params():
            member.set_params(random_state=int(rng.integers(2**31)))
        if task.kind == "classification":
            _check_proba(member)
            member.fit(X[rows], y[rows])
            means.append(_class_probabilities(member, task.X_pool, task))
            continue
        out_of_bag = np.setdiff1d(np.arange(n), rows)
        if out_of_bag.size == 0:
            raise UserError(
                f"member {k}: its resample left no out-of-bag row to measure "
                f"the noise on ({n} training rows)"
            )
        member.fit(X[rows], y[rows])
        residual = y[out_of_bag] - np.asarray(member.predict(X[out_of_bag]), dtype=float)
        means.append(np.asarray(member.predict(task.X_pool), dtype=float))
        variances.append(np.full(task.n_pool, float(np.mean(residual**2))))
    if task.kind == "classification":
        return {"member_probs": np.stack(means), "task_hash": task.task_hash}
    return {
        "member_means": np.stack(means),
        "member_variances": np.stack(variances),
        "task_hash": task.task_hash,
    }
