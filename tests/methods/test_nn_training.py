"""The vmapped trainer and the NN methods: members are independent, early stopping keeps
the best epoch, the epoch cap holds, bagging draws what it says, every option trains."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from method_tasks import make_task

from udora import methods
from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import nll
from udora.methods.nn.network import make_network
from udora.methods.nn.trainer import train_members


def _data(n=64, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=n)).astype(np.float32)
    return jnp.asarray(X), jnp.asarray(y)


def test_vmapped_members_equal_members_trained_alone():
    cfg = NNConfig(width=8, blocks=1, epochs=5, batch_size=16, val_fraction=0.0)
    X, y = _data()
    empty_x, empty_y = X[:0], y[:0]
    keys = jax.random.split(jax.random.key(0), 3)
    rng = np.random.default_rng(1)
    rows = jnp.asarray(np.stack([rng.choice(64, 48) for _ in range(3)]), jnp.int32)
    together, _, _ = train_members(cfg, X, y, empty_x, empty_y, rows, keys)
    for k in range(3):
        alone, _, _ = train_members(cfg, X, y, empty_x, empty_y, rows[k : k + 1], keys[k : k + 1])
        for a, b in zip(jax.tree.leaves(alone), jax.tree.leaves(together), strict=True):
            np.testing.assert_allclose(a[0], b[k], rtol=1e-4, atol=1e-5)
    first = jax.tree.leaves(together)[0]
    assert not np.allclose(first[0], first[1]), "members must start from different keys"


def test_early_stopping_keeps_the_best_epoch_and_stops():
    cfg = NNConfig(width=64, blocks=2, lr=0.02, epochs=300, patience=3, batch_size=16)
    X, y = _data(n=48, seed=2)
    X_val, y_val = _data(n=32, seed=3)
    keys = jax.random.split(jax.random.key(1), 2)
    rows = jnp.tile(jnp.arange(48, dtype=jnp.int32), (2, 1))
    variables, best_val, epochs_run = train_members(cfg, X, y, X_val, y_val, rows, keys)
    assert np.all(np.asarray(epochs_run) < 300), "an overfitting net must stop early"
    assert np.all(np.asarray(epochs_run) >= 1 + cfg.patience)
    net = make_network(cfg)
    for k in range(2):
        member = jax.tree.map(lambda a, k=k: a[k], variables)
        raw = net.apply(member, X_val, train=False)
        recomputed = float(jnp.mean(nll(raw, y_val, "standard")))
        assert recomputed == pytest.approx(float(best_val[k]), rel=1e-5)


def test_max_epochs_caps_training():
    cfg = NNConfig(width=8, blocks=1, epochs=100, max_epochs=3, val_fraction=0.0)
    assert cfg.train_epochs == 3
    X, y = _data()
    rows = jnp.tile(jnp.arange(64, dtype=jnp.int32), (2, 1))
    keys = jax.random.split(jax.random.key(0), 2)
    _, _, epochs_run = train_members(cfg, X, y, X[:0], y[:0], rows, keys)
    np.testing.assert_array_equal(epochs_run, [3, 3])


@pytest.mark.parametrize("replace", [True, False])
def test_bagging_rows_follow_fraction_and_replacement(replace):
    bag = methods.get_method("nn_bagging", sample_fraction=0.6, replace=replace, n_members=50)
    rows = bag.member_rows(200, np.random.default_rng(0))
    assert rows.shape == (50, 120) and rows.min() >= 0 and rows.max() < 200
    unique = np.array([np.unique(r).size for r in rows])
    if replace:  # E[unique] = 200 (1 - (1 - 1/200)^120) ~ 90.3
        assert unique.mean() == pytest.approx(200 * (1 - (1 - 1 / 200) ** 120), rel=0.03)
    else:
        assert np.all(unique == 120)
    assert len({tuple(r) for r in rows}) == 50, "members must get different resamples"


def test_ensemble_members_disagree_and_seed_matters():
    task = make_task(n=120, seed=4)
    a = methods.get_method("nn_ensemble", width=16, max_epochs=20).fit(task.X, task.y, seed=0)
    b = methods.get_method("nn_ensemble", width=16, max_epochs=20).fit(task.X, task.y, seed=1)
    pa, pb = a.predict(task.X_near), b.predict(task.X_near)
    assert pa.member_means.shape == (10, 300)
    assert np.all(pa.epistemic > 0)
    assert not np.allclose(pa.mean, pb.mean)


def test_predict_before_fit_and_wrong_width_are_errors():
    task = make_task(n=40, seed=5)
    method = methods.get_method("nn_dropout", width=8, max_epochs=2)
    with pytest.raises(methods.NotFittedError, match="call fit"):
        method.predict(task.X_near)
    method.fit(task.X, task.y, seed=0)
    with pytest.raises(ValueError, match=r"expected shape \(m, 2\)"):
        method.predict(np.zeros((3, 5)))


@pytest.mark.slow  # ~30 s: one compile per option
@pytest.mark.parametrize(
    "overrides",
    [
        {"optimizer": "sgd", "lr": 0.01, "sgd_nesterov": True},
        {"optimizer": "muon", "lr": 0.01},
        {"optimizer": "soap", "lr": 0.003},
        {"norm": "layer", "activation": "gelu"},
        {"norm": "batch", "activation": "relu", "batch_size": 32},
        {"head": "natural"},
    ],
    ids=lambda o: "-".join(str(v) for v in o.values()),
)
def test_every_option_trains_an_ensemble(overrides):
    task = make_task(n=200, seed=6)
    cfg = {"width": 16, "blocks": 1, "n_members": 3, "max_epochs": 60, **overrides}
    pred = methods.get_method("nn_ensemble", **cfg).fit(task.X, task.y, seed=0).predict(task.X_near)
    r2 = 1 - np.mean((pred.mean - task.f_near) ** 2) / np.var(task.f_near)
    assert r2 > 0.8, f"{overrides}: R^2 = {r2:.3f}"
