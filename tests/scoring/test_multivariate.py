"""Block energy and variogram scores: blocks against brute-force neighbours, scores against
the formulas computed directly with NumPy loops, and a fixed-seed propriety check."""

import numpy as np
import pytest

from udora.scoring.multivariate import (
    block_ensemble,
    block_score_values,
    block_scores,
    nearest_blocks,
)


def test_blocks_are_anchor_and_its_nearest_neighbours():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) * np.array([1.0, 10.0, 0.1])
    X = np.column_stack([X, np.full(200, 7.0)])  # a constant column is ignored
    blocks = nearest_blocks(X, n_blocks=30, size=4, rng=np.random.default_rng(1))
    assert blocks.shape == (30, 4)
    assert len(set(blocks[:, 0])) == 30  # anchors without replacement
    Z = (X[:, :3] - X[:, :3].mean(0)) / X[:, :3].std(0)
    for row in blocks:
        d = np.linalg.norm(Z - Z[row[0]], axis=1)
        d[row[0]] = np.inf
        assert set(row[1:]) == set(np.argsort(d)[:3])


def test_blocks_of_duplicated_points_keep_the_anchor_once():
    """Five copies of each point: the nearest 3 may or may not include the anchor itself;
    either way the block is the anchor, then two other copies of it."""
    rng = np.random.default_rng(3)
    X = np.repeat(rng.normal(size=(40, 2)), 5, axis=0)
    blocks = nearest_blocks(X, n_blocks=60, size=3, rng=np.random.default_rng(2))
    for row in blocks:
        assert len(set(row)) == 3 and row[0] not in row[1:]
        np.testing.assert_array_equal(X[row[1:]], X[[row[0], row[0]]])


def test_block_ensemble_is_members_plus_their_noise():
    rng = np.random.default_rng(2)
    m = rng.normal(size=(3, 10))
    blocks = np.array([[0, 1, 2], [5, 6, 9]])
    x0 = block_ensemble(m, np.zeros(10), blocks, 4, np.random.default_rng(0))
    assert x0.shape == (2, 12, 3)
    np.testing.assert_array_equal(x0[1, 4:8], np.repeat(m[1:2, [5, 6, 9]], 4, axis=0))
    a = np.full(10, 0.25)
    x = block_ensemble(m, a, blocks, 20000, np.random.default_rng(0))
    # Monte Carlo, 60,000 samples: the sample variance of a block point is the member
    # variance (population form) plus a; tolerance 3% of it.
    want = m[:, 5].var() + 0.25
    assert x[1, :, 0].var() == pytest.approx(want, rel=0.03)


def _energy(obs, fct):
    M = fct.shape[0]
    first = np.mean([np.linalg.norm(f - obs) for f in fct])
    pairs = sum(np.linalg.norm(fct[i] - fct[j]) for i in range(M) for j in range(M))
    return first - pairs / (2 * M * (M - 1))


def _variogram(obs, fct, p=0.5):
    M = fct.shape[0]
    d_o = np.abs(obs[:, None] - obs[None, :]) ** p
    d_f = [np.abs(f[:, None] - f[None, :]) ** p for f in fct]
    first = np.mean([np.sum((df - d_o) ** 2) for df in d_f])
    pairs = sum(np.sum((d_f[i] - d_f[j]) ** 2) for i in range(M) for j in range(M))
    return first - pairs / (2 * M * (M - 1))


def test_block_scores_equal_the_fair_estimators_by_hand():
    rng = np.random.default_rng(3)
    N, K = 40, 5
    y, m = rng.normal(size=N), rng.normal(size=(K, N))
    a = rng.uniform(0.1, 1.0, size=N)
    blocks = nearest_blocks(rng.normal(size=(N, 2)), 7, 3, np.random.default_rng(4))
    got = block_scores(y, m, a, blocks, samples=12, rng=np.random.default_rng(5))
    x = block_ensemble(m, a, blocks, 3, np.random.default_rng(5))  # ceil(12 / 5) = 3 draws
    assert x.shape[1] == 15
    es = np.mean([_energy(y[b], x[i]) for i, b in enumerate(blocks)])
    vs = np.mean([_variogram(y[b], x[i]) for i, b in enumerate(blocks)])
    assert got["energy_score_block"] == pytest.approx(es, rel=1e-12)
    assert got["variogram_score_block"] == pytest.approx(vs, rel=1e-12)
    # each block's own scores, as meta averages them over subsets of the blocks
    each = block_score_values(y, m, a, blocks, samples=12, rng=np.random.default_rng(5))
    for i, b in enumerate(blocks):
        assert each["energy_score_block"][i] == pytest.approx(_energy(y[b], x[i]), rel=1e-12)
        assert each["variogram_score_block"][i] == pytest.approx(_variogram(y[b], x[i]), rel=1e-12)


@pytest.mark.parametrize("offset", [0.0, 50.0])  # a far-off block mean: the Gram form centres
def test_the_gram_energy_score_equals_scoringrules_fair_form(offset):
    import scoringrules as sr

    from udora.scoring.multivariate import energy_score_fair

    rng = np.random.default_rng(11)
    x = offset + rng.normal(size=(30, 70, 5)) * rng.uniform(0.01, 2.0, size=(30, 1, 1))
    obs = offset + rng.normal(size=(30, 5))
    want = sr.es_ensemble(obs, x, estimator="fair", backend="numpy")
    np.testing.assert_allclose(energy_score_fair(obs, x), want, rtol=1e-9)


def test_the_fair_variogram_gap_equals_scoringrules_fair_form():
    import scoringrules as sr

    rng = np.random.default_rng(9)
    N, K = 60, 7
    y, m, a = rng.normal(size=N), rng.normal(size=(K, N)), rng.uniform(0.1, 1.0, size=N)
    blocks = nearest_blocks(rng.normal(size=(N, 3)), 12, 5, np.random.default_rng(1))
    got = block_scores(y, m, a, blocks, samples=40, rng=np.random.default_rng(2))
    x = block_ensemble(m, a, blocks, 6, np.random.default_rng(2))
    fair = sr.vs_ensemble(y[blocks], x, p=0.5, estimator="fair", backend="numpy")
    assert got["variogram_score_block"] == pytest.approx(float(np.mean(fair)), rel=1e-10)


def test_the_true_forecast_scores_best_and_undefined_ones_are_nan():
    rng = np.random.default_rng(6)
    N = 3000
    f = np.sin(np.linspace(0, 6, N))
    y = f + 0.3 * rng.standard_normal(N)
    blocks = nearest_blocks(np.linspace(0, 6, N)[:, None], 500, 5, np.random.default_rng(7))
    truth = np.tile(f, (4, 1))

    def score(m, a):
        return block_scores(
            y,
            m,
            np.full(N, a),
            blocks,
            rng=np.random.default_rng(8),
        )

    best = score(truth, 0.09)
    for worse in (score(truth + 0.3, 0.09), score(truth, 0.5), score(truth, 0.01)):
        assert best["energy_score_block"] < worse["energy_score_block"]
    assert best["variogram_score_block"] < score(truth, 0.5)["variogram_score_block"]
    one = block_scores(y, f[None, :], np.full(N, 0.09), blocks, rng=np.random.default_rng(0))
    assert np.isnan(one["energy_score_block"]) and np.isnan(one["variogram_score_block"])
    bad = truth.copy()
    bad[0, blocks[0, 0]] = np.nan
    assert np.isnan(score(bad, 0.09)["energy_score_block"])


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="size"):
        nearest_blocks(np.zeros((5, 2)), 2, 6, np.random.default_rng(0))
    with pytest.raises(ValueError, match="`blocks` must be \\(B, s\\) integer indices"):
        block_scores(
            np.zeros(5),
            np.zeros((3, 5)),
            np.ones(5),
            np.array([[0, 5]]),
            rng=np.random.default_rng(0),
        )
    with pytest.raises(ValueError, match="member_means"):
        block_scores(
            np.zeros(5),
            np.zeros((3, 4)),
            np.ones(5),
            np.array([[0, 1]]),
            rng=np.random.default_rng(0),
        )
