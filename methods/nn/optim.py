"""Optimisers for the neural-network methods, built from an :class:`NNConfig`.

- ``adam``: AdamW (Loshchilov & Hutter 2019), ``b1 = momentum``, ``b2 = adam_b2``,
  ``eps = adam_eps``, decoupled weight decay ``p <- p - lr (adam_step + wd p)``.
- ``sgd``: SGD with (Nesterov) momentum; weight decay as an L2 gradient term
  ``g <- g + wd p`` (the same thing for plain SGD).
- ``muon``: ``optax.contrib.muon`` (Newton-Schulz-orthogonalised momentum on matrices,
  AdamW on biases); ``beta = momentum``, ``ns_steps``, ``nesterov``, ``preconditioning``,
  ``adam_b2 = muon_adam_b2``, decoupled weight decay on both parts.
- ``soap``: :func:`methods.nn.soap.soap`, ``b1 = momentum``, ``b2 = soap_b2``.
"""

from __future__ import annotations

import optax
import optax.contrib

from udora.methods.nn.config import NNConfig
from udora.methods.nn.soap import soap

OPTIMIZERS = ("adam", "sgd", "muon", "soap")


def make_optimizer(cfg: NNConfig) -> optax.GradientTransformation:
    """The optax transformation named by ``cfg.optimizer`` with ``cfg``'s settings."""
    if cfg.optimizer == "adam":
        return optax.adamw(
            cfg.learning_rate,
            b1=cfg.momentum,
            b2=cfg.adam_b2,
            eps=cfg.adam_eps,
            weight_decay=cfg.weight_decay,
        )
    if cfg.optimizer == "sgd":
        return optax.chain(
            optax.add_decayed_weights(cfg.weight_decay),
            optax.sgd(cfg.learning_rate, momentum=cfg.momentum, nesterov=cfg.sgd_nesterov),
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
