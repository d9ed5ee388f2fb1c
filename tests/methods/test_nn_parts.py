"""Backbone, heads and optimisers against hand-written formulas."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import stats

from udora.methods.nn.backbone import ResidualMLP
from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import mean_variance, nll
from udora.methods.nn.optim import make_optimizer
from udora.methods.nn.soap import scale_by_soap


def _softplus(x):
    return np.logaddexp(0.0, x)


@pytest.mark.parametrize("head", ["standard", "natural"])
def test_heads_give_the_gaussian_nll(head):
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(50, 2)).astype(np.float32) * [2.0, 1.5]
    y = rng.normal(size=50).astype(np.float32) * 2.0
    mean, var = (np.asarray(a, dtype=np.float64) for a in mean_variance(jnp.asarray(raw), head))
    positive = _softplus(raw[:, 1].astype(np.float64)) + 1e-6
    if head == "standard":
        np.testing.assert_allclose(mean, raw[:, 0], rtol=1e-6)
        np.testing.assert_allclose(var, positive**2, rtol=1e-5)
    else:  # eta_2 = -positive: mu = eta_1 / (2 positive), v = 1 / (2 positive)
        np.testing.assert_allclose(mean, raw[:, 0] / (2 * positive), rtol=1e-5)
        np.testing.assert_allclose(var, 1 / (2 * positive), rtol=1e-5)
    expected = -stats.norm.logpdf(y, mean, np.sqrt(var)) - 0.5 * np.log(2 * np.pi)
    got = np.asarray(nll(jnp.asarray(raw), jnp.asarray(y), head), dtype=np.float64)
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-4)


def test_unknown_head_lists_valid_ones():
    with pytest.raises(ValueError, match="valid: standard, natural"):
        mean_variance(jnp.zeros((1, 2)), "student")


@pytest.mark.parametrize("norm", ["none", "layer"])
def test_backbone_follows_the_residual_formula(norm):
    x = jnp.asarray(np.random.default_rng(1).normal(size=(6, 3)), dtype=jnp.float32)
    net = ResidualMLP(width=5, blocks=2, activation="tanh", norm=norm)
    variables = net.init(jax.random.key(0), x, train=False)
    p = jax.tree.map(np.asarray, variables["params"])

    def dense(i, h):
        return h @ p[f"Dense_{i}"]["kernel"] + p[f"Dense_{i}"]["bias"]

    def normalise(i, h):
        if norm == "none":
            return h
        ln = p[f"_Norm_{i}"]["LayerNorm_0"]
        z = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-6)
        return z * ln["scale"] + ln["bias"]

    h = np.tanh(normalise(0, dense(0, np.asarray(x))))
    for block in range(2):
        u = np.tanh(normalise(1 + 2 * block, dense(1 + 2 * block, h)))
        h = np.tanh(normalise(2 + 2 * block, dense(2 + 2 * block, u)) + h)
    expected = dense(5, h)
    got = net.apply(variables, x, train=False)
    assert got.shape == (6, 2)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activation", ["tanh", "relu", "gelu"])
def test_backbone_dropout_and_batch_norm_modes(activation):
    x = jnp.ones((8, 3)) * jnp.arange(8.0)[:, None]
    net = ResidualMLP(width=16, blocks=1, activation=activation, norm="batch", dropout=0.3)
    variables = net.init(jax.random.key(0), x, train=False)
    out, state = net.apply(
        variables, x, train=True, rngs={"dropout": jax.random.key(1)}, mutable=["batch_stats"]
    )
    assert out.shape == (8, 2)
    moved = jax.tree.map(
        lambda a, b: bool(jnp.any(a != b)), state, {"batch_stats": variables["batch_stats"]}
    )
    assert any(jax.tree.leaves(moved)), "training mode must update the running statistics"
    a = net.apply(variables, x, train=False, sample=True, rngs={"dropout": jax.random.key(2)})
    b = net.apply(variables, x, train=False, sample=True, rngs={"dropout": jax.random.key(3)})
    assert not np.allclose(a, b), "MC dropout passes with different keys must differ"
    c = net.apply(variables, x, train=False)
    np.testing.assert_array_equal(c, net.apply(variables, x, train=False))


def test_unknown_activation_lists_valid_ones():
    net = ResidualMLP(width=4, blocks=0, activation="sigmoid")
    with pytest.raises(ValueError, match="valid: tanh, relu, gelu"):
        net.init(jax.random.key(0), jnp.ones((1, 2)), train=False)


def _least_squares(
    optimizer: optax.GradientTransformation, steps: int = 300
) -> tuple[float, float]:
    rng = np.random.default_rng(2)
    A = jnp.asarray(rng.normal(size=(64, 4)), jnp.float32)
    target = A @ jnp.asarray(rng.normal(size=(4, 3)), jnp.float32) + 0.5
    params = {"w": jnp.zeros((4, 3)), "b": jnp.zeros((3,))}

    def loss(p):
        return jnp.mean((A @ p["w"] + p["b"][None, :] - target) ** 2)

    @jax.jit
    def run(params):
        def step(carry, _):
            p, s = carry
            updates, s = optimizer.update(jax.grad(loss)(p), s, p)
            return (optax.apply_updates(p, updates), s), None

        (p, _), _ = jax.lax.scan(step, (params, optimizer.init(params)), None, length=steps)
        return p

    return float(loss(params)), float(loss(run(params)))


@pytest.mark.parametrize(
    "overrides",
    [
        {"optimizer": "adam"},
        {"optimizer": "sgd", "learning_rate": 0.05, "sgd_nesterov": True},
        {"optimizer": "muon", "learning_rate": 0.02},
        {"optimizer": "soap", "learning_rate": 0.02},
        {"optimizer": "soap", "learning_rate": 0.02, "soap_precondition_1d": True},
    ],
)
def test_every_optimizer_solves_least_squares(overrides):
    cfg = NNConfig(**{"learning_rate": 0.02, "weight_decay": 0.0, **overrides})
    before, after = _least_squares(make_optimizer(cfg))
    assert after < 0.01 * before, f"{overrides}: loss {before:.3g} -> {after:.3g}"


def test_soap_two_steps_match_the_algorithm_in_numpy():
    """Frequency 1: step 1 is Adam in the identity basis; step 2 is Adam in the eigenbases
    of L = (1-b2) g1 g1^T and R = (1-b2) g1^T g1 (second moment carried over unrotated)."""
    b1, b2, eps = 0.9, 0.95, 1e-8
    rng = np.random.default_rng(3)
    g1, g2 = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))
    tx = scale_by_soap(b1, b2, eps, precondition_frequency=1)
    state = tx.init({"w": jnp.zeros((2, 2))})
    u1, state = tx.update({"w": jnp.asarray(g1, jnp.float32)}, state)
    u2, _ = tx.update({"w": jnp.asarray(g2, jnp.float32)}, state)

    m = (1 - b1) * g1
    v = (1 - b2) * g1**2
    np.testing.assert_allclose(u1["w"], (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps), rtol=1e-5)
    QL = np.linalg.eigh((1 - b2) * g1 @ g1.T)[1]
    QR = np.linalg.eigh((1 - b2) * g1.T @ g1)[1]
    m = b1 * m + (1 - b1) * g2
    v = b2 * v + (1 - b2) * (QL.T @ g2 @ QR) ** 2
    step = (QL.T @ m @ QR / (1 - b1**2)) / (np.sqrt(v / (1 - b2**2)) + eps)
    np.testing.assert_allclose(u2["w"], QL @ step @ QR.T, rtol=1e-4, atol=1e-5)
