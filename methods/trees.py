"""Shared pieces of the tree methods (NGBoost and CatBoost): target scaling, row draws, seeds,
NGBoost's base learner (:class:`LeanTree`) and its models that stop when a fit diverges
(:class:`FiniteSteps`).

Tree learners split on feature order, so inputs stay in original units; only the target
is standardised (optionally): ``y~ = (y - y_mu) / y_sd``, reported back as
``mu = y_mu + y_sd mu~`` and ``v = y_sd^2 v~``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Iterator

import numpy as np
import sklearn
from sklearn.tree import DecisionTreeRegressor

from udora.oracle.standardise import Standardiser

# Library seeds are drawn below 2^31 - 1: the largest value every backend accepts.
_SEED_HIGH = 2**31 - 1


def target_scaler(X: np.ndarray, y: np.ndarray, standardize_y: bool) -> Standardiser:
    """A :class:`Standardiser` for ``y`` ``(n,)``; the identity on y when ``standardize_y`` is off.

    Only its target half is used by the tree methods (``X`` ``(n, d)`` fixes the shapes).
    """
    scaler = Standardiser.fit(X, y)
    if standardize_y:
        return scaler
    return Standardiser(x_mean=scaler.x_mean, x_sd=scaler.x_sd, y_mean=0.0, y_sd=1.0)


def library_seeds(rng: np.random.Generator, k: int) -> list[int]:
    """``k`` integer seeds for library ``random_state``/``random_seed`` arguments."""
    return [int(s) for s in rng.integers(0, _SEED_HIGH, size=k)]


def resample_rows(
    n: int, fraction: float, replace: bool, k: int, rng: np.random.Generator
) -> np.ndarray:
    """``(k, m)`` row indices into ``n`` rows, ``m = max(1, round(fraction * n))`` per member.

    Each row of the result is one member's draw, with or without replacement.
    """
    m = max(1, round(fraction * n))
    return np.stack([rng.choice(n, size=m, replace=replace) for _ in range(k)])


def validation_split(
    n: int, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted ``(fit_rows, val_rows)`` of ``n`` rows; ``round(fraction * n)`` held out.

    At least one row is held out and at least two are kept for fitting.
    """
    n_val = min(max(1, round(fraction * n)), n - 2)
    if n_val < 1:
        raise ValueError(f"a validation split needs at least 3 rows, got {n}")
    perm = rng.permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


@contextlib.contextmanager
def scratch_cwd() -> Iterator[None]:
    """Run the body in a fresh temporary working directory, then restore and delete it.

    ``catboost.sample_gaussian_process`` builds its own regressors without
    ``allow_writing_files=False``, so they write ``catboost_info/`` into the working
    directory. The working directory is process-wide: do not call this from threads.
    """
    previous = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="udora-catboost-") as scratch:
        os.chdir(scratch)
        try:
            yield
        finally:
            os.chdir(previous)


class LeanTree(DecisionTreeRegressor):
    """scikit-learn's regression tree without its per-call checks, for NGBoost's loop.

    NGBoost clones, fits and predicts a tree for each parameter at each of its
    ``n_estimators`` iterations, on the same clean float arrays; there scikit-learn's
    input validation, parameter validation and ``inspect``-based parameter listing took
    about 40 % of an ``ngboost_bag`` fit. This subclass converts ``X`` to the float32,
    C-ordered array the tree builder uses anyway, and calls ``fit`` and ``predict`` with
    scikit-learn's own ``check_input=False`` and ``skip_parameter_validation``; the
    parameter names are listed once per class. The trees (and so every prediction) are
    the same as ``DecisionTreeRegressor``'s, bit for bit
    (``tests/methods/test_trees_common.py``).
    """

    @classmethod
    @functools.cache
    def _get_param_names(cls) -> list[str]:
        return DecisionTreeRegressor._get_param_names.__func__(cls)

    def fit(self, X, y, sample_weight=None, check_input=True):
        X = np.ascontiguousarray(X, dtype=np.float32)
        with sklearn.config_context(skip_parameter_validation=True):
            return super().fit(X, y, sample_weight=sample_weight, check_input=False)

    def predict(self, X, check_input=True):
        # the fitted tree's own predict: what DecisionTreeRegressor.predict returns for one
        # output after its fitted-check and tag look-ups (two thirds of its time here)
        X = np.ascontiguousarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:  # the tree reads columns blind
            raise ValueError(
                f"X has shape {X.shape}; the tree was fitted on {self.n_features_in_} features"
            )
        return self.tree_.predict(X)[:, 0]


class FiniteSteps:
    """Mixin for an NGBoost model (``NGBoost``, ``NGBRegressor``): a boosting step whose
    natural gradient is not finite (a fit that diverged) raises FloatingPointError instead
    of looping forever.

    NGBoost's line search (ngboost 0.5, ``NGBoost.line_search``) halves the step until the
    step's mean norm falls under ``tol`` or the loss improves; with a NaN in the gradient
    the norm is NaN, which is never under ``tol``, and the step reaches 0 and stays there:
    a tuning trial of ``ngboost_bag`` on credit_default ran an hour in that loop.
    """

    def line_search(self, resids, start, Y, sample_weight=None, scale_init=1):
        if not np.all(np.isfinite(resids)):
            raise FloatingPointError(
                "NGBoost diverged: a boosting step's gradient is not finite (a smaller "
                "learning_rate or max_depth may fit)"
            )
        return super().line_search(resids, start, Y, sample_weight, scale_init)
