"""What a method predicts, by task kind, and how the runner takes it (docs/design.md,
"Task kinds").

Each task kind has one prediction type: a frozen class with ``kind``, the names of its
array ``FIELDS`` (required) and ``OPTIONAL`` ones, a constructor that validates them, and
:meth:`Prediction.to_arrays`. The runner never trusts the object a method returned: it
copies the declared fields out of it (:func:`stored`), whatever its class, and the
prediction type validates that copy, which is what is scored and written. A prediction
changed after it was built, an object of another class with the same fields, or complex
values are judged by what is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from udora.oracle.kinds import REGRESSION

LARGEST = 1e150  # the largest magnitude a predicted value may have: its square is finite


class PredictionError(ValueError):
    """A prediction whose arrays break its type's contract; the message names the field."""


def _real_array(owner: str, name: str, value: Any) -> np.ndarray:
    """A float64 copy of ``value``; complex, boolean or non-numeric values are refused."""
    arr = np.asarray(value)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise PredictionError(f"{owner}.{name}: expected real numbers, got dtype {arr.dtype}")
    return np.array(arr, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Prediction:
    """A Gaussian predictive ``N(mean, aleatoric + epistemic)`` per point, original units
    (the regression kind's prediction type).

    Args:
        mean: ``(n,)`` predictive mean ``mu(x)``.
        aleatoric: ``(n,)`` aleatoric variance ``a(x) >= 0``.
        epistemic: ``(n,)`` epistemic variance ``e(x) >= 0``.
        member_means: optional ``(K, n)`` means of the K members or samples that were
            combined (``mean`` is their average for member-based methods).
        joint_epistemic: optional ``(B, tau, tau)`` epistemic covariance at the task's
            batches of points (:mod:`udora.oracle.joint`), from the method's
            ``predict_joint``; the runner fills it, a method's ``predict`` does not.

    Raises:
        PredictionError: a field with the wrong shape, non-real, non-finite or larger than
            :data:`LARGEST` values, a negative variance, or a total variance of 0 at a
            point (the message names the field).
    """

    kind: ClassVar[str] = REGRESSION
    FIELDS: ClassVar[tuple[str, ...]] = ("mean", "aleatoric", "epistemic")
    OPTIONAL: ClassVar[tuple[str, ...]] = ("member_means", "joint_epistemic")
    # the axis over the pool's points of each field; None: a field over batches of points
    POINT_AXES: ClassVar[dict[str, int | None]] = {"joint_epistemic": None}

    mean: np.ndarray
    aleatoric: np.ndarray
    epistemic: np.ndarray
    member_means: np.ndarray | None = None
    joint_epistemic: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = None
        for name in self.FIELDS:
            arr = _real_array("Prediction", name, getattr(self, name))
            if arr.ndim != 1:
                raise PredictionError(f"Prediction.{name}: expected shape (n,), got {arr.shape}")
            if n is not None and arr.shape[0] != n:
                raise PredictionError(f"Prediction.{name}: has {arr.shape[0]} points, mean has {n}")
            n = arr.shape[0]
            if not np.all(np.isfinite(arr)):
                bad = int(np.sum(~np.isfinite(arr)))
                raise PredictionError(f"Prediction.{name}: {bad} of {n} values are not finite")
            if name != "mean" and np.any(arr < 0):
                raise PredictionError(
                    f"Prediction.{name}: variances must be >= 0, min {arr.min():g}"
                )
            object.__setattr__(self, name, arr)
        for name in self.FIELDS:  # their squares and sums must stay finite in float64
            big = np.abs(getattr(self, name)) > LARGEST
            if np.any(big):
                raise PredictionError(
                    f"Prediction.{name}: {int(big.sum())} of {n} values exceed {LARGEST:g} in "
                    "magnitude (their squares overflow); predict in the target's units"
                )
        flat = (self.aleatoric + self.epistemic) <= 0
        if np.any(flat):
            raise PredictionError(
                f"Prediction.aleatoric + epistemic: the total variance is 0 at {int(flat.sum())} "
                f"of {n} points; a Gaussian predictive needs a positive variance"
            )
        if self.member_means is not None:
            mm = _real_array("Prediction", "member_means", self.member_means)
            if mm.ndim != 2 or mm.shape[1] != n or mm.shape[0] < 1:
                raise PredictionError(f"Prediction.member_means: expected (K, {n}), got {mm.shape}")
            if not np.all(np.isfinite(mm)):
                raise PredictionError("Prediction.member_means: values are not finite")
            object.__setattr__(self, "member_means", mm)
        if self.joint_epistemic is not None:
            object.__setattr__(
                self,
                "joint_epistemic",
                check_batch_covariance("Prediction", "joint_epistemic", self.joint_epistemic),
            )

    @property
    def total(self) -> np.ndarray:
        """``(n,)`` total predictive variance ``v = a + e``."""
        return self.aleatoric + self.epistemic

    def __len__(self) -> int:
        return self.mean.shape[0]

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays stored for this prediction (``predictions.npz``): every field that is
        set, under its name."""
        return to_arrays(self)


def check_batch_covariance(owner: str, name: str, value: Any) -> np.ndarray:
    """A float64 copy of covariances over batches, ``(B, tau, tau)``: real, finite,
    symmetric to round-off (``|C - C^T| <= 1e-8 max |C|``; returned symmetrised) and with a
    non-negative diagonal.

    Raises:
        PredictionError: naming ``owner.name`` and what is wrong.
    """
    C = _real_array(owner, name, value)
    owner = f"{owner}.{name}"
    if C.ndim != 3 or C.shape[1] != C.shape[2] or C.shape[0] < 1:
        raise PredictionError(f"{owner}: expected shape (B, tau, tau), got {C.shape}")
    if not np.all(np.isfinite(C)):
        raise PredictionError(f"{owner}: {int(np.sum(~np.isfinite(C)))} values are not finite")
    scale = float(np.max(np.abs(C), initial=0.0))
    if np.max(np.abs(C - C.transpose(0, 2, 1)), initial=0.0) > 1e-8 * scale:
        raise PredictionError(f"{owner}: a covariance must be symmetric")
    if np.any(np.diagonal(C, axis1=1, axis2=2) < 0):
        raise PredictionError(f"{owner}: variances on the diagonal must be >= 0")
    return 0.5 * (C + C.transpose(0, 2, 1))


def attach_joint(prediction: Prediction, returned: Any, idx: np.ndarray) -> Prediction:
    """``prediction`` with the epistemic covariance ``returned`` by ``predict_joint`` at the
    batches ``idx`` (B, tau) of pool points: a (B, tau, tau) covariance whose diagonal is
    the prediction's EU at those points (to ``1e-6`` relative to the batch's largest EU,
    plus ``1e-12``).

    Raises:
        PredictionError: another shape, or a diagonal that is not the pointwise EU (the
            message names the first batch and point).
    """
    idx = np.asarray(idx)
    C = check_batch_covariance("predict_joint", "covariance", returned)
    if C.shape != (*idx.shape, idx.shape[1]):
        raise PredictionError(
            f"predict_joint: expected {idx.shape[0]} batches of {idx.shape[1]} points, "
            f"shape {(*idx.shape, idx.shape[1])}, got {C.shape}"
        )
    e = prediction.epistemic[idx]
    diag = np.diagonal(C, axis1=1, axis2=2)
    tol = 1e-6 * np.max(e, axis=1, keepdims=True) + 1e-12
    bad = np.argwhere(np.abs(diag - e) > tol)
    if bad.size:
        b, i = bad[0]
        raise PredictionError(
            f"predict_joint: the variance of batch {b}, point {i} is {diag[b, i]:.6g}, but "
            f"predict's epistemic variance there is {e[b, i]:.6g}; the diagonal must be "
            "the pointwise EU"
        )
    return replace(prediction, joint_epistemic=C)


def to_arrays(prediction: Any) -> dict[str, np.ndarray]:
    """The set fields of a prediction type's instance, by name."""
    names = (*prediction.FIELDS, *prediction.OPTIONAL)
    return {k: v for k in names if (v := getattr(prediction, k)) is not None}


_TYPES: dict[str, type] = {REGRESSION: Prediction}


def register_prediction_type(cls: type) -> type:
    """Make ``cls`` the prediction type of its ``kind`` (a kind has exactly one)."""
    known = _TYPES.get(cls.kind)
    if known is not None and known is not cls:
        raise ValueError(f"task kind {cls.kind!r} already has prediction type {known.__name__}")
    _TYPES[cls.kind] = cls
    return cls


def unregister_prediction_type(kind: str) -> None:
    """Drop a kind's prediction type (tests that register a kind of their own)."""
    if kind != REGRESSION:
        _TYPES.pop(kind, None)


def prediction_type(kind: str) -> type:
    """The prediction type of task kind ``kind``; an unknown kind lists the known ones."""
    try:
        return _TYPES[kind]
    except KeyError:
        raise ValueError(
            f"no prediction type for task kind {kind!r}; known: {', '.join(sorted(_TYPES))}"
        ) from None


def stored(returned: Any, kind: str, n: int) -> Any:
    """The prediction the runner keeps of what a method returned for ``n`` points.

    The kind's fields are copied out of ``returned`` (any object that has them; a field
    over batches of points, such as ``joint_epistemic``, never: the runner fills it from
    the method's ``predict_joint`` and checks it against the batches), then
    validated by the kind's prediction type, and every array must describe ``n`` points
    (its last axis, or the axis the type's ``POINT_AXES`` names for that field). What
    this returns is what is scored and written.

    Raises:
        PredictionError: a missing field, a field that breaks the type's contract, or a
            prediction of another number of points (the message names the field).
    """
    cls = prediction_type(kind)
    if returned is None:
        raise PredictionError(f"predict returned None, expected a {cls.__name__}")
    arrays: dict[str, Any] = {}
    axes = getattr(cls, "POINT_AXES", {})  # the axis over the points, the last by default
    for name in (*cls.FIELDS, *cls.OPTIONAL):
        if name in axes and axes[name] is None:  # over batches: the runner fills it
            continue
        try:
            value = getattr(returned, name)
        except AttributeError:
            if name in cls.FIELDS:
                raise PredictionError(
                    f"predict returned a {type(returned).__name__} without the field "
                    f"{name!r} of a {cls.__name__}"
                ) from None
            continue
        if value is not None:
            arrays[name] = _real_array(cls.__name__, name, value)
    out = cls(**arrays)
    for name, arr in to_arrays(out).items():
        axis = axes.get(name, -1)
        points = arr.shape[axis] if arr.ndim > max(axis, -axis - 1) else 0
        if points != n:
            raise PredictionError(
                f"{cls.__name__}.{name}: describes {points} points, the pool has {n}"
            )
    return out
