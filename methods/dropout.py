"""MC dropout (Gal & Ghahramani 2016): one network trained with dropout, K stochastic passes.

At prediction time dropout stays on (normalisation uses its running statistics) and K
passes with independent masks act as members: mean = average pass mean, aleatoric =
average pass variance, epistemic = variance of the pass means (paper, Appendix D.4,
"MC dropout BNN"; n_members = 10 passes, dropout in [0.05, 0.35]). The masks come from
the run seed, so the same seed gives the same prediction. The network trains on all
training points (no validation split unless ``early_stopping`` uses one).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from udora.methods.nn.config import NNConfig
from udora.methods.nn.method import NNMethod, Recipe
from udora.methods.registry import register


class DropoutConfig(NNConfig):
    """:class:`NNConfig` with dropout on (``0 < dropout < 1``); ``n_members`` = MC passes."""

    dropout: float = Field(default=0.1, gt=0.0, lt=1.0)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        **NNConfig.SEARCH_SPACE,
        "dropout": {"distribution": "uniform", "min": 0.05, "max": 0.35},
    }


@register("nn_dropout")
class NNDropout(NNMethod):
    """MC dropout: one residual MLP, 10 stochastic forward passes at prediction."""

    family = "NN"
    kinds = ("regression", "classification")
    Config = DropoutConfig
    config: DropoutConfig
    recipe = Recipe(one_network=True, mc_dropout=True)
