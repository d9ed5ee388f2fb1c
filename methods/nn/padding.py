"""What the NN programs pad to, and padded trees to and from the flax network's.

:func:`padding` is the policy (which sizes a config's program has, see its doc);
:func:`dims_of` the call-time numbers; :func:`to_flax` cuts a padded tree (any leading
axes) to the true-shaped tree of :class:`~udora.methods.nn.backbone.ResidualMLP` that the
methods keep, and :func:`from_flax` pads one (:mod:`methods.nn.padded`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from udora.methods.nn.config import NNConfig
from udora.methods.nn.padded import _NORM_MODULE, Dims, Padding, Variables, make_dims

MICRO = 64
"""Rows per gradient micro-step when the config's space does not say (see :func:`padding`)."""

PAD_WIDTH = False
"""Whether programs pad the width too (:func:`padding`). Off: on the CPU a padded width
costs its full FLOPs (a width-16 network padded to 64 trains about 4x slower, and over
the default space training takes 2.3x longer in a simulated 10-trial sweep,
``benchmarks/bench_trainer.py``), so the width keys the program: at most one program per
width of the space (3 by default) instead of one per configuration."""


COMPILER_OPTIONS = {"xla_backend_optimization_level": 1}
"""XLA options of the NN programs (training, prediction, the last-layer design): LLVM's
level 1 instead of 2 compiles the training program in about 60 % of the time and runs
it as fast on the CPU (a width-32, 2-block, 10-member program on 720 rows: 15.6 -> 9.3 s
compile, 3.7 -> 3.2 s for 100 epochs, measured on two busy cores)."""


def space_bound(cfg: NNConfig, field: str, pick: Callable[..., int]) -> int | None:
    """``pick`` (max or min) of ``field``'s values or range in ``type(cfg).SEARCH_SPACE``."""
    entry = type(cfg).SEARCH_SPACE.get(field)
    if not entry:
        return None
    if "values" in entry:
        return int(pick(entry["values"]))
    if "min" in entry and "max" in entry:
        return int(pick(entry["min"], entry["max"]))
    return None


def padding(cfg: NNConfig, n_out: int) -> Padding:
    """The static sizes ``cfg`` trains at.

    With AdamW or SGD (whose updates leave a zero parameter with a zero gradient at zero):
    blocks (and the width with :data:`PAD_WIDTH`) padded to the largest of the config's
    class search space (:attr:`NNConfig.SEARCH_SPACE`, or the config's own if larger),
    micro-steps of the space's smallest batch size over the config's ``BATCH_FIELDS`` (the
    config's if smaller; DEUP's excess network has a batch size of its own). So every
    config of the space with the same width shares one program. Muon and SOAP
    (shape-dependent updates: Newton-Schulz orthogonalisation, Kronecker-factored
    preconditioners) train at the config's own sizes, and BatchNorm (statistics over the
    whole batch) takes the whole batch in one micro-step.
    """
    shared = cfg.optimizer in ("adam", "sgd")
    width, blocks, micro = cfg.width, cfg.blocks, cfg.batch_size
    if shared:
        if PAD_WIDTH:
            width = max(width, space_bound(cfg, "width", max) or width)
        blocks = max(blocks, space_bound(cfg, "blocks", max) or blocks)
        if cfg.norm != "batch":
            bounds = [space_bound(cfg, f, min) for f in type(cfg).BATCH_FIELDS]
            micro = min(micro, min((b for b in bounds if b), default=MICRO))
    return Padding(width, blocks, micro, cfg.activation, cfg.norm, cfg.dropout > 0, n_out)


def eval_padding(cfg: NNConfig, n_out: int) -> Padding:
    """The static sizes of ``cfg``'s programs that make no optimiser step: initialisation,
    prediction and the last-layer design.

    Width and blocks are padded to the largest of the class search space (or the config's
    own if larger), whatever :data:`PAD_WIDTH` and the optimiser say: a forward pass at the
    padded width costs little next to training, so every config of the space shares these
    programs (one compile per sweep, not one per width). The micro-step size does not
    enter them (0)."""
    width = max(cfg.width, space_bound(cfg, "width", max) or cfg.width)
    blocks = max(cfg.blocks, space_bound(cfg, "blocks", max) or cfg.blocks)
    return Padding(width, blocks, 0, cfg.activation, cfg.norm, cfg.dropout > 0, n_out)


def dims_of(cfg: NNConfig) -> Dims:
    """The call-time architecture of ``cfg`` (:class:`~udora.methods.nn.padded.Dims`)."""
    return make_dims(cfg.width, cfg.blocks, cfg.batch_size, cfg.dropout)


def to_flax(variables: Variables, width: int, blocks: int) -> Variables:
    """The :class:`ResidualMLP` tree of width ``width`` and ``blocks`` blocks cut from a
    padded tree; any leading axes (members, checkpoints) are kept."""
    out: Variables = {}
    for collection, tree in variables.items():
        cut: Variables = {}
        for name, leaves in tree.items():
            if name == "head":
                cut[f"Dense_{2 * blocks + 1}"] = {
                    "kernel": leaves["kernel"][..., :width, :],
                    "bias": leaves["bias"],
                }
                continue
            i = int(name.rsplit("_", 1)[1])
            if i > 2 * blocks:
                continue
            if name.startswith("Dense_"):
                kernel = leaves["kernel"]
                kernel = kernel[..., :width] if i == 0 else kernel[..., :width, :width]
                cut[name] = {"kernel": kernel, "bias": leaves["bias"][..., :width]}
            else:
                cut[name] = jax.tree.map(lambda a: a[..., :width], leaves)
        out[collection] = cut
    return out


def from_flax(pad: Padding, variables: Variables, width: int, blocks: int) -> Variables:
    """A :class:`ResidualMLP` tree (width ``width``, ``blocks`` blocks; leading axes kept)
    padded with zeros to ``pad``'s sizes (inverse of :func:`to_flax`), as host (numpy)
    arrays: padding compiles nothing."""
    W = pad.width

    def grow(a, axes: tuple[int, ...]):
        a = np.asarray(a)
        widths = [(0, 0)] * a.ndim
        for ax in axes:
            widths[ax] = (0, W - a.shape[ax])
        return np.pad(a, widths)

    out: Variables = {}
    for collection, tree in variables.items():
        # leading axes (members, checkpoints): those of any (..., w) leaf
        any_units = tree["Dense_0"]["bias"] if collection == "params" else jax.tree.leaves(tree)[0]
        lead = np.shape(any_units)[:-1]
        grown: Variables = {}
        for name, leaves in tree.items():
            i = int(name.rsplit("_", 1)[1])
            if name.startswith("Dense_") and i == 2 * blocks + 1:
                grown["head"] = {"kernel": grow(leaves["kernel"], (-2,)), "bias": leaves["bias"]}
            elif name.startswith("Dense_"):
                axes = (-1,) if i == 0 else (-2, -1)
                grown[name] = {
                    "kernel": grow(leaves["kernel"], axes),
                    "bias": grow(leaves["bias"], (-1,)),
                }
            else:
                grown[name] = jax.tree.map(lambda a: grow(a, (-1,)), leaves)
        for i in range(2 * blocks + 1, 2 * pad.blocks + 1):  # gated-off blocks: zeros
            if collection == "params":
                grown[f"Dense_{i}"] = {
                    "kernel": np.zeros((*lead, W, W), np.float32),
                    "bias": np.zeros((*lead, W), np.float32),
                }
            if pad.norm != "none" and (collection == "params" or pad.norm == "batch"):
                names = ("scale", "bias") if collection == "params" else ("mean", "var")
                module = _NORM_MODULE[pad.norm]
                grown[f"_Norm_{i}"] = {module: {n: np.zeros((*lead, W), np.float32) for n in names}}
        out[collection] = grown
    return out


def cut_trees(tree: Any, width: int, blocks: int) -> Any:
    """Every padded variables or params tree inside ``tree`` cut to the true shapes
    (:func:`udora.methods.nn.padded.to_flax`); the cuts are made on host copies and put
    back with ``device_put`` (``jnp.asarray`` of a host array compiles a program per
    shape), so they compile nothing."""
    if isinstance(tree, dict) and "head" in tree:
        params = jax.tree.map(np.asarray, tree)
        return jax.device_put(to_flax({"params": params}, width, blocks)["params"])
    if isinstance(tree, dict) and "params" in tree:
        cut = {k: cut_trees(v, width, blocks) for k, v in tree.items() if k != "batch_stats"}
        if "batch_stats" in tree:
            stats = jax.tree.map(np.asarray, {"batch_stats": tree["batch_stats"]})
            cut["batch_stats"] = jax.device_put(to_flax(stats, width, blocks)["batch_stats"])
        return cut
    if isinstance(tree, tuple):
        items = [cut_trees(v, width, blocks) for v in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else tuple(items)
    return tree
