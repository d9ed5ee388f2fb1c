"""Deep evidential regression (Amini et al. 2020): a Normal-Inverse-Gamma head.

The backbone's four raw outputs ``(a, r_nu, r_alpha, r_beta)`` give
``gamma = a``, ``nu = softplus(r_nu) + eps``, ``alpha = 1 + softplus(r_alpha) + eps``,
``beta = softplus(r_beta) + eps`` (paper, Appendix D.4, "Evidential BNN"). Integrating the
Gaussian likelihood over the NIG prior gives a Student-t marginal,
``y ~ t_{2 alpha}(gamma, beta (1 + nu) / (nu alpha))``, whose negative log density is

    L_NIG = 1/2 log(pi / nu) - alpha log(Omega) + (alpha + 1/2) log(nu (y - gamma)^2 + Omega)
            + log Gamma(alpha) - log Gamma(alpha + 1/2),        Omega = 2 beta (1 + nu);

training minimises ``L_NIG + evi_reg * |y - gamma| (2 nu + alpha)``. Prediction:
mean ``gamma``, aleatoric ``beta / (alpha - 1)``, epistemic ``beta / (nu (alpha - 1))``.
The network trains on all training points (no validation split unless ``early_stopping``
uses one, :class:`NNConfig`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln
from pydantic import Field

from udora.methods.base import Prediction, check_x
from udora.methods.nn.config import NNConfig
from udora.methods.nn.method import NNMethod, Recipe
from udora.methods.nn.step import TRACED
from udora.methods.registry import register

NIG_EPS = 1e-6


def nig_parameters(raw: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(gamma, nu, alpha, beta)``, each ``(...)``, from raw outputs ``(..., 4)``."""
    gamma = raw[..., 0]
    nu = jax.nn.softplus(raw[..., 1]) + NIG_EPS
    alpha = 1.0 + jax.nn.softplus(raw[..., 2]) + NIG_EPS
    beta = jax.nn.softplus(raw[..., 3]) + NIG_EPS
    return gamma, nu, alpha, beta


_nig_parameters_compiled = jax.jit(nig_parameters)  # one program per shape, not one per op


def nig_nll(
    y: jax.Array, gamma: jax.Array, nu: jax.Array, alpha: jax.Array, beta: jax.Array
) -> jax.Array:
    """Negative log Student-t marginal density of ``y`` under NIG parameters (all ``(B,)``)."""
    omega = 2.0 * beta * (1.0 + nu)
    return (
        0.5 * (jnp.log(jnp.pi) - jnp.log(nu))
        - alpha * jnp.log(omega)
        + (alpha + 0.5) * jnp.log(nu * (y - gamma) ** 2 + omega)
        + gammaln(alpha)
        - gammaln(alpha + 0.5)
    )


@dataclass(frozen=True)
class EvidentialLoss:
    """Per-point ``L_NIG + evi_reg |y - gamma| (2 nu + alpha)`` of raw outputs ``(B, 4)``."""

    evi_reg: float = dataclasses.field(metadata=TRACED)  # swept: an argument of the program
    n_out: ClassVar[int] = 4

    def __call__(self, raw: jax.Array, y: jax.Array) -> jax.Array:
        gamma, nu, alpha, beta = nig_parameters(raw)
        reg = jnp.abs(y - gamma) * (2.0 * nu + alpha)
        return nig_nll(y, gamma, nu, alpha, beta) + self.evi_reg * reg


class EDLConfig(NNConfig):
    """:class:`NNConfig` with one network and the evidential regulariser weight."""

    n_members: int = Field(default=1, ge=1, le=1)
    evi_reg: float = Field(default=0.01, ge=0.0)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        **NNConfig.SEARCH_SPACE,
        "evi_reg": {"distribution": "log_uniform_values", "min": 1e-3, "max": 3e-1},
    }


def evidential_loss(cfg: EDLConfig) -> EvidentialLoss:
    """The evidential loss with the config's ``evi_reg``."""
    return EvidentialLoss(cfg.evi_reg)


@register("edl")
class EDL(NNMethod):
    """Evidential regression: one residual MLP with a Normal-Inverse-Gamma head."""

    family = "NN"
    Config = EDLConfig
    config: EDLConfig
    recipe = Recipe(loss=evidential_loss)

    def predict(self, X: np.ndarray) -> Prediction:
        """Mean ``gamma``, AU ``beta/(alpha-1)``, EU ``beta/(nu(alpha-1))`` at ``X`` ``(m, d)``."""
        self._check_fitted()
        X = check_x(X, self.d_)
        raw = self.raw_outputs(jnp.asarray(self.scaler_.x(X), dtype=jnp.float32))[0]
        gamma, nu, alpha, beta = (np.asarray(a, np.float64) for a in _nig_parameters_compiled(raw))
        aleatoric = beta / (alpha - 1.0)
        return Prediction(
            mean=self.scaler_.mean_back(gamma),
            aleatoric=self.scaler_.var_back(aleatoric),
            epistemic=self.scaler_.var_back(aleatoric / nu),
        )
