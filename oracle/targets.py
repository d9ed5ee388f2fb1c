"""Per-point oracle targets for a method's Gaussian predictive (docs/design.md, "Targets").

Given the exact posterior ``f(x) | S ~ N(m_S(x), s2_f(x))`` and the known noise variance
``sigma_eps^2(x)``, the posterior predictive of a new outcome is ``N(m_S, S2)`` with
``S2 = sigma_eps^2 + s2_f``. For a method's predictive ``N(mu, v)``, ``v = a + e``, the
expected loss under the posterior predictive (the posterior risk) splits as

    risk = AU + EU,   EU = generalised variance + generalised bias,

with AU the Bayes risk of a forecaster that knew f. Rows:

- squared error: AU ``sigma_eps^2``; generalised variance ``s2_f``;
  generalised bias ``(mu - m_S)^2``.
- CRPS: AU ``sigma_eps / sqrt(pi)``; variance ``(sqrt(S2) - sigma_eps) / sqrt(pi)``;
  bias ``h(m_S - mu, S2 + v) - sqrt(S2 / pi) - sqrt(v / pi)``.
- NLL: AU ``1/2 log(2 pi e sigma_eps^2)``; variance ``1/2 log(S2 / sigma_eps^2)``;
  bias ``KL(N(m_S, S2) || N(mu, v))``.

``h(d, s2) = E|N(d, s2)| = sqrt(2 s2 / pi) exp(-d^2 / (2 s2)) + d (1 - 2 Phi(-d / sqrt(s2)))``.
The squared-error row is the source paper's (Wizgall et al., §2); the CRPS and NLL rows
are udora's. All arrays are in original target units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import ndtr

Loss = Literal["squared", "crps", "nll"]
LOSSES: tuple[str, ...] = ("squared", "crps", "nll")


@dataclass(frozen=True)
class Targets:
    """Per-point targets, each of shape (N,)."""

    au: np.ndarray
    gen_variance: np.ndarray
    gen_bias: np.ndarray

    @property
    def eu(self) -> np.ndarray:
        return self.gen_variance + self.gen_bias

    @property
    def risk(self) -> np.ndarray:
        return self.au + self.eu


def abs_normal_mean(d: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """``E|Z|`` for ``Z ~ N(d, s2)``; shapes broadcast, e.g. (N,), (N,) -> (N,)."""
    s = np.sqrt(s2)
    return np.sqrt(2.0 * s2 / np.pi) * np.exp(-(d**2) / (2.0 * s2)) + d * (1.0 - 2.0 * ndtr(-d / s))


def _as_vectors(**arrays: np.ndarray) -> dict[str, np.ndarray]:
    out = {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
    n = {v.shape for v in out.values()}
    if len(n) != 1 or len(next(iter(n))) != 1:
        shapes = ", ".join(f"{k}{v.shape}" for k, v in out.items())
        raise ValueError(f"posterior_targets: expected arrays of one shape (N,), got {shapes}")
    for k, v in out.items():
        if not np.all(np.isfinite(v)):
            raise ValueError(f"posterior_targets: {k} has non-finite values")
    return out


def posterior_targets(
    mean: np.ndarray,
    aleatoric: np.ndarray,
    epistemic: np.ndarray,
    *,
    post_mean: np.ndarray,
    post_var: np.ndarray,
    noise_var: np.ndarray,
    loss: Loss = "squared",
) -> Targets:
    """AU, generalised variance and generalised bias of a predictive ``N(mean, a + e)``.

    Args:
        mean, aleatoric, epistemic: the method's ``mu``, ``a``, ``e``, each (N,).
        post_mean, post_var: the exact posterior ``m_S`` and ``s2_f``, each (N,).
        noise_var: ``sigma_eps^2``, (N,).
        loss: "squared" (primary), "crps" or "nll". The squared-error targets do not
            depend on the method's variances.

    Returns:
        :class:`Targets` with arrays of shape (N,), in original target units.
    """
    a = _as_vectors(
        mean=mean,
        aleatoric=aleatoric,
        epistemic=epistemic,
        post_mean=post_mean,
        post_var=post_var,
        noise_var=noise_var,
    )
    mu, m, s2f, se2 = a["mean"], a["post_mean"], a["post_var"], a["noise_var"]
    if loss == "squared":
        return Targets(au=se2, gen_variance=s2f, gen_bias=(mu - m) ** 2)
    s2 = se2 + s2f
    v = a["aleatoric"] + a["epistemic"]
    if loss == "crps":
        if np.any(v <= 0):
            raise ValueError("posterior_targets: CRPS targets need a positive total variance")
        bias = abs_normal_mean(m - mu, s2 + v) - np.sqrt(s2 / np.pi) - np.sqrt(v / np.pi)
        return Targets(
            au=np.sqrt(se2 / np.pi),
            gen_variance=(np.sqrt(s2) - np.sqrt(se2)) / np.sqrt(np.pi),
            gen_bias=bias,
        )
    if loss == "nll":
        if np.any(v <= 0):
            raise ValueError("posterior_targets: NLL targets need a positive total variance")
        kl = 0.5 * (np.log(v / s2) + (s2 + (m - mu) ** 2) / v - 1.0)
        return Targets(
            au=0.5 * np.log(2.0 * np.pi * np.e * se2),
            gen_variance=0.5 * np.log(s2 / se2),
            gen_bias=kl,
        )
    raise ValueError(f"posterior_targets: unknown loss {loss!r}; valid losses: {', '.join(LOSSES)}")
