"""Method parts that a sweep changes reach one compiled training program.

EDL's ``evi_reg`` is an argument of the program (a traced loss field), bagging's resample
size a count of padded rows, DEUP's excess network micro-steps like its mean network, and
SWAG's checkpoint schedule is a tracker argument with the stack padded to the space's
largest count.
Each is checked against the program it replaces: a loss with the weight as a constant,
training on the unpadded rows (full-batch, so the shuffle order cannot matter), the
padding of the mean network, and a stack exactly as long as the count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compiles import count_compiles

from udora.methods.deup import DEUPConfig
from udora.methods.edl import EvidentialLoss
from udora.methods.nn import padding as sizes
from udora.methods.nn.config import NNConfig
from udora.methods.nn.trainer import _epoch_program, train_members
from udora.methods.swag import SWAGConfig, collect_moments

pytestmark = pytest.mark.slow  # seconds of compile each: in the slow set (CI runs it)


def _data(n=70, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=n)).astype(np.float32)
    return jnp.asarray(X), jnp.asarray(y)


@dataclass(frozen=True)
class ConstantEvidential:
    """EDL's loss with ``evi_reg`` a constant of the program (no traced field)."""

    evi_reg: float
    n_out: ClassVar[int] = 4

    def __call__(self, raw, y):
        return EvidentialLoss(self.evi_reg)(raw, y)


def _leaves(variables):
    return [np.asarray(v) for v in jax.tree.leaves(variables)]


def test_evi_reg_is_an_argument_of_one_program_and_trains_as_a_constant_would():
    X, y = _data()
    rows = jnp.arange(70, dtype=jnp.int32)[None, :]
    keys = jax.random.key(1)[None]
    cfg = NNConfig(width=8, blocks=2, batch_size=16, n_epochs=3)
    traced, _, _ = train_members(cfg, X, y, X[:0], y[:0], rows, keys, loss=EvidentialLoss(0.05))
    constant, _, _ = train_members(
        cfg, X, y, X[:0], y[:0], rows, keys, loss=ConstantEvidential(0.05)
    )
    for a, b in zip(_leaves(traced), _leaves(constant), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    misses = _epoch_program.cache_info().misses
    other, _, _ = train_members(cfg, X, y, X[:0], y[:0], rows, keys, loss=EvidentialLoss(0.2))
    assert _epoch_program.cache_info().misses == misses, "another evi_reg, the same program"
    assert any(not np.allclose(a, b) for a, b in zip(_leaves(other), _leaves(traced), strict=True))


def test_resamples_of_any_size_share_one_program_and_padding_rows_changes_nothing():
    X, y = _data()
    keys = jax.random.key(2)[None]
    cfg = NNConfig(width=8, blocks=1, batch_size=512, n_epochs=4)  # full batch: order-free
    rng = np.random.default_rng(0)
    real = rng.choice(70, size=50, replace=True).astype(np.int32)
    plain, _, _ = train_members(cfg, X, y, X[:0], y[:0], jnp.asarray(real[None]), keys)
    padded_rows = jnp.asarray(np.pad(real, (0, 20))[None])
    padded, _, _ = train_members(
        cfg, X, y, X[:0], y[:0], padded_rows, keys, row_counts=np.array([50])
    )
    for a, b in zip(_leaves(padded), _leaves(plain), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    misses = _epoch_program.cache_info().misses
    for m in (30, 70):
        rows = np.pad(rng.choice(70, size=m).astype(np.int32), (0, 70 - m))[None]
        train_members(cfg, X, y, X[:0], y[:0], jnp.asarray(rows), keys, row_counts=np.array([m]))
    assert _epoch_program.cache_info().misses == misses, "every resample size, one program"


def test_deups_excess_network_micro_steps_like_its_mean_network():
    cfg = DEUPConfig()
    main = sizes.padding(cfg, 1)
    for batch in DEUPConfig.SEARCH_SPACE["batch_size_excess"]["values"]:
        excess = cfg.model_copy(update={"batch_size": batch})
        assert sizes.padding(excess, 1) == main, batch
    assert main.micro == 32  # the smaller of the two spaces' smallest batch sizes
    assert sizes.padding(NNConfig(), 2).micro == 64


def test_swag_schedules_share_one_collection_program_and_match_an_exact_stack():
    X, y = _data()
    rows = jnp.arange(70, dtype=jnp.int32)[None, :]
    keys = jax.random.key(3)[None]
    cfg = NNConfig(
        width=8,
        blocks=1,
        batch_size=16,
        n_epochs=2,
        optimizer="sgd",
        learning_rate=0.02,
        momentum=0.9,
    )
    init, _, _ = train_members(cfg, X, y, X[:0], y[:0], rows, keys)
    swag = SWAGConfig(**cfg.model_dump())  # its space's 40 checkpoints size the stack

    def collect(config, every, n, burn_in):
        return collect_moments(
            config,
            X,
            y,
            rows,
            keys,
            init,
            every=every,
            n_checkpoints=n,
            burn_in=burn_in,
            grad_clip=1.0,
        )

    exact = collect(cfg, 2, 3, 1)  # NNConfig has no n_checkpoints range: a stack of 3
    misses = _epoch_program.cache_info().misses
    padded = collect(swag, 2, 3, 1)
    for a, b in zip(_leaves(padded[1:]), _leaves(exact[1:]), strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert _epoch_program.cache_info().misses == misses + 1, "the 40-checkpoint program"
    for every, n, burn_in in ((3, 5, 0), (1, 12, 4)):
        _, first, _, stack = collect(swag, every, n, burn_in)
        assert jax.tree.leaves(stack)[0].shape[:2] == (1, n)
        # the mean of the stored checkpoints is the running first moment
        for m1, s in zip(jax.tree.leaves(first), jax.tree.leaves(stack), strict=True):
            np.testing.assert_allclose(np.asarray(m1[0]), s[0].mean(axis=0), rtol=1e-5, atol=1e-6)
    assert _epoch_program.cache_info().misses == misses + 1, "every schedule, one program"


def test_the_clip_norm_is_an_argument_and_clips_as_optax_does():
    X, y = _data()
    rows = jnp.arange(70, dtype=jnp.int32)[None, :]
    keys = jax.random.key(4)[None]
    cfg = NNConfig(
        width=8,
        blocks=1,
        batch_size=16,
        n_epochs=2,
        optimizer="sgd",
        learning_rate=0.05,
        momentum=0.0,
        weight_decay=0.0,
    )
    init, _, _ = train_members(cfg, X, y, X[:0], y[:0], rows, keys)
    clipped, _, _ = train_members(
        cfg.model_copy(update={"n_epochs": 1}),
        X,
        y,
        X[:0],
        y[:0],
        rows,
        keys,
        init=init,
        grad_clip=0.01,
    )
    misses = _epoch_program.cache_info().misses
    other, _, _ = train_members(
        cfg.model_copy(update={"n_epochs": 1}),
        X,
        y,
        X[:0],
        y[:0],
        rows,
        keys,
        init=init,
        grad_clip=0.5,
    )
    assert _epoch_program.cache_info().misses == misses, "another clip norm, the same program"
    # Plain SGD without momentum or decay: each of the 5 steps of the epoch moves the
    # parameters by at most learning_rate * max_norm in global norm (optax's clip).
    moved = np.sqrt(
        sum(
            np.sum((np.asarray(a) - np.asarray(b)) ** 2)
            for a, b in zip(
                jax.tree.leaves(clipped["params"]), jax.tree.leaves(init["params"]), strict=True
            )
        )
    )
    assert 0 < moved <= 5 * 0.05 * 0.01 * (1 + 1e-5)
    assert any(not np.allclose(a, b) for a, b in zip(_leaves(other), _leaves(clipped), strict=True))


def test_swags_val_fraction_keeps_every_programs_shapes():
    """SWAG sweeps ``val_fraction``: the fit split is padded to the whole sample with a row
    count and V is predicted within the whole sample, so fits at other fractions compile
    nothing (no training, collection or prediction program, no eager operation)."""
    from udora.methods.swag import SWAG

    X, y = _data(n=80, d=3)
    X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
    base = {
        "width": 8,
        "blocks": 1,
        "batch_size": 16,
        "n_epochs": 2,
        "n_checkpoints": 3,
        "epochs_per_checkpoint": 1,
        "swag_burn_in": 1,
        "n_members": 4,
    }
    SWAG(SWAGConfig(**base, val_fraction=0.1)).fit(X, y, seed=0).predict(X)
    with count_compiles() as compiled:
        fits = [SWAG(SWAGConfig(**base, val_fraction=f)).fit(X, y, seed=0) for f in (0.2, 0.25)]
        for fit in fits:
            fit.predict(X)
    assert compiled == [], "another val_fraction compiled " + ", ".join(compiled)
    assert [f.val_idx_.size for f in fits] == [16, 20]
    assert all(0.0 < f.scale_ < np.inf for f in fits)
