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

On a classification task (``knowledge.classes``), evidential classification (Sensoy et
al. 2018): the C raw outputs give the evidence ``e = softplus(raw)`` and a Dirichlet
``alpha = e + 1``, ``S = sum_c alpha_c``, ``p = alpha / S``; training minimises the
expected squared error under the Dirichlet (their eq. 5) plus ``evi_reg`` times
``KL(Dir(alpha~) || Dir(1))`` with ``alpha~ = y + (1 - y) alpha`` (the misleading evidence
removed). Sensoy et al. anneal that weight from 0 to 1 over the first 10 epochs; here it is
the fixed, swept ``evi_reg`` (a per-point loss sees no epoch). Prediction, closed form:
``q = alpha / S``; AU the Dirichlet's expected entropy
``-sum_c (alpha_c / S)(psi(alpha_c + 1) - psi(S + 1))``; EU its mutual information
``H(q) - AU``; Brier-scale ``1 - E ||p||^2`` and ``E ||p||^2 - ||q||^2`` with
``E ||p||^2 = sum_c alpha_c (alpha_c + 1) / (S (S + 1))``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma, gammaln
from pydantic import Field

from udora.methods.base import Prediction, check_x
from udora.methods.classification.prediction import ClassificationPrediction
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


def dirichlet_parameters(raw: jax.Array) -> jax.Array:
    """Dirichlet concentrations ``alpha = softplus(raw) + 1``, ``(..., C)``."""
    return jax.nn.softplus(raw) + 1.0


_dirichlet_parameters_compiled = jax.jit(dirichlet_parameters)


def dirichlet_kl_to_uniform(alpha: jax.Array) -> jax.Array:
    """``KL(Dir(alpha) || Dir(1, ..., 1))`` of concentrations ``(B, C)``: ``(B,)``."""
    total = jnp.sum(alpha, axis=-1)
    C = alpha.shape[-1]
    return (
        gammaln(total)
        - gammaln(float(C))
        - jnp.sum(gammaln(alpha), axis=-1)
        + jnp.sum((alpha - 1.0) * (digamma(alpha) - digamma(total)[..., None]), axis=-1)
    )


@dataclass(frozen=True)
class EvidentialClassificationLoss:
    """Per-point expected squared error under ``Dir(alpha)`` plus ``evi_reg`` times the KL
    of the misleading evidence to the uniform Dirichlet (module docstring), raw (B, C)."""

    n_out: int
    evi_reg: float = dataclasses.field(default=0.0, metadata=TRACED)

    def __call__(self, raw: jax.Array, y: jax.Array) -> jax.Array:
        alpha = dirichlet_parameters(raw)
        S = jnp.sum(alpha, axis=-1, keepdims=True)
        p = alpha / S
        onehot = jax.nn.one_hot(y.astype(jnp.int32), self.n_out, dtype=raw.dtype)
        err = jnp.sum((onehot - p) ** 2 + p * (1.0 - p) / (S + 1.0), axis=-1)
        kept = onehot + (1.0 - onehot) * alpha
        return err + self.evi_reg * dirichlet_kl_to_uniform(kept)


def dirichlet_prediction(alpha: np.ndarray) -> ClassificationPrediction:
    """The closed-form prediction of Dirichlet concentrations ``(n, C)`` (module
    docstring): probabilities, expected entropy, mutual information, Brier parts."""
    from scipy.special import digamma as psi

    alpha = np.asarray(alpha, dtype=np.float64)
    S = alpha.sum(axis=1, keepdims=True)
    q = alpha / S
    au = -np.sum(q * (psi(alpha + 1.0) - psi(S + 1.0)), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h_q = -np.sum(np.where(q > 0, q * np.log(q), 0.0), axis=1)
    square = np.sum(alpha * (alpha + 1.0), axis=1) / (S[:, 0] * (S[:, 0] + 1.0))
    return ClassificationPrediction(
        prob=q,
        aleatoric=np.maximum(au, 0.0),
        epistemic=np.maximum(h_q - au, 0.0),
        aleatoric_brier=np.maximum(1.0 - square, 0.0),
        epistemic_brier=np.maximum(square - np.sum(q * q, axis=1), 0.0),
    )


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
    """Evidential regression (NIG head) or classification (Dirichlet head): one MLP."""

    family = "NN"
    kinds = ("regression", "classification")
    libraries = ("flax", "optax", "scipy")
    Config = EDLConfig
    config: EDLConfig
    recipe = Recipe(loss=evidential_loss)

    def point_loss(self) -> EvidentialLoss | EvidentialClassificationLoss:
        """The NIG loss, or on a classification task the Dirichlet one."""
        if self.n_classes_:
            return EvidentialClassificationLoss(self.n_classes_, self.config.evi_reg)
        return self.recipe.loss(self.config)

    def predict(self, X: np.ndarray) -> Prediction | ClassificationPrediction:
        """Mean ``gamma``, AU ``beta/(alpha-1)``, EU ``beta/(nu(alpha-1))`` at ``X``
        ``(m, d)``; on a classification task the Dirichlet's closed forms."""
        self._check_fitted()
        X = check_x(X, self.d_)
        raw = self.raw_outputs(jnp.asarray(self.scaler_.x(X), dtype=jnp.float32))[0]
        if self.n_classes_:
            return dirichlet_prediction(np.asarray(_dirichlet_parameters_compiled(raw)))
        gamma, nu, alpha, beta = (np.asarray(a, np.float64) for a in _nig_parameters_compiled(raw))
        aleatoric = beta / (alpha - 1.0)
        return Prediction(
            mean=self.scaler_.mean_back(gamma),
            aleatoric=self.scaler_.var_back(aleatoric),
            epistemic=self.scaler_.var_back(aleatoric / nu),
        )
