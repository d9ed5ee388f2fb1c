"""Covariate shift: the Mahalanobis five-bin training sampler (docs/design.md, "Shift").

Each standardised pool point gets its Mahalanobis distance to the pool mean under the
pool covariance (pseudo-inverse when singular). Sorting by distance and cutting into five
equal-count groups gives the quintile bins, innermost first. A preset's fractions set how
many of the n training draws come from each bin (largest-remainder rounding, so the
quotas sum to n). Within a bin, draws are without replacement; a quota larger than its
bin takes every point once and fills the rest with replacement (repeated measurements
of the same input, each with its own noise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_BINS = 5


def mahalanobis_distance(Z: np.ndarray) -> np.ndarray:
    """Distance of each row of ``Z`` (N, d) to the mean of ``Z``; returns (N,)."""
    Z = np.asarray(Z, dtype=np.float64)
    centred = Z - Z.mean(axis=0)
    cov = np.atleast_2d(np.cov(centred, rowvar=False))
    prec = np.linalg.pinv(cov, hermitian=True)
    sq = np.einsum("ij,jk,ik->i", centred, prec, centred)
    return np.sqrt(np.maximum(sq, 0.0))


def quintile_bins(distance: np.ndarray) -> np.ndarray:
    """Bin index 0 (innermost) .. 4 (outermost) of each point, (N,) -> (N,) int.

    Bins hold floor or ceil of N/5 points; ties in distance are broken by pool order.
    """
    n = distance.shape[0]
    order = np.argsort(distance, kind="stable")
    bins = np.empty(n, dtype=np.int64)
    bins[order] = (np.arange(n) * N_BINS) // n
    return bins


def bin_quotas(fractions: tuple[float, ...] | np.ndarray, n: int) -> np.ndarray:
    """Integer draws per bin, (5,), summing to ``n`` (largest remainder rounding)."""
    frac = np.asarray(fractions, dtype=np.float64)
    if frac.shape != (N_BINS,) or np.any(frac < 0) or not np.isclose(frac.sum(), 1.0):
        raise ValueError(f"shift: expected 5 non-negative fractions summing to 1, got {frac}")
    raw = frac * n
    quotas = np.floor(raw).astype(np.int64)
    short = n - quotas.sum()
    order = np.argsort(-(raw - quotas), kind="stable")
    quotas[order[:short]] += 1
    return quotas


@dataclass(frozen=True)
class ShiftSample:
    """A training sample: ``idx`` (n,) pool indices (may repeat), ``bin_counts`` (5,)."""

    idx: np.ndarray
    bin_counts: np.ndarray
    n_unique: int
    filled_with_replacement: tuple[int, ...]  # bins whose quota exceeded their size


def sample_training_indices(
    distance: np.ndarray, fractions: tuple[float, ...], n: int, rng: np.random.Generator
) -> ShiftSample:
    """Draw ``n`` pool indices with the bin fractions of a preset.

    Args:
        distance: (N,) Mahalanobis distances of the pool.
        fractions: five bin fractions, innermost first.
        n: training-sample size.
        rng: the run's training-sample Generator.
    """
    if n <= 0:
        raise ValueError(f"shift: n_train must be positive, got {n}")
    bins = quintile_bins(distance)
    quotas = bin_quotas(fractions, n)
    parts, refilled = [], []
    for b in range(N_BINS):
        members = np.flatnonzero(bins == b)
        q = int(quotas[b])
        if q <= members.size:
            parts.append(rng.choice(members, size=q, replace=False))
        else:
            refilled.append(b)
            extra = rng.choice(members, size=q - members.size, replace=True)
            parts.append(np.concatenate([rng.permutation(members), extra]))
    idx = np.concatenate(parts).astype(np.int64)
    counts = np.bincount(bins[idx], minlength=N_BINS)
    return ShiftSample(idx, counts, int(np.unique(idx).size), tuple(refilled))
