"""A deep ensemble trained with the beta-NLL loss (Seitzer et al. 2022), on udora's trainer.

Each member's per-point loss is the Gaussian NLL weighted by the member's own predicted
variance v to the power beta, held constant in the gradient:
l_beta(mu, v; y) = stopgrad(v^beta) * (1/2 log v + (y - mu)^2 / (2 v)).
beta = 0 is the NLL of nn_ensemble; beta = 1 gives the mean the gradient of the squared
error. Members combine as in nn_ensemble (mean of means, mean of variances, variance of
the means).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
from pydantic import Field

from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import mean_variance, nll
from udora.methods.nn.method import NNMethod, Recipe
from udora.methods.nn.step import TRACED


@dataclasses.dataclass(frozen=True)
class BetaNLL:
    """Per-point beta-NLL ``(B,)`` of raw head outputs ``(B, 2)`` at targets ``(B,)``."""

    head: str
    beta: float = dataclasses.field(metadata=TRACED)  # an argument: a sweep compiles once
    n_out: ClassVar[int] = 2

    def __call__(self, raw: jax.Array, y: jax.Array) -> jax.Array:
        _, var = mean_variance(raw, self.head)
        return jax.lax.stop_gradient(var**self.beta) * nll(raw, y, self.head)


class BetaNLLConfig(NNConfig):
    """:class:`NNConfig` (backbone, optimiser, n_members, n_epochs) plus ``beta``."""

    beta: float = Field(default=0.5, ge=0.0, le=1.0)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        **NNConfig.SEARCH_SPACE,
        "beta": {"distribution": "uniform", "min": 0.0, "max": 1.0},
    }  # QUICK is NNConfig's: n_epochs = 30


def beta_nll(cfg: BetaNLLConfig) -> BetaNLL:
    """The recipe's loss: the config's head and beta."""
    return BetaNLL(cfg.head, cfg.beta)


class BetaNLLEnsemble(NNMethod):
    """Deep ensemble of residual MLPs with Gaussian heads, trained with the beta-NLL."""

    family = "NN"
    Config = BetaNLLConfig
    config: BetaNLLConfig
    recipe = Recipe(loss=beta_nll)
