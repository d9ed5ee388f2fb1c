"""``gp_oracle`` on a classification task: the task's own latent-GP posterior, sampled
with chains of its own (docs/design.md, "Classification: methods").

The oracle's building blocks, run again: the whitened latent at the unique training
inputs is sampled by the oracle's NUTS (:func:`udora.oracle.classification.sampler.
start_chains`, the prior's ``sampler`` budget: chains, warm-up, draws; no extensions) from
streams of the method's seed that the oracle does not use, and each draw's class
probabilities, entropy and squared norm at the prediction points are the oracle's
integrals (:func:`udora.oracle.classification.posterior.pool_draws`). The prediction is
the posterior predictive ``pbar`` with AU ``E H(p_f)``, EU ``H(pbar) - E H(p_f)`` and
the Brier-scale ``1 - E ||p_f||^2`` and ``E ||p_f||^2 - ||pbar||^2``. It is not the
oracle's stored arrays (those would agree with the targets by construction): its EU
Spearman against the oracle's is limited by the two samplers' Monte Carlo error, as the
oracle's split-half correlation is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from udora.methods.classification.prediction import ClassificationPrediction, check_labels
from udora.methods.seeding import numpy_rng
from udora.oracle.classification.posterior import Geometry, geometry, pool_draws
from udora.oracle.classification.sampler import convergence, start_chains


def _key(seed: int, name: str) -> jax.Array:
    """A raw JAX key of the method's stream ``name`` (the oracle's keys are raw too)."""
    return jax.random.PRNGKey(int(numpy_rng(seed, name).integers(2**31)))


@dataclass(frozen=True)
class LatentPosterior:
    """Sampled chains of the latent at the unique training inputs.

    ``Z`` (u, d) the unique training inputs in the prior's units; ``positions`` (chains,
    draws, u, L) whitened draws; ``geometry`` the prior's factor at ``Z``; ``record``
    the scalar diagnostics.
    """

    prior: Any
    Z: np.ndarray
    positions: np.ndarray
    geometry: Geometry
    seed: int
    record: dict[str, float]


def fit_latent_posterior(X: np.ndarray, y: np.ndarray, prior: Any, seed: int) -> LatentPosterior:
    """Sample the latent posterior of ``prior`` given labels ``y`` (n,) at ``X`` (n, d).

    Args:
        X: (n, d) training inputs in original units.
        y: (n,) class codes 0..C-1 (C = ``len(prior.classes)``).
        prior: the task's ``ClassificationPrior`` (kernel, mean, latent scale,
            standardiser, classes, sampler).
        seed: the run seed; the streams ``gp_oracle chains`` and ``gp_oracle softmax``.
    """
    C = len(prior.classes)
    labels = check_labels(y, C)
    Z_all = prior.standardiser.x(np.asarray(X, dtype=np.float64))
    Z, inverse = np.unique(Z_all, axis=0, return_inverse=True)
    counts = np.zeros((Z.shape[0], C))
    np.add.at(counts, (inverse.ravel(), labels), 1.0)
    geo = geometry(prior.kernel, prior.mean, prior.latent_scale, Z, np.arange(Z.shape[0]))
    cfg = prior.sampler
    u, Ld = Z.shape[0], len(prior.mean)
    init = numpy_rng(seed, "gp_oracle init").standard_normal((cfg.chains, u, Ld))
    with jax.enable_x64(True):
        chains = start_chains(
            _key(seed, "gp_oracle chains"),
            jnp.asarray(geo.L),
            jnp.asarray(geo.mean),
            jnp.asarray(counts),
            jnp.asarray(init),
            cfg.warmup,
            cfg.draws,
        )
    norm2 = np.sum(chains.positions**2, axis=(2, 3))[..., None]
    diag = convergence(norm2)
    record = {
        "rhat_norm_v2": float(diag["rhat"][0]),
        "ess_bulk_norm_v2": float(diag["ess_bulk"][0]),
        "divergences": float(chains.divergent.sum()),
        "draws": float(chains.positions.shape[0] * chains.positions.shape[1]),
    }
    return LatentPosterior(prior, Z, np.asarray(chains.positions), geo, int(seed), record)


def predict_latent_posterior(post: LatentPosterior, X: np.ndarray) -> ClassificationPrediction:
    """The posterior predictive at ``X`` (m, d): probabilities (m, C), AU and EU (m,)."""
    prior = post.prior
    Zx = prior.standardiser.x(np.asarray(X, dtype=np.float64))
    u = post.Z.shape[0]
    both = geometry(
        prior.kernel, prior.mean, prior.latent_scale, np.vstack([post.Z, Zx]), np.arange(u)
    )
    geo = replace(post.geometry, A=both.A[:, u:], s=both.s[u:])
    prob, ent, square = pool_draws(
        post.positions,
        geo,
        len(prior.classes),
        _key(post.seed, "gp_oracle softmax"),
        prior.sampler.softmax_draws,
    )
    return ClassificationPrediction.from_moments(
        prob.mean(axis=(0, 1)), ent.mean(axis=(0, 1)), square.mean(axis=(0, 1))
    )
