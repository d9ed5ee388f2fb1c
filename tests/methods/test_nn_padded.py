"""The padded trainer (methods.nn.padded, methods.nn.trainer) against a dedicated program.

The reference is written here from flax's ResidualMLP at the true width and blocks and
plain optax AdamW, one jitted step per mini-batch of the true size (the last batch holds
the epoch's remaining rows), on the trainer's own shuffles and from the same injected
initialisation. The padded program (blocks gated off, micro-steps of another size, and
with PAD_WIDTH the width padded too) must give the same parameters; padding must not
change results when dropout draws; and a sweep over blocks, batch sizes, epochs and
optimiser numbers must compile one program.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from udora.methods.nn import padding as sizes
from udora.methods.nn import trainer
from udora.methods.nn.backbone import ResidualMLP
from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import nll
from udora.methods.nn.initial import fresh_variables
from udora.methods.nn.trainer import _epoch_program, run_epochs, train_members


def _data(n=70, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=n)).astype(np.float32)
    return jnp.asarray(X), jnp.asarray(y)


def _dedicated(cfg, X, y, rows, key, init, n_epochs):
    """Dedicated training: the true-shaped flax network, a step per true-sized batch."""
    net = ResidualMLP(cfg.width, cfg.blocks, cfg.activation, cfg.norm, 0.0)
    if cfg.optimizer == "adam":
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
    params = init["params"]
    state = {k: v for k, v in init.items() if k != "params"}
    opt = tx.init(params)
    mutable = ["batch_stats"] if cfg.norm == "batch" else False

    @jax.jit
    def step(params, state, opt, xb, yb):
        def objective(p):
            if mutable:
                raw, new = net.apply({"params": p, **state}, xb, train=True, mutable=mutable)
            else:
                raw, new = net.apply({"params": p, **state}, xb, train=True), state
            return jnp.mean(nll(raw, yb, cfg.head)), new

        grads, new = jax.grad(objective, has_aux=True)(params)
        updates, opt = tx.update(grads, opt, params)
        return optax.apply_updates(params, updates), new, opt

    k_shuffle = jax.random.split(key, 3)[2]
    m = rows.shape[0]
    b = min(cfg.batch_size, m)
    for e in range(n_epochs):
        perm = np.asarray(jax.random.permutation(jax.random.fold_in(k_shuffle, e), rows))
        for start in range(0, m, b):
            batch = perm[start : start + b]
            params, state, opt = step(params, state, opt, X[batch], y[batch])
    return {"params": params, **state}


@pytest.mark.parametrize(
    ("norm", "pad_width"),
    [
        pytest.param("none", False, marks=pytest.mark.slow),
        pytest.param("layer", False, marks=pytest.mark.slow),
        pytest.param("batch", False, marks=pytest.mark.slow),
        # width and blocks padded, micro-steps, masked LayerNorm
        pytest.param("layer", True, marks=pytest.mark.slow),
    ],
)
def test_padded_program_matches_the_dedicated_program(norm, pad_width, monkeypatch):
    """Three epochs (batches 24, 24, 22 of 70 rows; micro-steps of 16 rows; 2 of 4 blocks
    live) from the same injected init equal the dedicated program's to float32 rounding.

    With BatchNorm the optimiser is SGD: the bias before a BatchNorm has a zero gradient in
    exact arithmetic, and Adam scales its rounding noise up to steps of the learning rate.
    """
    monkeypatch.setattr(sizes, "PAD_WIDTH", pad_width)
    monkeypatch.setattr(sizes, "MICRO", 16)
    cfg = NNConfig(
        width=8,
        blocks=2,
        batch_size=24,
        norm=norm,
        learning_rate=0.01,
        weight_decay=1e-3,
        n_epochs=3,
        optimizer="sgd" if norm == "batch" else "adam",
    )
    monkeypatch.setattr(
        NNConfig, "SEARCH_SPACE", {"width": {"values": [8, 12]}, "blocks": {"values": [1, 4]}}
    )
    pad = sizes.padding(cfg, 2)
    assert (pad.blocks, pad.micro, pad.width) == (
        4,
        16 if norm != "batch" else 24,
        12 if pad_width else 8,
    )
    X, y = _data()
    rows = jnp.arange(70, dtype=jnp.int32)[None, :]
    key = jax.random.key(4)
    init = ResidualMLP(8, 2, "tanh", norm).init(jax.random.key(9), X[:1], train=False)
    stacked = jax.tree.map(lambda a: a[None], init)
    got, _, _ = train_members(cfg, X, y, X[:0], y[:0], rows, key[None], init=stacked)
    want = _dedicated(cfg, X, y, np.asarray(rows[0]), key, init, 3)
    assert jax.tree.structure(got) == jax.tree.structure(stacked)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g)[0], np.asarray(w), rtol=2e-5, atol=2e-6)


@pytest.mark.slow
def test_full_training_metrics_match_the_dedicated_program():
    """100 epochs of 60 rows in batches of 16 (the last of 12): the validation NLL and the
    predictions of the padded and the dedicated program agree within 1e-3."""
    cfg = NNConfig(width=16, blocks=1, batch_size=16, learning_rate=3e-3, n_epochs=100)
    X, y = _data(n=100, seed=1)
    rows = jnp.arange(60, dtype=jnp.int32)[None, :]
    key = jax.random.key(2)
    init = ResidualMLP(16, 1).init(jax.random.key(5), X[:1], train=False)
    got, _, _ = train_members(
        cfg,
        X[:60],
        y[:60],
        X[:0],
        y[:0],
        rows,
        key[None],
        init=jax.tree.map(lambda a: a[None], init),
    )
    want = _dedicated(cfg, X[:60], y[:60], np.asarray(rows[0]), key, init, 100)
    net = ResidualMLP(16, 1)
    raw_got = net.apply(jax.tree.map(lambda a: a[0], got), X[60:], train=False)
    raw_want = net.apply(want, X[60:], train=False)
    nll_got = float(jnp.mean(nll(raw_got, y[60:], "standard")))
    nll_want = float(jnp.mean(nll(raw_want, y[60:], "standard")))
    assert nll_got == pytest.approx(nll_want, abs=1e-3)
    np.testing.assert_allclose(raw_got, raw_want, atol=1e-3)


@pytest.mark.slow
def test_padding_does_not_change_a_run_with_dropout(monkeypatch):
    """Dropout masks and initial weights are drawn per row and unit, so training padded
    (4 blocks, width 12, micro-steps of 8) equals training at the true sizes."""
    X, y = _data()
    rows = jnp.tile(jnp.arange(70, dtype=jnp.int32), (2, 1))
    keys = jax.random.split(jax.random.key(1), 2)
    cfg = NNConfig(width=8, blocks=1, batch_size=32, dropout=0.2, norm="layer", n_epochs=4)
    runs = []
    for space, pad_width, micro in [
        ({"width": {"values": [8]}}, False, 64),
        ({"width": {"values": [12]}, "blocks": {"values": [4]}}, True, 8),
    ]:
        monkeypatch.setattr(NNConfig, "SEARCH_SPACE", space)
        monkeypatch.setattr(sizes, "PAD_WIDTH", pad_width)
        monkeypatch.setattr(sizes, "MICRO", micro)
        runs.append(train_members(cfg, X, y, X[:0], y[:0], rows, keys)[0])
    for a, b in zip(jax.tree.leaves(runs[0]), jax.tree.leaves(runs[1]), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    first = jax.tree.leaves(runs[0])[0]
    assert not np.allclose(first[0], first[1]), "members must start from different keys"


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_a_sweep_over_blocks_batch_sizes_and_epochs_compiles_once():
    """Eight configs of one width (every block count and batch size of the default space,
    other epochs and optimiser numbers) run one compiled training program."""
    X, y = _data(n=37, d=2)
    rows = jnp.arange(37, dtype=jnp.int32)[None, :]
    keys = jax.random.key(0)[None]
    base = NNConfig(width=16, n_epochs=2)
    space = [(1, 64), (2, 128), (3, 256), (4, 512), (4, 64), (3, 128), (2, 256), (1, 512)]
    # Other test files on this worker may have traced the same program at other shapes:
    # count the traces this sweep adds (none if one had these shapes, else one).
    program = trainer._epoch_program(*_key(base), (trainer.schedule_tracker(base),), False, False)
    traces = program._cache_size()
    misses = _epoch_program.cache_info().misses
    programs = set()
    for i, (blocks, batch) in enumerate(space):
        cfg = base.model_copy(
            update={
                "blocks": blocks,
                "batch_size": batch,
                "n_epochs": 1 + i,
                "learning_rate": 1e-3 * (1 + i),
            }
        )
        variables, _, n_run = train_members(cfg, X, y, X[:0], y[:0], rows, keys)
        assert int(n_run[0]) == 1 + i
        assert f"Dense_{2 * blocks + 1}" in variables["params"]
        assert f"Dense_{2 * blocks + 2}" not in variables["params"]
        programs.add(
            trainer._epoch_program(*_key(cfg), (trainer.schedule_tracker(cfg),), False, False)
        )
    assert _epoch_program.cache_info().misses == misses
    assert programs == {program}
    assert program._cache_size() - traces <= 1, "one trace for the whole sweep"


def _key(cfg):
    from udora.methods.nn.optim import optimizer_key
    from udora.methods.nn.step import GaussianNLL

    return optimizer_key(cfg), sizes.padding(cfg, 2), GaussianNLL(cfg.head), ()


@pytest.mark.slow
def test_gated_off_blocks_and_padded_units_stay_exactly_zero(monkeypatch):
    """run_epochs' trackers see the padded tree: the SWAG moments of a 1-block, width-8
    network padded to 4 blocks and width 12 are exactly zero outside the live part."""
    from udora.methods.nn.trackers import schedule_args, swag_moments

    monkeypatch.setattr(sizes, "PAD_WIDTH", True)
    monkeypatch.setattr(
        NNConfig, "SEARCH_SPACE", {"width": {"values": [12]}, "blocks": {"values": [4]}}
    )
    cfg = NNConfig(width=8, blocks=1, batch_size=16, n_epochs=3)
    X, y = _data()
    rows = jnp.arange(70, dtype=jnp.int32)[None, :]
    pad = sizes.padding(cfg, 2)
    program = _epoch_program(*_key(cfg), (swag_moments(),), False, False)
    keys = jax.random.key(3)[None]
    init = sizes.from_flax(pad, fresh_variables(cfg, 2, keys, X.shape[1]), 8, 1)
    args = (
        keys,
        rows,
        None,
        X,
        y,
        X[:0],
        y[:0],
        jnp.asarray(3, jnp.int32),
        sizes.dims_of(cfg),
        init,
        (),
        trainer.hyperparams(cfg),
        {},
        (schedule_args(1, 0),),
    )
    last, ((first, _),), _ = program(*args)
    params = last["params"]
    assert pad.width == 12 and pad.blocks == 4
    for i in range(3, 9):  # blocks 1..3 are gated off
        assert not np.any(np.asarray(params[f"Dense_{i}"]["kernel"]))
    assert not np.any(np.asarray(params["Dense_0"]["kernel"])[..., 8:])
    assert not np.any(np.asarray(params["Dense_1"]["kernel"])[..., 8:, :])
    assert not np.any(np.asarray(params["head"]["kernel"])[..., 8:, :])
    assert not np.any(np.asarray(first["Dense_2"]["bias"])[..., 8:])
    assert np.all(np.abs(np.asarray(params["Dense_1"]["kernel"])[0, :8, :8]) > 0)
    cut, _, _ = run_epochs(cfg, X, y, X[:0], y[:0], rows, jax.random.key(3)[None], 3, ())
    live = np.asarray(params["Dense_1"]["kernel"])[:, :8, :8]
    np.testing.assert_allclose(cut["params"]["Dense_1"]["kernel"], live, rtol=1e-6)


def test_the_trainer_version_enters_the_identity_of_neural_network_runs(monkeypatch):
    """An NN run's hash covers the trainer's version (an older trainer's run is never
    reused); a method without a trainer keeps the identity it had."""
    from udora.experiments.run.spec import RunSpec, resolve
    from udora.methods.ensemble import NNEnsemble

    nn_run = resolve(RunSpec("concrete", "nn_ensemble", 0, {}))
    blr_run = resolve(RunSpec("concrete", "blr", 0, {}))
    assert nn_run.identity["method"]["trainer"] == trainer.TRAINER_VERSION == 5
    assert "trainer" not in blr_run.identity["method"]
    monkeypatch.setattr(NNEnsemble, "trainer_version", 1)
    assert resolve(RunSpec("concrete", "nn_ensemble", 0, {})).config_hash != nn_run.config_hash


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_fresh_variables_drawn_at_the_space_width_equal_a_draw_at_the_true_width():
    """The one initialisation program of a search space draws every row at the space's
    largest width and keeps the config's first ``width`` entries: the same numbers as the
    padded initialisation at the config's own width (JAX's partitionable threefry)."""
    from udora.methods.nn import padded as P
    from udora.methods.nn.padding import to_flax

    cfg = NNConfig(width=16, blocks=2, norm="layer")
    keys = jax.random.split(jax.random.key(7), 3)
    drawn = fresh_variables(cfg, 2, keys, 5)
    assert sizes.eval_padding(cfg, 2).width == 64
    own = sizes.Padding(16, 2, 0, cfg.activation, cfg.norm, False, 2)

    def at_own_width(key):
        return P.init(own, sizes.dims_of(cfg), jax.random.split(key, 3)[0], 5)

    direct = to_flax(jax.tree.map(np.asarray, jax.vmap(at_own_width)(keys)), 16, 2)
    assert jax.tree.structure(drawn) == jax.tree.structure(direct)
    for a, b in zip(jax.tree.leaves(drawn), jax.tree.leaves(direct), strict=True):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    kernel = drawn["params"]["Dense_1"]["kernel"]  # (K, 16, 16), fan-in 16
    assert kernel.shape == (3, 16, 16)
    assert np.std(kernel) == pytest.approx(1 / 4, rel=0.15)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_a_sweep_over_widths_initialises_and_predicts_with_one_program_each():
    """Every width, block count and batch size of the default space shares the
    initialisation and prediction programs: after the first config a sweep compiles the
    training program of each new width and nothing else."""
    from compiles import count_compiles

    from udora.methods.nn.network import predict_members

    X, y = _data(n=37, d=2)
    rows = jnp.arange(37, dtype=jnp.int32)[None, :]
    keys = jax.random.key(0)[None]
    configs = [
        NNConfig(width=w, blocks=b, batch_size=s, n_epochs=1)
        for w, b, s in (
            (16, 1, 64),
            (32, 3, 128),
            (64, 4, 512),
            (16, 4, 256),
            (32, 2, 64),
            (64, 1, 128),
        )
    ]
    X_val, y_val, X_new = X[:0], y[:0], X[:9]
    variables, _, _ = train_members(configs[0], X, y, X_val, y_val, rows, keys)
    predict_members(configs[0], variables, keys, X_new)  # the first config compiles all
    with count_compiles() as compiled:
        for cfg in configs[1:]:
            variables, _, _ = train_members(cfg, X, y, X_val, y_val, rows, keys)
            predict_members(cfg, variables, keys, X_new)
    assert compiled == ["jit(train_one)"] * 2, "the two other widths' training programs only"
