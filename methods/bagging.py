"""Bagged networks (Breiman 1996): K members, each on its own resample of the fit split.

Member k trains on ``m = round(sample_fraction * n)`` rows drawn from the n fit rows (by
default all training points: no validation split unless ``early_stopping`` uses one) with
or without replacement (``replace``); a row drawn twice counts twice. The per-member row
tables are drawn from the run seed, and all members train in one vmapped program
(paper, Appendix D.4, "BNN bagging"; n_members = 10, sample_fraction in [0.6, 0.95]).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from udora.methods.nn.config import NNConfig
from udora.methods.nn.method import NNMethod, Recipe
from udora.methods.registry import register


class BaggingConfig(NNConfig):
    """:class:`NNConfig` plus the resample size (fraction of n) and replacement."""

    sample_fraction: float = Field(default=0.8, gt=0.0, le=1.0)
    replace: bool = True

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        **NNConfig.SEARCH_SPACE,
        "sample_fraction": {"distribution": "uniform", "min": 0.6, "max": 0.95},
        "replace": {"values": [True, False]},
    }


def resampled_rows(
    cfg: BaggingConfig, n_trained: int, n: int, rng: np.random.Generator
) -> np.ndarray:
    """``(K, m)`` resampled row indices, ``m = max(1, round(sample_fraction * n))``."""
    m = max(1, round(cfg.sample_fraction * n))
    return np.stack([rng.choice(n, size=m, replace=cfg.replace) for _ in range(n_trained)])


@register("nn_bagging")
class NNBagging(NNMethod):
    """Bagging: K=10 residual MLPs, each fitted to a resample of the training data."""

    family = "NN"
    kinds = ("regression", "classification")
    Config = BaggingConfig
    config: BaggingConfig
    recipe = Recipe(rows=resampled_rows, resampled=True)
