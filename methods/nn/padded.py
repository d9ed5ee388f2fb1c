"""The residual MLP (:mod:`methods.nn.backbone`) stored at padded sizes, for one program.

A network of true width ``w`` and ``L`` residual blocks lives in a variables tree of the
padded sizes ``W >= w`` and ``L_max >= L`` (:class:`Padding`, static); ``w``, ``L``, the
batch size and the dropout rate are call-time numbers (:class:`Dims`, traced), so one
compiled training program serves every point of a search space
(:mod:`methods.nn.trainer`). With ``m_u = [u < w]`` the unit mask:

- the padded units of every layer are exactly 0: their incoming weights and biases are 0
  at initialisation, their outputs pass through ``where(m_u, h, 0)`` after each
  normalisation, and their gradients are set to 0 (:func:`gradient_mask`), so no
  optimiser moves them (AdamW's and SGD's update of a zero parameter with a zero
  gradient is zero);
- block ``l >= L`` is gated off with ``lax.cond``: ``h_{l+1} = h_l`` exactly and its
  gradients are 0 (a gate by ``where`` or a multiply would still compute the block, and
  ``0 * inf`` is NaN);
- LayerNorm's statistics run over the ``w`` real units, BatchNorm's over the real rows
  of the batch (``row_mask``), with flax's formulas (``Var = E[x^2] - E[x]^2``, clipped
  at 0; eps 1e-6 and 1e-5; running averages with momentum 0.9).

Random draws do not depend on the padding: every layer's kernel row ``i`` is drawn from
``fold_in(k_layer, i)`` at length ``W`` and its first ``w`` entries kept, and dropout's
mask for the batch row at position ``p`` from ``fold_in(k_site, p)``; JAX's partitionable
threefry makes the first ``w`` of ``W`` draws equal to a draw of ``w``. So a config gives
the same numbers (up to float reassociation) whatever the padding, and so whatever search
space it was trained in. Initialisation follows flax's defaults in distribution, not in
draws: LeCun-normal kernels (truncated normal, variance ``1 / fan_in`` of the *true*
fan-in), zero biases, unit norm scales.

:func:`methods.nn.padding.to_flax` cuts a padded tree (any leading axes) to the true-shaped tree of
:class:`~udora.methods.nn.backbone.ResidualMLP` that every later step uses;
:func:`~methods.nn.padding.from_flax` pads one.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from udora.methods.nn.backbone import ACTIVATIONS

Variables = dict[str, Any]
_NORM_MODULE = {"layer": "LayerNorm_0", "batch": "BatchNorm_0"}
_EPS = {"layer": 1e-6, "batch": 1e-5}
_BN_MOMENTUM = 0.9
# flax's lecun_normal: a standard normal truncated to [-2, 2], rescaled to unit variance
_TRUNC_STD = 0.87962566103423978


class Padding(NamedTuple):
    """Static sizes and kinds of the padded network (part of the program's cache key).

    Attributes:
        width: padded width ``W``.
        blocks: padded number of blocks ``L_max``.
        micro: rows ``R`` per gradient micro-step (:mod:`methods.nn.trainer`).
        activation, norm: as in :class:`~udora.methods.nn.config.NNConfig`.
        dropout: whether the network has dropout at all (its rate is a :class:`Dims`).
        n_out: width of the head.
    """

    width: int
    blocks: int
    micro: int
    activation: str
    norm: str
    dropout: bool
    n_out: int


class Dims(NamedTuple):
    """The call-time architecture: true ``width`` and ``blocks``, ``batch`` size (int32
    scalars) and dropout ``rate`` (float32 scalar)."""

    width: jax.Array
    blocks: jax.Array
    batch: jax.Array
    rate: jax.Array


def make_dims(width: int, blocks: int, batch: int, rate: float) -> Dims:
    """:class:`Dims` as JAX scalars (int32, float32)."""
    i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
    return Dims(i32(width), i32(blocks), i32(batch), jnp.asarray(rate, jnp.float32))


def _dense_names(pad: Padding) -> list[str]:
    """``Dense_0`` (input), then two per block: flax's names at ``L_max`` blocks."""
    return [f"Dense_{i}" for i in range(2 * pad.blocks + 1)]


def _unit(pad: Padding, dims: Dims) -> jax.Array:
    """The unit mask ``m_u`` ``(W,)``."""
    return jnp.arange(pad.width) < dims.width


def _block_of(i: int) -> int:
    """The block of ``Dense_i`` (``Dense_0``, the input layer, is "block -1")."""
    return (i - 1) // 2


def init(pad: Padding, dims: Dims, key: jax.Array, d: int) -> Variables:
    """Fresh padded variables for inputs of width ``d`` (see the module doc)."""
    unit = _unit(pad, dims)
    wf = dims.width.astype(jnp.float32)

    def kernel(k, fan_in_rows: int, fan_in: jax.Array, cols: int, row_mask, col_mask):
        def row(i):
            return jax.random.truncated_normal(jax.random.fold_in(k, i), -2.0, 2.0, (cols,))

        rows = jax.vmap(row)(jnp.arange(fan_in_rows))
        scaled = rows * (jnp.sqrt(1.0 / fan_in) / _TRUNC_STD)
        keep = row_mask[:, None] & col_mask[None, :]
        return jnp.where(keep, scaled, 0.0)

    params: Variables = {}
    names = _dense_names(pad)
    k_layers, k_head = jax.random.split(key)  # the head's draw must not depend on L_max
    all_in = jnp.ones((d,), bool)
    for i, name in enumerate(names):
        k = jax.random.fold_in(k_layers, i)
        live = (_block_of(i) < dims.blocks) if i else jnp.asarray(True)
        if i == 0:
            w = kernel(k, d, jnp.float32(d), pad.width, all_in, unit)
        else:
            w = kernel(k, pad.width, wf, pad.width, unit, unit)
        params[name] = {"kernel": jnp.where(live, w, 0.0), "bias": jnp.zeros(pad.width)}
        if pad.norm != "none":
            scale = jnp.where(unit & live, 1.0, 0.0)
            params[f"_Norm_{i}"] = {
                _NORM_MODULE[pad.norm]: {"scale": scale, "bias": jnp.zeros(pad.width)}
            }
    head = kernel(k_head, pad.width, wf, pad.n_out, unit, jnp.ones((pad.n_out,), bool))
    params["head"] = {"kernel": head, "bias": jnp.zeros(pad.n_out)}
    variables: Variables = {"params": params}
    if pad.norm == "batch":
        stats = {"mean": jnp.zeros(pad.width), "var": jnp.where(unit, 1.0, 0.0)}
        variables["batch_stats"] = {
            f"_Norm_{i}": {"BatchNorm_0": dict(stats)} for i in range(len(names))
        }
    return variables


def gradient_mask(pad: Padding, dims: Dims, params: Variables) -> Variables:
    """Booleans shaped like ``params``: True exactly on the live entries of ``(w, L)``."""
    unit = _unit(pad, dims)
    mask: Variables = {}
    for name, leaves in params.items():
        if name == "head":
            mask[name] = {
                "kernel": jnp.broadcast_to(unit[:, None], leaves["kernel"].shape),
                "bias": jnp.ones(leaves["bias"].shape, bool),
            }
            continue
        i = int(name.rsplit("_", 1)[1])
        live = (_block_of(i) < dims.blocks) if i else jnp.asarray(True)
        if name.startswith("Dense_"):
            rows = jnp.ones((leaves["kernel"].shape[0],), bool) if i == 0 else unit
            kernel = rows[:, None] & unit[None, :] & live
            mask[name] = {"kernel": kernel, "bias": unit & live}
        else:
            mask[name] = jax.tree.map(lambda a, live=live: unit & live, leaves)
    return mask


def _normalise(pad, dims, p, stats, h, row_mask, *, train):
    """``(h', new stats)``: masked LayerNorm or BatchNorm of ``h`` ``(B, W)``."""
    if pad.norm == "none":
        return h, stats
    unit = _unit(pad, dims)
    p = p[_NORM_MODULE[pad.norm]]
    eps = _EPS[pad.norm]
    if pad.norm == "layer":
        where = jnp.broadcast_to(unit[None, :], h.shape)
        mean = jnp.mean(h, axis=1, keepdims=True, where=where)
        var = jnp.maximum(jnp.mean(h * h, axis=1, keepdims=True, where=where) - mean**2, 0.0)
    elif train:
        where = jnp.broadcast_to(row_mask[:, None], h.shape)
        mean = jnp.mean(h, axis=0, keepdims=True, where=where)
        var = jnp.maximum(jnp.mean(h * h, axis=0, keepdims=True, where=where) - mean**2, 0.0)
        s = stats["BatchNorm_0"]
        stats = {
            "BatchNorm_0": {
                "mean": _BN_MOMENTUM * s["mean"] + (1 - _BN_MOMENTUM) * mean[0],
                "var": _BN_MOMENTUM * s["var"] + (1 - _BN_MOMENTUM) * var[0],
            }
        }
    else:
        mean = stats["BatchNorm_0"]["mean"][None, :]
        var = stats["BatchNorm_0"]["var"][None, :]
    out = (h - mean) * jax.lax.rsqrt(var + eps) * p["scale"][None, :] + p["bias"][None, :]
    return jnp.where(unit[None, :], out, 0.0), stats


def _dropout(pad, dims, h, key, positions):
    """Inverted dropout of ``h`` ``(B, W)``; row ``b`` draws from ``fold_in(key, p_b)``."""
    u = jax.vmap(lambda p: jax.random.uniform(jax.random.fold_in(key, p), (pad.width,)))(positions)
    keep = u >= dims.rate
    return jnp.where(keep, h / (1.0 - dims.rate), 0.0)


def apply(
    pad: Padding,
    dims: Dims,
    variables: Variables,
    x: jax.Array,
    *,
    train: bool,
    sample: bool = False,
    features: bool = False,
    key: jax.Array | None = None,
    positions: jax.Array | None = None,
    row_mask: jax.Array | None = None,
) -> tuple[jax.Array, Variables]:
    """Head outputs ``(B, n_out)`` at ``x`` ``(B, d)`` and the new non-parameter state.

    ``train`` uses batch statistics (over ``row_mask`` ``(B,)`` rows) and dropout drawn
    from ``key`` at the batch ``positions`` ``(B,)`` (see the module doc); ``sample``
    keeps dropout on with running statistics (MC dropout); otherwise the pass is
    deterministic. The state changes only in a training pass with BatchNorm.
    ``features`` returns the last hidden layer ``h_L`` ``(B, W)`` instead of the head.
    """
    act = ACTIVATIONS[pad.activation]
    params = variables["params"]
    state = {k: v for k, v in variables.items() if k != "params"}
    stats_all = dict(state.get("batch_stats", {}))
    rows = jnp.ones((x.shape[0],), bool) if row_mask is None else row_mask
    drop_on = (train or sample) and pad.dropout

    def layer(i, h_in, stats_all):
        z = h_in @ params[f"Dense_{i}"]["kernel"] + params[f"Dense_{i}"]["bias"][None, :]
        stats = stats_all.get(f"_Norm_{i}")
        z, stats = _normalise(pad, dims, params.get(f"_Norm_{i}"), stats, z, rows, train=train)
        if stats is not None:
            stats_all = {**stats_all, f"_Norm_{i}": stats}
        return z, stats_all

    def drop(h, site):
        if not drop_on:
            return h
        return _dropout(pad, dims, h, jax.random.fold_in(key, site), positions)

    z, stats_all = layer(0, x, stats_all)
    h = drop(act(z), 0)
    for b in range(pad.blocks):

        def block(h, stats_all, b=b):
            z, stats_all = layer(2 * b + 1, h, stats_all)
            u = drop(act(z), b + 1)
            z, stats_all = layer(2 * b + 2, u, stats_all)
            return act(z + h), stats_all

        h, stats_all = jax.lax.cond(b < dims.blocks, block, lambda h, s: (h, s), h, stats_all)
    out = h if features else h @ params["head"]["kernel"] + params["head"]["bias"][None, :]
    if "batch_stats" in state and train:
        state = {**state, "batch_stats": stats_all}
    return out, state
