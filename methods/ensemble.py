"""Deep ensemble (Lakshminarayanan et al. 2017): K independently initialised networks.

Every member trains on the whole fit split (by default all training points: no
validation split is held out unless ``early_stopping`` uses one, :class:`NNConfig`) with
its own initialisation, shuffling and dropout keys; the K members train together in one
vmapped program. Members combine as
mean = average member mean, aleatoric = average member variance, epistemic = variance of
the member means (paper, Appendix D.4, "Deep ensemble BNN"; n_members = 10).
"""

from __future__ import annotations

from udora.methods.nn.method import NNMethod
from udora.methods.registry import register


@register("nn_ensemble")
class NNEnsemble(NNMethod):
    """Deep ensemble of K=10 residual MLPs (Gaussian heads; softmax on classification)."""

    family = "NN"
    kinds = ("regression", "classification")
