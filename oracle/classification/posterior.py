"""The posterior over a classification task's latent function given its labels.

:func:`sample_posterior` runs NUTS on the whitened latent at the unique training inputs
(:mod:`.sampler`), integrates each draw's class probabilities, entropy and squared norm
at every pool point (:mod:`.link`), checks convergence and extends the chains while a
diagnostic fails, up to the sampler's budget (docs/design.md, "Classification:
diagnostics"). It takes standardised inputs and label counts, so the tests run it on
tiny problems whose exact posterior is known by numerical integration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from udora.oracle.classification.link import (
    WIDE_SD,
    label_loglik,
    probit_moments,
    softmax_moments,
)
from udora.oracle.classification.preset import Sampler
from udora.oracle.classification.sampler import (
    Chains,
    continue_chains,
    convergence,
    start_chains,
)
from udora.oracle.classification.targets import PosteriorMoments, entropy
from udora.oracle.gp import cholesky_with_jitter, gram
from udora.oracle.kernels import build_kernel
from udora.oracle.streams import stream

# Diagnostics that can refuse a task (docs/design.md, "Classification: diagnostics").
SCALAR_RHAT = 1.01  # rank-normalised split R-hat (bulk and folded) of every scalar summary
SCALAR_ESS = 400  # bulk and tail ESS of every scalar summary
POINT_ESS = 1000  # bulk and tail ESS of every per-point target
POINT_RHAT = 1.02  # R-hat of every per-point target
POINT_RHAT_MEDIAN = 1.005  # the median over the per-point targets
SPLIT_HALF = 0.99  # Spearman of MI and AU across the pool, chains 1-2 against 3-4


def _jax_key(seed: int, name: str) -> jax.Array:
    """A JAX key of the named stream ``name`` of run seed ``seed``."""
    return jax.random.PRNGKey(int(stream(seed, name).integers(2**31)))


@dataclass(frozen=True)
class Geometry:
    """What the per-draw integrals need: the factor at the unique inputs and, for the
    pool, ``A = L^-1 K_U,pool`` (u, N) and the conditional sd ``s`` (N,)."""

    L: np.ndarray
    A: np.ndarray
    s: np.ndarray
    mean: np.ndarray
    jitter: float


def geometry(
    kernel: tuple[dict[str, Any], ...],
    mean: tuple[float, ...],
    latent_scale: float,
    Z: np.ndarray,
    unique: np.ndarray,
) -> Geometry:
    """The prior's factor at the pool rows ``unique`` (u,) of ``Z`` (N, d) and the pool's
    conditionals; ``kernel`` (component dicts) and ``mean`` (L,) as in a preset, the
    covariance ``latent_scale^2 k``."""
    scale2 = latent_scale**2
    with jax.enable_x64(True):
        k = build_kernel(kernel, Z.shape[1])
        L, jitter = cholesky_with_jitter(scale2 * gram(k, Z[unique], Z[unique]))
        K_UX = scale2 * gram(k, Z[unique], Z)
        A = np.asarray(jax.scipy.linalg.solve_triangular(jnp.asarray(L), K_UX, lower=True))
        prior_var = scale2 * np.asarray(jax.vmap(k)(jnp.asarray(Z), jnp.asarray(Z)))
    s = np.sqrt(np.maximum(prior_var - np.sum(A * A, axis=0), 0.0))
    return Geometry(L, A, s, np.asarray(mean, dtype=np.float64), jitter)


def pool_draws(
    positions: np.ndarray, geo: Geometry, n_classes: int, key: jax.Array, softmax_draws: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each draw's integrals at every pool point: ``prob`` (chains, draws, N, C),
    ``entropy`` and ``square`` (chains, draws, N), from whitened draws ``positions``
    (chains, draws, u, L) (:mod:`udora.oracle.classification.link`)."""
    chains, draws = positions.shape[:2]
    flat = positions.reshape(chains * draws, *positions.shape[2:])
    N = geo.A.shape[1]
    # binary: points whose latent sd is wide first, so each integral rule runs on its own
    order = np.argsort(geo.s <= WIDE_SD, kind="stable")
    n_wide = int(np.sum(geo.s > WIDE_SD))
    size = max(1, int(2**24 // (N * max(n_classes, 2) * max(softmax_draws, 1))))
    out_p = np.empty((flat.shape[0], N, n_classes))
    out_h = np.empty((flat.shape[0], N))
    out_q = np.empty((flat.shape[0], N))
    with jax.enable_x64(True):
        A, s = jnp.asarray(geo.A[:, order]), jnp.asarray(geo.s[order])
        mean = jnp.asarray(geo.mean)
        step = _pool_step(n_classes == 2, softmax_draws, n_wide)
        for k, lo in enumerate(range(0, flat.shape[0], size)):
            v = jnp.asarray(flat[lo : lo + size])
            p, h, q = step(v, A, s, mean, jax.random.fold_in(key, k))
            rows = slice(lo, lo + size)
            out_p[rows, order], out_h[rows, order], out_q[rows, order] = p, h, q
    shape = (chains, draws, N)
    return out_p.reshape(*shape, n_classes), out_h.reshape(shape), out_q.reshape(shape)


def _pool_step(binary: bool, softmax_draws: int, n_wide: int):
    @jax.jit
    def step(v, A, s, mean, key):
        mu = mean[None, None, :] + jnp.einsum("un,kul->knl", A, v)  # (k, N, L)
        if binary:
            s2 = jnp.broadcast_to(s * s, mu.shape[:-1])
            parts = [
                probit_moments(mu[:, :n_wide, 0], s2[:, :n_wide], wide=True),
                probit_moments(mu[:, n_wide:, 0], s2[:, n_wide:], wide=False),
            ]
            return tuple(jnp.concatenate(a, axis=1) for a in zip(*parts, strict=True))
        eps = jax.random.normal(key, (*mu.shape[:-1], softmax_draws, mu.shape[-1]))
        return softmax_moments(mu, jnp.broadcast_to(s, mu.shape[:-1]), eps)

    return step


def batch_means(x: np.ndarray, batches: int) -> np.ndarray:
    """Batch means (chains * batches, ...) of ``x`` (chains, draws, ...)."""
    chains, draws = x.shape[:2]
    size = draws // batches
    x = x[:, : size * batches].reshape(chains, batches, size, *x.shape[2:])
    return x.mean(axis=2).reshape(chains * batches, *x.shape[3:])


def split_half(prob: np.ndarray, ent: np.ndarray) -> dict[str, float]:
    """Spearman correlations across the pool between the first and the second half of
    the chains' estimates of the mutual information and of the AU ``E H(p_f)``; ``prob``
    (chains, draws, N, C) and ``ent`` (chains, draws, N) per draw."""
    from scipy.stats import spearmanr

    half = prob.shape[0] // 2
    mi, au = [], []
    for part in (slice(0, half), slice(half, None)):
        pbar, h = prob[part].mean(axis=(0, 1)), ent[part].mean(axis=(0, 1))
        mi.append(entropy(pbar) - h)
        au.append(h)
    return {
        "mutual_information": float(spearmanr(mi[0], mi[1]).statistic),
        "au_entropy": float(spearmanr(au[0], au[1]).statistic),
    }


def diagnose(
    chains: Chains,
    prob: np.ndarray,
    ent: np.ndarray,
    square: np.ndarray,
    loglik: np.ndarray,
) -> dict[str, Any]:
    """The convergence record and the failures, of chains and their per-draw pool values.

    Scalar summaries (chains, draws): the training log-likelihood, ``||v||^2`` and the
    pool mean of each stored target; per-point targets: every class probability (the
    positive class only, for binary), entropy and squared norm; split-half stability
    (:func:`split_half`).
    """
    C = prob.shape[-1]
    cols = prob[..., 1:] if C == 2 else prob
    classes = (1,) if C == 2 else range(C)
    norm2 = np.sum(chains.positions**2, axis=(2, 3))
    scalars = {
        "train_loglik": loglik,
        "norm_v2": norm2,
        **{f"pool_mean_prob_{c}": cols[..., j].mean(axis=2) for j, c in enumerate(classes)},
        "pool_mean_entropy": ent.mean(axis=2),
        "pool_mean_square": square.mean(axis=2),
    }
    names = list(scalars)
    s = convergence(np.stack([scalars[k] for k in names], axis=2))
    per_point = np.concatenate([cols.reshape(*cols.shape[:2], -1), ent, square], axis=2)
    p = convergence(per_point)
    record: dict[str, Any] = {
        "draws_per_chain": int(chains.positions.shape[1]),
        "chains": int(chains.positions.shape[0]),
        "divergences": int(chains.divergent.sum()),
        "mean_integration_steps": float(chains.steps.mean()),
        "scalars": {
            name: {
                "rhat": float(s["rhat"][j]),
                "ess_bulk": float(s["ess_bulk"][j]),
                "ess_tail": float(s["ess_tail"][j]),
            }
            for j, name in enumerate(names)
        },
        "per_point": {
            "n_targets": int(per_point.shape[2]),
            "min_ess_bulk": float(p["ess_bulk"].min()),
            "min_ess_tail": float(p["ess_tail"].min()),
            "max_rhat": float(p["rhat"].max()),
            "median_rhat": float(np.median(p["rhat"])),
            "share_rhat_above_1.01": float(np.mean(p["rhat"] > 1.01)),
        },
    }
    failures = []
    for name, d in record["scalars"].items():
        if not d["rhat"] < SCALAR_RHAT:
            failures.append(f"R-hat of {name} is {d['rhat']:.4f} (needs < {SCALAR_RHAT})")
        for what in ("ess_bulk", "ess_tail"):
            if not d[what] >= SCALAR_ESS:
                failures.append(f"{what} of {name} is {d[what]:.0f} (needs >= {SCALAR_ESS})")
    pp = record["per_point"]
    for what in ("min_ess_bulk", "min_ess_tail"):
        if not pp[what] >= POINT_ESS:
            failures.append(f"per-point {what} is {pp[what]:.0f} (needs >= {POINT_ESS})")
    if not pp["max_rhat"] < POINT_RHAT:
        failures.append(f"per-point max R-hat is {pp['max_rhat']:.4f} (needs < {POINT_RHAT})")
    if not pp["median_rhat"] < POINT_RHAT_MEDIAN:
        failures.append(
            f"per-point median R-hat is {pp['median_rhat']:.4f} (needs < {POINT_RHAT_MEDIAN})"
        )
    halves = split_half(prob, ent)
    record["split_half_spearman"] = halves
    for name, rho in halves.items():
        if not rho >= SPLIT_HALF:
            failures.append(
                f"split-half Spearman of the {name} is {rho:.4f} (needs >= {SPLIT_HALF})"
            )
    record["failures"] = failures
    return record


def _logliks(positions: np.ndarray, geo: Geometry, counts: np.ndarray) -> np.ndarray:
    """The training log-likelihood of each draw, (chains, draws)."""
    L, mean, c = jnp.asarray(geo.L), jnp.asarray(geo.mean), jnp.asarray(counts)
    return np.asarray(_logliks_compiled(jnp.asarray(positions), L, mean, c))


@jax.jit
def _logliks_compiled(positions, L, mean, counts):
    def one(v):
        return label_loglik(mean[None, :] + L @ v, counts)

    return jax.vmap(jax.vmap(one))(positions)


@dataclass(frozen=True)
class Posterior:
    """Converged chains and what they give at the pool.

    ``chains`` (positions (chains, draws, u, L)); ``geometry``; ``moments`` (pool
    expectations and batch means); ``record`` the diagnostics (JSON-able), with
    ``extensions`` and timings.
    """

    chains: Chains
    geometry: Geometry
    moments: PosteriorMoments
    record: dict[str, Any]


def sample_posterior(
    geo: Geometry, counts: np.ndarray, cfg: Sampler, seed: int, *, refuse: str | None = None
) -> Posterior:
    """Sample the latent given label ``counts`` (u, C) at the unique inputs of ``geo``.

    Chains start from prior draws (stream ``posterior`` of ``seed``); softmax integrals use
    the stream ``softmax``. While a diagnostic fails, each chain gets ``cfg.extend`` more
    draws up to ``cfg.max_draws``. Then, with ``refuse`` (a task's name for the message),
    a failing diagnostic raises ValueError naming it; without, the record says so.
    """
    import time

    C = counts.shape[1]
    u, Ld = geo.L.shape[0], geo.mean.shape[0]
    t0 = time.perf_counter()
    with jax.enable_x64(True):
        L, mean, c = jnp.asarray(geo.L), jnp.asarray(geo.mean), jnp.asarray(counts)
        init = stream(seed, "posterior").standard_normal((cfg.chains, u, Ld))
        key = _jax_key(seed, "posterior")
        chains = start_chains(key, L, mean, c, jnp.asarray(init), cfg.warmup, cfg.draws)
        t1 = time.perf_counter()
        extensions = 0
        while True:
            prob, ent, square = pool_draws(
                chains.positions, geo, C, _jax_key(seed, "softmax"), cfg.softmax_draws
            )
            loglik = _logliks(chains.positions, geo, counts)
            record = diagnose(chains, prob, ent, square, loglik)
            more = min(cfg.extend, cfg.max_draws - chains.positions.shape[1])
            if not record["failures"] or more <= 0:
                break
            extensions += 1
            chains = continue_chains(chains, jax.random.fold_in(key, extensions), L, mean, c, more)
    record["extensions"] = extensions
    record["seconds_warmup_and_first_draws"] = t1 - t0
    record["seconds"] = time.perf_counter() - t0
    if refuse is not None and record["failures"]:
        more = len(record["failures"]) - 1
        raise ValueError(
            f"{refuse}: the posterior sampler failed its diagnostics after "
            f"{record['draws_per_chain']} draws per chain (sampler.max_draws): "
            f"{record['failures'][0]}" + (f" (and {more} more)" if more else "")
        )
    moments = PosteriorMoments(
        prob.mean(axis=(0, 1)),
        ent.mean(axis=(0, 1)),
        square.mean(axis=(0, 1)),
        batch_means(prob, cfg.batches),
        batch_means(ent, cfg.batches),
        batch_means(square, cfg.batches),
    )
    return Posterior(chains, geo, moments, record)
