"""The vmapped trainer and the NN methods: members are independent, trackers compose
(early stopping keeps the best epoch while SWAG moments accumulate), the default schedule
runs exactly n_epochs on all points, the epoch budget holds, programs are reused,
bagging draws what it says, every option trains."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from method_tasks import make_task

from udora import methods
from udora.methods.bagging import resampled_rows
from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import nll
from udora.methods.nn.network import make_network
from udora.methods.nn.optim import optimizer_key
from udora.methods.nn.padding import padding
from udora.methods.nn.step import GaussianNLL
from udora.methods.nn.trackers import best_epoch, last_epoch, schedule_args, swag_moments
from udora.methods.nn.trainer import _epoch_program, run_epochs, train_members


def _data(n=64, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=n)).astype(np.float32)
    return jnp.asarray(X), jnp.asarray(y)


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_vmapped_members_equal_members_trained_alone():
    cfg = NNConfig(width=8, blocks=1, n_epochs=5, batch_size=16, val_fraction=0.0)
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


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_early_stopping_keeps_the_best_epoch_and_stops():
    cfg = NNConfig(
        width=64,
        blocks=2,
        learning_rate=0.02,
        n_epochs=300,
        patience=3,
        batch_size=16,
        early_stopping=True,
    )
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


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_trackers_compose_best_epoch_and_swag_moments():
    """One run with both trackers against the iterates of runs stopped after j epochs.

    The loop is deterministic per epoch, so the same program run for a budget of j epochs
    gives the iterate after epoch j of the long run; from these the stopping epoch, the
    best epoch and the moments are recomputed in numpy.
    """
    patience, every = 3, 2
    cfg = NNConfig(width=32, blocks=1, learning_rate=0.03, patience=patience, batch_size=16)
    X, y = _data(n=48, seed=2)
    X_val, y_val = _data(n=32, seed=3)
    rows = jnp.arange(48, dtype=jnp.int32)[None, :]
    keys = jax.random.key(5)[None]
    trackers = (best_epoch(patience), swag_moments())
    schedule = (None, schedule_args(every, 0))
    last, (best, (first, second)), n_run = run_epochs(
        cfg, X, y, X_val, y_val, rows, keys, 200, trackers, tracker_args=schedule
    )
    n_run = int(n_run[0])
    net = make_network(cfg)
    iterates, losses = [], []
    for j in range(1, n_run + 1):
        variables, _, _ = run_epochs(
            cfg, X, y, X_val, y_val, rows, keys, j, trackers, tracker_args=schedule
        )
        member = jax.tree.map(lambda a: a[0], variables)
        iterates.append([np.asarray(a, np.float64) for a in jax.tree.leaves(member["params"])])
        raw = np.asarray(net.apply(member, X_val, train=False), np.float64)
        var = (np.logaddexp(0.0, raw[:, 1]) + 1e-6) ** 2
        losses.append(np.mean(0.5 * (np.log(var) + (np.asarray(y_val) - raw[:, 0]) ** 2 / var)))
    # Early stopping: stop once `patience` epochs in a row fail to beat the best so far.
    run_best = np.minimum.accumulate(losses)
    improved = np.r_[True, np.asarray(losses[1:]) < run_best[:-1]]
    since = [j - max(i for i in range(j + 1) if improved[i]) for j in range(n_run)]
    assert n_run < 200 and since[-1] == patience and max(since[:-1]) < patience
    k_best = int(np.argmin(losses))
    assert float(best.best_val[0]) == pytest.approx(losses[k_best], rel=1e-5)
    for got, want in zip(jax.tree.leaves(best.best[0]), iterates[k_best], strict=True):
        np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-7)
    for got, want in zip(jax.tree.leaves(last["params"]), iterates[-1], strict=True):
        np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-7)
    # SWAG moments of the same run: the iterates after epochs every, 2 every, ...
    taken = [iterates[j - 1] for j in range(every, n_run + 1, every)]
    assert len(taken) >= 2
    for i, (m1, m2) in enumerate(zip(jax.tree.leaves(first), jax.tree.leaves(second), strict=True)):
        stack = np.stack([it[i] for it in taken])
        np.testing.assert_allclose(m1[0], stack.mean(axis=0), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(m2[0], (stack**2).mean(axis=0), rtol=1e-4, atol=1e-6)


def test_n_epochs_is_the_budget_and_programs_are_reused():
    cfg = NNConfig(width=8, blocks=1, n_epochs=3, val_fraction=0.0)
    X, y = _data()
    rows = jnp.tile(jnp.arange(64, dtype=jnp.int32), (2, 1))
    keys = jax.random.split(jax.random.key(0), 2)
    _, _, epochs_run = train_members(cfg, X, y, X[:0], y[:0], rows, keys)
    np.testing.assert_array_equal(epochs_run, [3, 3])
    # Another budget, other data of the same shapes, K and n_epochs in the config: no new
    # program and no retrace.
    misses = _epoch_program.cache_info().misses
    X2, y2 = _data(seed=9)
    other = cfg.model_copy(update={"n_epochs": 5, "n_members": 7})
    _, _, epochs_run = train_members(other, X2, y2, X2[:0], y2[:0], rows, keys)
    np.testing.assert_array_equal(epochs_run, [5, 5])
    assert _epoch_program.cache_info().misses == misses
    tracker = last_epoch()  # the default schedule: no early stopping
    program = _epoch_program(
        optimizer_key(cfg),
        padding(cfg, 2),
        GaussianNLL("standard"),
        (),
        (tracker,),
        False,
        False,
    )
    assert _epoch_program.cache_info().misses == misses
    assert program._cache_size() == 1, "one trace serves both budgets and both data sets"


@pytest.mark.parametrize("optimizer", [pytest.param("adam", marks=pytest.mark.slow), "sgd"])
@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_optimizer_numbers_are_call_arguments_of_one_program(optimizer):
    """A sweep's trials of one architecture share a compiled program: learning rate,
    momentum, weight decay (and Adam's b2, eps) reach it at call time. Each config's
    result is the one optax's plain (constant-hyperparameter) transformation gives."""
    import optax

    X, y = _data()
    rows = jnp.arange(64, dtype=jnp.int32)[None, :]
    keys = jax.random.split(jax.random.key(3), 1)
    base = NNConfig(
        width=8, blocks=1, n_epochs=1, batch_size=64, val_fraction=0.0, optimizer=optimizer
    )
    adam_only = {"adam_b2": 0.95, "adam_eps": 1e-7} if optimizer == "adam" else {}
    configs = [
        base.model_copy(update={"learning_rate": 1e-3, "momentum": 0.9, "weight_decay": 1e-4}),
        base.model_copy(
            update={"learning_rate": 3e-2, "momentum": 0.7, "weight_decay": 1e-2, **adam_only}
        ),
    ]
    net = make_network(base, 2)
    init = net.init(jax.random.key(11), X[:1], train=False)
    stacked = jax.tree.map(lambda a: a[None], init)
    _, _, _ = train_members(configs[0], X, y, X[:0], y[:0], rows, keys, init=stacked)
    misses = _epoch_program.cache_info().misses
    for cfg in configs:
        # one epoch = one full-batch step from the same (injected) init, by plain optax
        trained, _, _ = train_members(cfg, X, y, X[:0], y[:0], rows, keys, init=stacked)
        if optimizer == "adam":
            tx = optax.adamw(
                cfg.learning_rate,
                b1=cfg.momentum,
                b2=cfg.adam_b2,
                eps=cfg.adam_eps,
                weight_decay=cfg.weight_decay,
            )
        else:
            tx = optax.chain(
                optax.add_decayed_weights(cfg.weight_decay),
                optax.sgd(cfg.learning_rate, momentum=cfg.momentum),
            )
        loss = GaussianNLL(cfg.head)

        def objective(p, xb=X, yb=y, loss=loss):
            return jnp.mean(loss(net.apply({"params": p}, xb, train=True), yb))

        params = init["params"]
        batch = jax.random.permutation(
            jax.random.fold_in(jax.random.split(keys[0], 3)[2], 0), rows[0]
        )
        grads = jax.grad(objective)(params, X[batch], y[batch])
        updates, _ = tx.update(grads, tx.init(params), params)
        expected = optax.apply_updates(params, updates)
        for a, b in zip(jax.tree.leaves(expected), jax.tree.leaves(trained["params"]), strict=True):
            np.testing.assert_allclose(b[0], a, rtol=1e-5, atol=1e-6)
    assert _epoch_program.cache_info().misses == misses, "a new program per learning rate"


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_default_schedule_runs_n_epochs_and_keeps_the_last_iterate():
    # The paper's schedule: no early stopping, even with a validation split that would stop
    # this overfitting net (the early-stopping test above stops the same setting early).
    cfg = NNConfig(width=64, blocks=2, learning_rate=0.02, n_epochs=40, patience=3, batch_size=16)
    assert cfg.early_stopping is False
    X, y = _data(n=80)
    X_fit, y_fit, X_val, y_val = X[:64], y[:64], X[64:], y[64:]
    rows = jnp.tile(jnp.arange(64, dtype=jnp.int32), (2, 1))
    keys = jax.random.split(jax.random.key(1), 2)
    variables, val_loss, epochs_run = train_members(cfg, X_fit, y_fit, X_val, y_val, rows, keys)
    np.testing.assert_array_equal(epochs_run, [40, 40])
    last, _, _ = run_epochs(cfg, X_fit, y_fit, X_val, y_val, rows, keys, 40, ())
    for got, want in zip(jax.tree.leaves(variables), jax.tree.leaves(last), strict=True):
        np.testing.assert_array_equal(got, want)
    net = make_network(cfg)
    for k in range(2):
        params = jax.tree.map(lambda a, k=k: a[k], variables)
        raw = net.apply(params, X_val, train=False)
        recomputed = float(jnp.mean(nll(raw, y_val, "standard")))
        assert recomputed == pytest.approx(float(val_loss[k]), rel=1e-5)
    stopped = cfg.model_copy(update={"early_stopping": True})
    _, _, epochs_es = train_members(stopped, X_fit, y_fit, X_val, y_val, rows, keys)
    assert np.all(np.asarray(epochs_es) < 40), "the same net early-stopped must stop early"


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("nn_ensemble", {}),
        pytest.param("nn_bagging", {}, marks=pytest.mark.slow),
        pytest.param("nn_dropout", {}, marks=pytest.mark.slow),
        pytest.param("edl", {}, marks=pytest.mark.slow),
        pytest.param(
            "swag",
            {"calibrate": False, "n_checkpoints": 2, "swag_burn_in": 1},
            marks=pytest.mark.slow,
        ),
    ],
)
@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_methods_without_a_use_for_validation_train_on_all_points(name, extra):
    task = make_task(n=60, seed=2)
    quick = {"width": 8, "blocks": 1, "n_epochs": 3, **extra}
    method = methods.get_method(name, **quick).fit(task.X, task.y, seed=0)
    np.testing.assert_array_equal(method.fit_idx_, np.arange(60))
    assert method.val_idx_.size == 0
    np.testing.assert_array_equal(method.epochs_run_, 3)
    stopped = methods.get_method(name, **quick, early_stopping=True, val_fraction=0.1)
    stopped.fit(task.X, task.y, seed=0)
    assert stopped.val_idx_.size == 6 and stopped.fit_idx_.size == 54


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("laplace", {}),
        pytest.param("fsp_laplace", {}, marks=pytest.mark.slow),
        pytest.param("deup", {"n_epochs_excess": 2}, marks=pytest.mark.slow),
        pytest.param(
            "swag",
            {"n_checkpoints": 2, "epochs_per_checkpoint": 1, "swag_burn_in": 1},
            marks=pytest.mark.slow,
        ),
    ],
)
@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_methods_that_use_validation_keep_their_split(name, extra):
    task = make_task(n=60, seed=2)
    cfg = {"width": 8, "blocks": 1, "n_epochs": 3, "val_fraction": 0.2, **extra}
    method = methods.get_method(name, **cfg).fit(task.X, task.y, seed=0)
    assert method.val_idx_.size == 12 and method.fit_idx_.size == 48
    np.testing.assert_array_equal(method.epochs_run_, 3)


@pytest.mark.parametrize("replace", [True, False])
def test_bagging_rows_follow_fraction_and_replacement(replace):
    bag = methods.get_method("nn_bagging", sample_fraction=0.6, replace=replace, n_members=50)
    rows = resampled_rows(bag.config, bag.n_trained, 200, np.random.default_rng(0))
    assert rows.shape == (50, 120) and rows.min() >= 0 and rows.max() < 200
    unique = np.array([np.unique(r).size for r in rows])
    if replace:  # E[unique] = 200 (1 - (1 - 1/200)^120) ~ 90.3
        assert unique.mean() == pytest.approx(200 * (1 - (1 - 1 / 200) ** 120), rel=0.03)
    else:
        assert np.all(unique == 120)
    assert len({tuple(r) for r in rows}) == 50, "members must get different resamples"


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_ensemble_members_disagree_and_seed_matters():
    task = make_task(n=120, seed=4)
    a = methods.get_method("nn_ensemble", width=16, n_epochs=20).fit(task.X, task.y, seed=0)
    b = methods.get_method("nn_ensemble", width=16, n_epochs=20).fit(task.X, task.y, seed=1)
    pa, pb = a.predict(task.X_near), b.predict(task.X_near)
    assert pa.member_means.shape == (10, 300)
    assert np.all(pa.epistemic > 0)
    assert not np.allclose(pa.mean, pb.mean)


def test_predict_before_fit_and_wrong_width_are_errors():
    task = make_task(n=40, seed=5)
    method = methods.get_method("nn_dropout", width=8, n_epochs=2)
    with pytest.raises(methods.NotFittedError, match="call fit"):
        method.predict(task.X_near)
    method.fit(task.X, task.y, seed=0)
    with pytest.raises(ValueError, match=r"expected shape \(m, 2\)"):
        method.predict(np.zeros((3, 5)))


@pytest.mark.slow  # ~30 s: one compile per option
@pytest.mark.parametrize(
    "overrides",
    [
        # 0.003: inside the paper's learning-rate space; at 0.01 plain SGD diverges on this task
        # within 30 epochs (early stopping used to hide that by keeping an earlier epoch)
        {"optimizer": "sgd", "learning_rate": 0.003, "sgd_nesterov": True},
        {"optimizer": "muon", "learning_rate": 0.01},
        {"optimizer": "soap", "learning_rate": 0.003},
        {"norm": "layer", "activation": "gelu"},
        {"norm": "batch", "activation": "relu", "batch_size": 32},
        {"head": "natural"},
    ],
    ids=lambda o: "-".join(str(v) for v in o.values()),
)
def test_every_option_trains_an_ensemble(overrides):
    task = make_task(n=200, seed=6)
    cfg = {"width": 16, "blocks": 1, "n_members": 3, "n_epochs": 60, **overrides}
    pred = methods.get_method("nn_ensemble", **cfg).fit(task.X, task.y, seed=0).predict(task.X_near)
    r2 = 1 - np.mean((pred.mean - task.f_near) ** 2) / np.var(task.f_near)
    assert r2 > 0.8, f"{overrides}: R^2 = {r2:.3f}"
