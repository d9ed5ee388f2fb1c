"""The config shared by the neural-network methods, with the paper's search space.

Defaults and ranges follow the paper's Appendix D.4 (shared BNN space) and E.2 (width
restricted to {16, 32, 64}); tanh and Adam are the defaults (Appendix E). The
optimizer-specific ranges enter :meth:`NNConfig.search_space` only for the chosen optimizer.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Literal

from pydantic import Field

from udora.methods.base import MethodConfig

Activation = Literal["tanh", "relu", "gelu"]
Normalisation = Literal["none", "layer", "batch"]
Parameterisation = Literal["standard", "natural"]
OptimizerName = Literal["adam", "sgd", "muon", "soap"]


def _log(lo: float, hi: float) -> dict[str, Any]:
    return {"distribution": "log_uniform_values", "min": lo, "max": hi}


def _uniform(lo: float, hi: float) -> dict[str, Any]:
    return {"distribution": "uniform", "min": lo, "max": hi}


_OPTIMIZER_SPACES: dict[str, dict[str, dict[str, Any]]] = {
    "adam": {"adam_b2": _uniform(0.95, 0.999), "adam_eps": _log(1e-9, 1e-6)},
    "sgd": {"sgd_nesterov": {"values": [False, True]}},
    "muon": {
        "muon_ns_steps": {"values": [3, 5, 7]},
        "muon_adam_b2": _uniform(0.95, 0.999),
        "muon_preconditioning": {"values": ["frobenius", "spectral"]},
        "muon_nesterov": {"values": [True, False]},
    },
    "soap": {
        "soap_b2": _uniform(0.9, 0.99),
        "soap_precondition_frequency": {"values": [1, 5, 10, 20]},
        "soap_precondition_1d": {"values": [False, True]},
    },
}


class NNConfig(MethodConfig):
    """Backbone, head, optimiser and training schedule of a neural-network method.

    ``n_members`` is K (members, or MC passes for dropout). ``n_epochs`` is the training
    budget (``QUICK`` lowers it for a quick grid). ``momentum`` is
    Adam's/SOAP's b1, SGD's momentum and Muon's beta.

    Schedule. By default (``early_stopping=False``, as in the paper, Appendix D.4: a fixed,
    tuned ``n_epochs`` in [50, 200] and no early stopping) every network trains exactly
    ``n_epochs`` epochs and keeps its last iterate; ``patience`` is then unused. With
    ``early_stopping=True`` each member keeps the parameters of the epoch with the lowest
    loss on a ``val_fraction`` split of the training data and stops after ``patience``
    epochs without improvement (no split: last epoch). The validation split is held out
    only when something uses it: early stopping, or the method's own post-hoc step
    (Laplace, FSP-Laplace, DEUP, SWAG's calibration; see each method). Otherwise the
    networks train on all training points and ``val_fraction`` is unused.
    """

    n_members: int = Field(default=10, ge=2)  # K = 1 would give EU = 0 everywhere
    width: int = Field(default=32, ge=1)
    blocks: int = Field(default=2, ge=0)
    activation: Activation = "tanh"
    norm: Normalisation = "none"
    dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    head: Parameterisation = "standard"
    optimizer: OptimizerName = "adam"
    learning_rate: float = Field(default=1e-3, gt=0.0)
    weight_decay: float = Field(default=1e-4, ge=0.0)
    momentum: float = Field(default=0.9, ge=0.0, lt=1.0)
    adam_b2: float = Field(default=0.999, gt=0.0, lt=1.0)
    adam_eps: float = Field(default=1e-8, gt=0.0)
    sgd_nesterov: bool = False
    muon_ns_steps: int = Field(default=5, ge=1)
    muon_adam_b2: float = Field(default=0.999, gt=0.0, lt=1.0)
    muon_preconditioning: Literal["frobenius", "spectral"] = "frobenius"
    muon_nesterov: bool = True
    soap_b2: float = Field(default=0.95, gt=0.0, lt=1.0)
    soap_precondition_frequency: int = Field(default=10, ge=1)
    soap_precondition_1d: bool = False
    n_epochs: int = Field(default=100, ge=1)
    batch_size: int = Field(default=128, ge=1)
    val_fraction: float = Field(default=0.1, ge=0.0, lt=1.0)
    early_stopping: bool = False
    patience: int = Field(default=20, ge=1)

    BATCH_FIELDS: ClassVar[tuple[str, ...]] = ("batch_size",)  # their smallest: the micro-step
    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        "width": {"values": [16, 32, 64]},
        "blocks": {"values": [1, 2, 3, 4]},
        "n_epochs": {"distribution": "int_uniform", "min": 50, "max": 200},
        "batch_size": {"values": [64, 128, 256, 512]},
        "learning_rate": _log(1e-4, 5e-3),
        "weight_decay": _log(1e-6, 1e-2),
        "momentum": _uniform(0.7, 0.95),
    }
    QUICK: ClassVar[dict[str, Any]] = {"n_epochs": 30}

    def search_space(self) -> dict[str, dict[str, Any]]:
        space = super().search_space()
        space.update(copy.deepcopy(_OPTIMIZER_SPACES[self.optimizer]))
        return space
