"""The rank-based noise model against scipy ranks and its defining formula."""

import numpy as np
import pytest
from scipy.stats import rankdata

from udora.oracle.noise import NoiseModel


def test_rank_score_matches_scipy_average_ranks_with_ties():
    rng = np.random.default_rng(0)
    Z = np.column_stack([rng.integers(0, 5, 200), rng.normal(size=200), rng.integers(0, 2, 200)])
    model = NoiseModel.from_pool(Z.astype(float), std_min=0.2, std_max=0.6)
    q = np.column_stack([(rankdata(Z[:, j], method="average") - 1) / 199 for j in range(3)])
    raw = q.mean(axis=1)
    r = (raw - raw.min()) / (raw.max() - raw.min())
    np.testing.assert_allclose(model.rank_score(Z), r, rtol=0, atol=1e-14)
    np.testing.assert_allclose(model.std(Z), 0.2 + 0.4 * r, rtol=0, atol=1e-14)
    assert model.std(Z).min() == pytest.approx(0.2) and model.std(Z).max() == pytest.approx(0.6)


def test_points_outside_the_pool_are_clipped_and_monotone():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(100, 2))
    model = NoiseModel.from_pool(Z, std_min=1.0, std_max=3.0)
    line = np.column_stack([np.linspace(-5, 5, 50)] * 2)
    s = model.std(line)
    assert np.all(np.diff(s) >= 0)
    assert s[0] == 1.0 and s[-1] == 3.0


def test_bad_noise_settings_raise():
    with pytest.raises(ValueError, match="std_min <= std_max"):
        NoiseModel.from_pool(np.zeros((4, 1)) + np.arange(4)[:, None], std_min=0.5, std_max=0.1)
    model = NoiseModel.from_pool(np.arange(8.0).reshape(4, 2), 0.1, 0.2)
    with pytest.raises(ValueError, match=r"shape \(m, 2\)"):
        model.std(np.zeros((3, 3)))
