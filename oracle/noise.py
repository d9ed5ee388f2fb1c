"""Heteroscedastic observation noise from the average feature rank (docs/design.md, "Noise").

For a pool ``Z`` (N, d) of standardised covariates, ``q_j(x)`` is the 0-based rank of
``x_j`` among the pool's j-th column divided by ``N - 1`` (ties get their average rank),
``r_raw(x) = mean_j q_j(x)``, and ``r(x)`` rescales ``r_raw`` min-max over the pool to
[0, 1]. The noise standard deviation (standardised target units) is

    sigma_eps(x) = std_min + (std_max - std_min) * r(x).

Points outside the pool get the rank they would take if inserted (clipped to [0, 1]),
so a method-side oracle can evaluate the same noise model anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def average_rank(sorted_col: np.ndarray, values: np.ndarray) -> np.ndarray:
    """0-based average rank of ``values`` (m,) within ``sorted_col`` (N,), as floats (m,).

    For a value that occurs ``c >= 1`` times it is the mean of the c tied positions;
    for an unseen value it is its insertion position minus 1/2.
    """
    left = np.searchsorted(sorted_col, values, side="left")
    right = np.searchsorted(sorted_col, values, side="right")
    return (left + right - 1) / 2.0


@dataclass(frozen=True)
class NoiseModel:
    """The rank-based noise model of one pool.

    Attributes:
        sorted_pool: (N, d) each standardised pool column sorted ascending.
        r_min, r_max: range of ``r_raw`` over the pool (for the min-max rescaling).
        std_min, std_max: noise std at r = 0 and r = 1, standardised target units.
    """

    sorted_pool: np.ndarray
    r_min: float
    r_max: float
    std_min: float
    std_max: float

    @classmethod
    def from_pool(cls, Z: np.ndarray, std_min: float, std_max: float) -> NoiseModel:
        """Fit the rank tables on the standardised pool ``Z`` (N, d)."""
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[0] < 2:
            raise ValueError(f"NoiseModel: expected a pool of shape (N >= 2, d), got {Z.shape}")
        if not 0.0 < std_min <= std_max:
            raise ValueError(f"NoiseModel: need 0 < std_min <= std_max, got {std_min}, {std_max}")
        sorted_pool = np.sort(Z, axis=0)
        r = _raw_score(sorted_pool, Z)
        return cls(sorted_pool, float(r.min()), float(r.max()), float(std_min), float(std_max))

    def rank_score(self, Z: np.ndarray) -> np.ndarray:
        """``r(x)`` in [0, 1] for standardised inputs ``Z`` (m, d); returns (m,)."""
        raw = _raw_score(self.sorted_pool, np.asarray(Z, dtype=np.float64))
        span = self.r_max - self.r_min
        if span <= 0.0:  # every pool point has the same average rank
            return np.zeros(raw.shape[0])
        return np.clip((raw - self.r_min) / span, 0.0, 1.0)

    def std(self, Z: np.ndarray) -> np.ndarray:
        """``sigma_eps(x)`` for standardised inputs ``Z`` (m, d); returns (m,)."""
        return self.std_min + (self.std_max - self.std_min) * self.rank_score(Z)


def _raw_score(sorted_pool: np.ndarray, Z: np.ndarray) -> np.ndarray:
    n, d = sorted_pool.shape
    if Z.ndim != 2 or Z.shape[1] != d:
        raise ValueError(f"NoiseModel: expected inputs of shape (m, {d}), got {Z.shape}")
    ranks = [average_rank(sorted_pool[:, j], Z[:, j]) for j in range(d)]
    return np.mean(np.stack(ranks, axis=1), axis=1) / (n - 1)
