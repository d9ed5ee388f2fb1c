"""Gaussian output heads: the two raw outputs of the network as a mean and a variance.

Standard parameterisation (raw outputs ``(a, rho)``):
    ``mu = a``, ``s = softplus(rho) + eps``, ``v = s^2``, trained with the Gaussian NLL
    ``l = 1/2 (log v + (y - mu)^2 / v)``.
Natural parameterisation (raw outputs ``(eta_1, rho)``):
    ``eta_2 = -(softplus(rho) + eps) < 0``, ``mu = -eta_1 / (2 eta_2)``, ``v = -1 / (2 eta_2)``,
    trained with ``l = -(eta_1 y + eta_2 y^2 + eta_1^2 / (4 eta_2) + 1/2 log(-2 eta_2))``.
Both losses equal the Gaussian negative log-likelihood up to ``1/2 log(2 pi)`` (paper,
Appendix D.4); they differ in the geometry the optimiser sees.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

HEAD_EPS = 1e-6
PARAMETERISATIONS = ("standard", "natural")


def _check(parameterisation: str) -> None:
    if parameterisation not in PARAMETERISATIONS:
        valid = ", ".join(PARAMETERISATIONS)
        raise ValueError(f"unknown head {parameterisation!r}; valid: {valid}")


def mean_variance(raw: jax.Array, parameterisation: str) -> tuple[jax.Array, jax.Array]:
    """Mean and variance, each ``(...)``, from raw head outputs ``(..., 2)``."""
    _check(parameterisation)
    first, rho = raw[..., 0], raw[..., 1]
    positive = jax.nn.softplus(rho) + HEAD_EPS
    if parameterisation == "standard":
        return first, positive**2
    eta2 = -positive
    return -first / (2.0 * eta2), -1.0 / (2.0 * eta2)


mean_variance_compiled = jax.jit(mean_variance, static_argnums=1)
""":func:`mean_variance` as one compiled program per shape, for predictions outside the
training program (applied eagerly, each of its operations would compile on its own)."""


def nll(raw: jax.Array, y: jax.Array, parameterisation: str) -> jax.Array:
    """Per-point loss ``(B,)`` of raw outputs ``(B, 2)`` at targets ``y`` ``(B,)``.

    Both parameterisations give ``1/2 log v + (y - mu)^2 / (2 v)`` (no constant).
    """
    _check(parameterisation)
    first, rho = raw[..., 0], raw[..., 1]
    positive = jax.nn.softplus(rho) + HEAD_EPS
    if parameterisation == "standard":
        var = positive**2
        return 0.5 * (jnp.log(var) + (y - first) ** 2 / var)
    eta1, eta2 = first, -positive
    return -(eta1 * y + eta2 * y**2 + eta1**2 / (4.0 * eta2) + 0.5 * jnp.log(-2.0 * eta2))
