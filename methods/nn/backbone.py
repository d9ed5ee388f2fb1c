"""The residual tabular MLP shared by the neural-network methods (flax.linen).

With ``sigma`` the activation, ``Norm`` the chosen normalisation (identity, LayerNorm or
BatchNorm) and ``Drop`` dropout (paper, Appendix D.4; after TabResNet, Gorishniy et al.
2021):

    h_0     = Drop(sigma(Norm(W_in x + b_in)))
    u_l     = Drop(sigma(Norm(W_1^l h_l + b_1^l)))
    h_{l+1} = sigma(Norm(W_2^l u_l + b_2^l) + h_l),      l = 0, ..., L - 1
    out     = W_out h_L + b_out                           (the linear head, ``n_out`` wide)

Inputs are standardised by the method before they reach the network.
"""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh,
    "relu": nn.relu,
    "gelu": nn.gelu,
}


class _Norm(nn.Module):
    """Identity, LayerNorm or BatchNorm over the feature axis of ``(B, width)``."""

    kind: str

    @nn.compact
    def __call__(self, h: jax.Array, *, train: bool) -> jax.Array:
        if self.kind == "none":
            return h
        if self.kind == "layer":
            return nn.LayerNorm()(h)
        if self.kind == "batch":
            return nn.BatchNorm(use_running_average=not train, momentum=0.9)(h)
        raise ValueError(f"unknown normalisation {self.kind!r}; valid: none, layer, batch")


class ResidualMLP(nn.Module):
    """Residual tabular MLP mapping a batch ``(B, d)`` to head outputs ``(B, n_out)``.

    Attributes:
        width: hidden width of every layer.
        blocks: number L of residual blocks.
        activation: ``tanh`` | ``relu`` | ``gelu``.
        norm: ``none`` | ``layer`` | ``batch`` (BatchNorm keeps ``batch_stats``).
        dropout: drop probability after the input layer and inside each block.
        n_out: width of the linear head (2 for a Gaussian head).
    """

    width: int
    blocks: int
    activation: str = "tanh"
    norm: str = "none"
    dropout: float = 0.0
    n_out: int = 2

    @nn.compact
    def __call__(
        self, x: jax.Array, *, train: bool, sample: bool = False, features: bool = False
    ) -> jax.Array:
        """Forward pass of ``x`` ``(B, d)``.

        ``train`` uses batch statistics and dropout; ``sample`` keeps dropout on with
        running statistics (MC dropout). Dropout needs a ``"dropout"`` rng when active.
        ``features`` returns the last hidden layer ``h_L`` ``(B, width)`` instead of the head
        (last-layer methods).
        """
        if self.activation not in ACTIVATIONS:
            valid = ", ".join(ACTIVATIONS)
            raise ValueError(f"unknown activation {self.activation!r}; valid: {valid}")
        act = ACTIVATIONS[self.activation]
        drop = nn.Dropout(self.dropout, deterministic=not (train or sample))
        h = drop(act(_Norm(self.norm)(nn.Dense(self.width)(x), train=train)))
        for _ in range(self.blocks):
            u = drop(act(_Norm(self.norm)(nn.Dense(self.width)(h), train=train)))
            h = act(_Norm(self.norm)(nn.Dense(self.width)(u), train=train) + h)
        if features:
            return h
        return nn.Dense(self.n_out)(h)
