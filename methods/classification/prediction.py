"""What a classification method predicts (the ``classification`` kind's prediction type;
docs/design.md, "Classification: methods").

Class probabilities ``q`` (n, C) over every class of the task (rows sum to 1 within
:data:`SUM_TOLERANCE`), and the method's own aleatoric and epistemic estimates (n,) on the
log-loss scale, in nats: for members or posterior samples ``p_k`` (K, n, C) with mean
``q``, the expected entropy and the mutual information,

    aleatoric = (1/K) sum_k H(p_k),      epistemic = H(q) - aleatoric,

so their sum is ``H(q)``. Brier-scale estimates (``1 - ||p||^2`` parts, summed over the
classes like the oracle's Brier targets) come from the members,

    aleatoric_brier = 1 - (1/K) sum_k ||p_k||^2,
    epistemic_brier = (1/K) sum_k ||p_k||^2 - ||q||^2,

or from a closed form the method states (a Dirichlet has one); a method with neither
leaves them unset and its Brier-side metrics are empty, never invented. Probabilities are
floored at :data:`~udora.oracle.classification.targets.EPS` inside every log, observed
losses and targets alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from udora.methods.prediction import PredictionError, _real_array, register_prediction_type
from udora.oracle.classification.preset import CLASSIFICATION
from udora.oracle.classification.targets import entropy

SUM_TOLERANCE = 1e-6
"""How far a row of class probabilities may sum from 1."""


def _check_probabilities(owner: str, name: str, value: Any) -> np.ndarray:
    """A float64 copy of class probabilities (..., C): finite, in [0, 1], rows summing to 1."""
    p = _real_array(owner, name, value)
    if p.ndim < 2 or p.shape[-1] < 2:
        raise PredictionError(
            f"{owner}.{name}: expected class probabilities (..., C >= 2), got {p.shape}"
        )
    if not np.all(np.isfinite(p)):
        bad = int(np.sum(~np.isfinite(p)))
        raise PredictionError(f"{owner}.{name}: {bad} values are not finite")
    if np.any(p < 0) or np.any(p > 1):
        raise PredictionError(
            f"{owner}.{name}: probabilities must lie in [0, 1], got min {p.min():g}, "
            f"max {p.max():g}"
        )
    off = np.abs(p.sum(axis=-1) - 1.0)
    if np.any(off > SUM_TOLERANCE):
        raise PredictionError(
            f"{owner}.{name}: {int(np.sum(off > SUM_TOLERANCE))} rows do not sum to 1 "
            f"(largest deviation {off.max():.3g}, tolerance {SUM_TOLERANCE:g})"
        )
    return p


def _check_nonnegative(owner: str, name: str, value: Any, n: int) -> np.ndarray:
    arr = _real_array(owner, name, value)
    if arr.shape != (n,):
        raise PredictionError(f"{owner}.{name}: expected shape ({n},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.isfinite(arr)))
        raise PredictionError(f"{owner}.{name}: {bad} of {n} values are not finite")
    if np.any(arr < 0):
        raise PredictionError(f"{owner}.{name}: must be >= 0, min {arr.min():g}")
    return arr


@dataclass(frozen=True, eq=False)
class ClassificationPrediction:
    """Class probabilities and the method's AU/EU per point.

    Args:
        prob: ``(n, C)`` class probabilities ``q``.
        aleatoric: ``(n,)`` aleatoric estimate in nats (expected entropy or the method's
            own analogue), ``>= 0``.
        epistemic: ``(n,)`` epistemic estimate in nats (mutual information or analogue),
            ``>= 0``.
        member_probs: optional ``(K, n, C)`` probabilities of the K members or samples.
        aleatoric_brier, epistemic_brier: optional ``(n,)`` Brier-scale estimates, set
            together; derived from ``member_probs`` when those are given and these are not.

    Raises:
        PredictionError: a field of the wrong shape, non-finite, negative, probabilities
            outside [0, 1] or rows that do not sum to 1 (the message names the field).
    """

    kind: ClassVar[str] = CLASSIFICATION
    FIELDS: ClassVar[tuple[str, ...]] = ("prob", "aleatoric", "epistemic")
    OPTIONAL: ClassVar[tuple[str, ...]] = ("member_probs", "aleatoric_brier", "epistemic_brier")
    # The axis of each field that runs over the points (the last axis where not listed).
    POINT_AXES: ClassVar[dict[str, int]] = {"prob": 0, "member_probs": 1}

    prob: np.ndarray
    aleatoric: np.ndarray
    epistemic: np.ndarray
    member_probs: np.ndarray | None = None
    aleatoric_brier: np.ndarray | None = None
    epistemic_brier: np.ndarray | None = None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        prob = _check_probabilities(owner, "prob", self.prob)
        if prob.ndim != 2:
            raise PredictionError(f"{owner}.prob: expected shape (n, C), got {prob.shape}")
        n, C = prob.shape
        object.__setattr__(self, "prob", prob)
        for name in ("aleatoric", "epistemic"):
            object.__setattr__(self, name, _check_nonnegative(owner, name, getattr(self, name), n))
        if self.member_probs is not None:
            mp = _check_probabilities(owner, "member_probs", self.member_probs)
            if mp.ndim != 3 or mp.shape[1:] != (n, C):
                raise PredictionError(
                    f"{owner}.member_probs: expected (K, {n}, {C}), got {mp.shape}"
                )
            object.__setattr__(self, "member_probs", mp)
        given = [self.aleatoric_brier is not None, self.epistemic_brier is not None]
        if any(given) and not all(given):
            raise PredictionError(f"{owner}.aleatoric_brier, epistemic_brier: set both or neither")
        if all(given):
            for name in ("aleatoric_brier", "epistemic_brier"):
                value = _check_nonnegative(owner, name, getattr(self, name), n)
                object.__setattr__(self, name, value)
        elif self.member_probs is not None:
            au, eu = brier_split(self.member_probs)
            object.__setattr__(self, "aleatoric_brier", au)
            object.__setattr__(self, "epistemic_brier", eu)

    @property
    def total(self) -> np.ndarray:
        """``(n,)`` total uncertainty on the log scale, ``aleatoric + epistemic``."""
        return self.aleatoric + self.epistemic

    @property
    def n_classes(self) -> int:
        return int(self.prob.shape[1])

    def __len__(self) -> int:
        return int(self.prob.shape[0])

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays stored for this prediction: every field that is set, by name."""
        names = (*self.FIELDS, *self.OPTIONAL)
        return {k: v for k in names if (v := getattr(self, k)) is not None}

    @classmethod
    def from_members(
        cls, member_probs: np.ndarray, *, keep_members: bool = True
    ) -> ClassificationPrediction:
        """The prediction of K members or samples ``(K, n, C)``: their mean, the expected
        entropy as AU and the mutual information as EU, and the Brier-scale parts
        (module docstring); ``keep_members=False`` leaves ``member_probs`` unset (many
        posterior samples, too large to store with every run)."""
        mp = _check_probabilities(cls.__name__, "member_probs", member_probs)
        if mp.ndim != 3:
            raise PredictionError(
                f"{cls.__name__}.member_probs: expected (K, n, C), got {mp.shape}"
            )
        prob = mp.mean(axis=0)
        au = entropy(mp).mean(axis=0)
        eu = np.maximum(entropy(prob) - au, 0.0)  # >= 0 by concavity; round-off only
        if keep_members:
            return cls(prob=prob, aleatoric=au, epistemic=eu, member_probs=mp)
        au_b, eu_b = brier_split(mp)
        return cls(
            prob=prob, aleatoric=au, epistemic=eu, aleatoric_brier=au_b, epistemic_brier=eu_b
        )

    @classmethod
    def from_moments(
        cls, prob: np.ndarray, expected_entropy: np.ndarray, expected_square: np.ndarray
    ) -> ClassificationPrediction:
        """The prediction of a posterior known by its moments: ``pbar`` ``(n, C)``
        (renormalised against round-off), ``E H(p_f)`` and ``E ||p_f||^2`` ``(n,)``; AU the
        expected entropy, EU ``H(pbar) - AU``, Brier parts ``1 - E ||p_f||^2`` and
        ``E ||p_f||^2 - ||pbar||^2`` (each clipped at 0 against round-off)."""
        pbar = np.asarray(prob, np.float64)
        pbar = pbar / pbar.sum(axis=1, keepdims=True)
        au, sq = np.asarray(expected_entropy, np.float64), np.asarray(expected_square, np.float64)
        return cls(
            prob=pbar,
            aleatoric=au,
            epistemic=np.maximum(entropy(pbar) - au, 0.0),
            aleatoric_brier=np.maximum(1.0 - sq, 0.0),
            epistemic_brier=np.maximum(sq - np.sum(pbar * pbar, axis=1), 0.0),
        )


def softmax_probabilities(logits: Any) -> np.ndarray:
    """Class probabilities ``(..., C)`` float64 of logits ``(..., C)`` (any float dtype):
    the softmax taken in float64, so rows sum to 1 to round-off."""
    from scipy.special import softmax

    return softmax(np.asarray(logits, dtype=np.float64), axis=-1)


def check_labels(y: Any, n_classes: int) -> np.ndarray:
    """Training labels ``(n,)`` as int64 class codes ``0..n_classes-1``.

    Raises:
        ValueError: a label that is not one of the codes (names the first).
    """
    y = np.asarray(y)
    codes = np.rint(y).astype(np.int64) if y.size else y.astype(np.int64)
    bad = np.flatnonzero((codes != y) | (codes < 0) | (codes >= n_classes))
    if bad.size:
        raise ValueError(
            f"y: expected class codes 0..{n_classes - 1}, got {y[bad[0]].item()!r} at row {bad[0]}"
        )
    return codes


def brier_split(member_probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Brier-scale AU and EU ``(n,)`` of members ``(K, n, C)`` (module docstring); their
    sum is ``1 - ||q||^2`` with ``q`` the members' mean."""
    mp = np.asarray(member_probs, dtype=np.float64)
    mean_square = np.mean(np.sum(mp * mp, axis=-1), axis=0)
    q = mp.mean(axis=0)
    return np.maximum(1.0 - mean_square, 0.0), np.maximum(mean_square - np.sum(q * q, axis=-1), 0.0)


register_prediction_type(ClassificationPrediction)
