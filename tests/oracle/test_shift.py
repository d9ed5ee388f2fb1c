"""The Mahalanobis five-bin sampler: distances, quintile bins, quotas, replacement fill."""

import numpy as np
import pytest
from scipy.spatial.distance import mahalanobis

from udora.oracle.shift import (
    bin_quotas,
    mahalanobis_distance,
    quintile_bins,
    sample_training_indices,
)


def test_distance_matches_scipy():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(80, 3)) @ np.array([[1.0, 0.3, 0.0], [0.0, 1.0, 0.5], [0.0, 0.0, 0.2]])
    VI = np.linalg.inv(np.cov(Z, rowvar=False))
    expected = [mahalanobis(z, Z.mean(axis=0), VI) for z in Z]
    np.testing.assert_allclose(mahalanobis_distance(Z), expected, rtol=1e-10)


def test_singular_covariance_uses_pseudo_inverse():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(50, 2))
    Z = np.column_stack([a, a[:, 0] + a[:, 1]])  # rank 2
    d = mahalanobis_distance(Z)
    np.testing.assert_allclose(d, mahalanobis_distance(a), rtol=1e-8)


def test_bins_are_quintiles_innermost_first():
    rng = np.random.default_rng(2)
    dist = rng.exponential(size=503)
    bins = quintile_bins(dist)
    sizes = np.bincount(bins, minlength=5)
    assert sizes.sum() == 503 and sizes.max() - sizes.min() <= 1
    for b in range(4):
        assert dist[bins == b].max() <= dist[bins == b + 1].min()
    edges = np.quantile(dist, [0.2, 0.4, 0.6, 0.8])
    for b in range(5):  # each bin lies within its quantile edges (up to one point)
        inside = dist[bins == b]
        lo = -np.inf if b == 0 else edges[b - 1]
        hi = np.inf if b == 4 else edges[b]
        assert np.mean((inside >= lo) & (inside <= hi)) > 0.98


@pytest.mark.parametrize(
    "fractions",
    [(0.2,) * 5, (0.4, 0.25, 0.15, 0.1, 0.1), (0.5, 0.3, 0.15, 0.05, 0.0), (0.4, 0.1, 0, 0.1, 0.4)],
)
def test_realised_counts_equal_quotas_without_replacement(fractions):
    rng = np.random.default_rng(3)
    dist = rng.exponential(size=1000)
    sample = sample_training_indices(dist, fractions, 333, rng)
    quotas = bin_quotas(fractions, 333)
    assert quotas.sum() == 333 and np.all(np.abs(quotas - np.asarray(fractions) * 333) < 1)
    np.testing.assert_array_equal(sample.bin_counts, quotas)
    assert sample.n_unique == 333 and sample.filled_with_replacement == ()


def test_short_bin_takes_every_point_then_fills_with_replacement():
    rng = np.random.default_rng(4)
    dist = rng.exponential(size=100)  # bins of 20
    sample = sample_training_indices(dist, (0.5, 0.3, 0.1, 0.1, 0.0), 80, rng)
    bins = quintile_bins(dist)
    np.testing.assert_array_equal(sample.bin_counts, [40, 24, 8, 8, 0])
    assert sample.filled_with_replacement == (0, 1)
    inner = sample.idx[bins[sample.idx] == 0]
    assert set(inner) == set(np.flatnonzero(bins == 0))  # every point of bin 0 taken
    third = sample.idx[bins[sample.idx] == 2]
    assert len(set(third)) == 8  # a bin with enough points is drawn without replacement
    assert sample.n_unique == 20 + 20 + 8 + 8


def test_fractions_must_sum_to_one():
    with pytest.raises(ValueError, match="summing to 1"):
        bin_quotas((0.3, 0.3, 0.3, 0.3, 0.3), 10)
