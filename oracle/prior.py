"""What a method may know about its task: :class:`TaskKnowledge`, and the task's prior.

Every method's ``fit`` receives a frozen :class:`TaskKnowledge` (neural_testbed's
``PriorKnowledge`` in spirit): the covariates' names, d and n for every method, and the
generating :class:`GPPrior` only for reference methods that declare ``uses_task_prior``.
Nothing here reads the oracle's targets. Kept free of JAX so that the method contract can
import it cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from udora.oracle.noise import NoiseModel
from udora.oracle.standardise import Standardiser


@dataclass(frozen=True)
class GPPrior:
    """The task's own GP prior, handed to reference methods (e.g. ``gp_oracle``).

    ``kernel`` (component dicts) and ``mean_value`` are in standardised units, the units
    of ``standardiser`` (the statistics of the preset's whole table, as in the kernel fit);
    ``noise`` is the pool's rank-based noise model in standardised target units.
    """

    kernel: tuple[dict[str, Any], ...]
    mean_value: float
    standardiser: Standardiser
    noise: NoiseModel

    def noise_std(self, X: np.ndarray) -> np.ndarray:
        """sigma_eps at original-unit inputs ``X`` (m, d), original target units; (m,)."""
        s = self.standardiser
        return s.y_sd * self.noise.std(s.x(np.asarray(X, dtype=np.float64)))


@dataclass(frozen=True)
class TaskKnowledge:
    """What a method may know about its task besides the training data; handed to ``fit``.

    ``feature_names`` (d,) and ``d`` describe the covariates, ``n`` is the training sample
    size. ``prior`` (the generating GP prior, noise model and standardisation) is set only
    for reference methods that declare ``uses_task_prior`` (e.g. ``gp_oracle``); every
    other method gets None, so no method sees oracle quantities by accident.
    ``classes`` (C,) names a classification task's classes, labels ``0..C-1`` (empty for
    regression): a class may be missing from the training sample, so C comes from here.
    """

    feature_names: tuple[str, ...]
    d: int
    n: int
    prior: Any = None  # a GPPrior (regression) or the classification kind's prior
    classes: tuple[str, ...] = ()

    @property
    def n_classes(self) -> int:
        """C, the number of classes (0 for regression)."""
        return len(self.classes)
