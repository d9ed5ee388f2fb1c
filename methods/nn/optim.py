"""Optimisers for the neural-network methods, built from an :class:`NNConfig`.

- ``adam``: AdamW (Loshchilov & Hutter 2019), ``b1 = momentum``, ``b2 = adam_b2``,
  ``eps = adam_eps``, decoupled weight decay ``p <- p - lr (adam_step + wd p)``.
- ``sgd``: SGD with (Nesterov) momentum; weight decay as an L2 gradient term
  ``g <- g + wd p`` (the same thing for plain SGD).
- ``muon``: ``optax.contrib.muon`` (Newton-Schulz-orthogonalised momentum on matrices,
  AdamW on biases); ``beta = momentum``, ``ns_steps``, ``nesterov``, ``preconditioning``,
  ``adam_b2 = muon_adam_b2``, decoupled weight decay on both parts.
- ``soap``: :func:`methods.nn.soap.soap`, ``b1 = momentum``, ``b2 = soap_b2``.

For ``adam`` and ``sgd`` the numbers (:data:`DYNAMIC`) are call arguments of the compiled
training program, not constants in it: the transformation is wrapped in
``optax.inject_hyperparams`` and the program sets the state's hyperparameters from
:func:`hyperparams` after ``init``. Configs that differ only in these numbers (a sweep's
trials of one architecture, a learning-rate ablation) then share one compiled program
(:func:`optimizer_key`). Muon and SOAP keep them as constants.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
import optax.contrib
import optax.tree_utils

from udora.methods.nn.config import NNConfig
from udora.methods.nn.soap import soap

OPTIMIZERS = ("adam", "sgd", "muon", "soap")
# optimizer -> {optax hyperparameter name: config field} passed to the program at call time
DYNAMIC = {
    "adam": {
        "learning_rate": "learning_rate",
        "b1": "momentum",
        "b2": "adam_b2",
        "eps": "adam_eps",
        "weight_decay": "weight_decay",
    },
    "sgd": {
        "learning_rate": "learning_rate",
        "momentum": "momentum",
        "weight_decay": "weight_decay",
    },
}


# optimizer -> the config fields compiled into its program (the rest are DYNAMIC or unused)
STATIC = {
    "adam": (),
    "sgd": ("sgd_nesterov",),
    "muon": (
        "learning_rate",
        "momentum",
        "weight_decay",
        "muon_ns_steps",
        "muon_adam_b2",
        "muon_preconditioning",
        "muon_nesterov",
    ),
    "soap": (
        "learning_rate",
        "momentum",
        "weight_decay",
        "soap_b2",
        "soap_precondition_frequency",
        "soap_precondition_1d",
    ),
}


def optimizer_key(cfg: NNConfig) -> tuple[Any, ...]:
    """``(optimizer, ((field, value), ...))``: what of ``cfg`` the optimizer's program
    depends on (:data:`STATIC`); configs with equal keys share compiled programs, whatever
    their other fields (a method's post-hoc settings, the architecture)."""
    if cfg.optimizer not in STATIC:
        raise ValueError(f"unknown optimizer {cfg.optimizer!r}; valid: {', '.join(OPTIMIZERS)}")
    return cfg.optimizer, tuple((f, getattr(cfg, f)) for f in STATIC[cfg.optimizer])


def optimizer_config(key: tuple[Any, ...]) -> NNConfig:
    """A config whose :func:`make_optimizer` is the one of every config with this
    :func:`optimizer_key` (the DYNAMIC numbers are set at call time)."""
    name, fields = key
    return NNConfig(optimizer=name, **dict(fields))


def _sgd(learning_rate, momentum, weight_decay, nesterov):
    return optax.chain(
        optax.add_decayed_weights(weight_decay),
        optax.sgd(learning_rate, momentum=momentum, nesterov=nesterov),
    )


def hyperparams(cfg: NNConfig) -> dict[str, jax.Array]:
    """The call-time hyperparameters of ``cfg``'s optimizer, float32 scalars by optax name
    (empty for muon and soap)."""
    fields = DYNAMIC.get(cfg.optimizer, {})
    return {name: jnp.asarray(getattr(cfg, field), jnp.float32) for name, field in fields.items()}


def set_hyperparams(opt_state: Any, values: dict[str, jax.Array]) -> Any:
    """``opt_state`` (of :func:`make_optimizer`, possibly chained) with ``values`` set."""
    return optax.tree_utils.tree_set(opt_state, **values) if values else opt_state


def make_optimizer(cfg: NNConfig) -> optax.GradientTransformation:
    """The optax transformation named by ``cfg.optimizer`` with ``cfg``'s settings."""
    if cfg.optimizer == "adam":
        return optax.inject_hyperparams(optax.adamw)(
            learning_rate=cfg.learning_rate,
            b1=cfg.momentum,
            b2=cfg.adam_b2,
            eps=cfg.adam_eps,
            weight_decay=cfg.weight_decay,
        )
    if cfg.optimizer == "sgd":
        return optax.inject_hyperparams(_sgd, static_args=("nesterov",))(
            learning_rate=cfg.learning_rate,
            momentum=cfg.momentum,
            weight_decay=cfg.weight_decay,
            nesterov=cfg.sgd_nesterov,
        )
    if cfg.optimizer == "muon":
        return optax.contrib.muon(
            cfg.learning_rate,
            ns_steps=cfg.muon_ns_steps,
            beta=cfg.momentum,
            weight_decay=cfg.weight_decay,
            nesterov=cfg.muon_nesterov,
            preconditioning=cfg.muon_preconditioning,
            adam_b1=cfg.momentum,
            adam_b2=cfg.muon_adam_b2,
            adam_weight_decay=cfg.weight_decay,
        )
    if cfg.optimizer == "soap":
        return soap(
            cfg.learning_rate,
            b1=cfg.momentum,
            b2=cfg.soap_b2,
            weight_decay=cfg.weight_decay,
            precondition_frequency=cfg.soap_precondition_frequency,
            precondition_1d=cfg.soap_precondition_1d,
        )
    raise ValueError(f"unknown optimizer {cfg.optimizer!r}; valid: {', '.join(OPTIMIZERS)}")
