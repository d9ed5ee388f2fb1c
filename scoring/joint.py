"""Joint predictions against the exact posterior over batches of points (docs/metrics.md,
"Joint predictions").

At a batch of ``tau`` points the posterior predictive of the outcomes is
``p = N(m, P)``, ``P = S + D`` (``S`` the posterior covariance of ``f``, ``D`` the noise
variances on the diagonal); a method's joint predictive is ``q = N(mu, Sigma)``,
``Sigma = E + diag(a)`` (its epistemic covariance ``E`` and its aleatoric variances). The
expected joint log loss splits exactly as

    E_p[-log q(y)] = 1/2 [tau log 2 pi + log|Sigma| + tr(Sigma^-1 P) + (m - mu)^T Sigma^-1 (m - mu)]
                   = sum_i 1/2 log(2 pi e D_ii)           (joint AU)
                   + 1/2 log|I + D^-1/2 S D^-1/2|        (the posterior's joint MI)
                   + KL(N(m, P) || N(mu, Sigma))          (the method's joint excess).

For a diagonal ``Sigma`` the joint excess is the sum of the marginal excesses plus the
total correlation ``TC(P) = 1/2 (sum_i log P_ii - log|P|)``, so a method that predicts
no covariance captures none of it; a method's *share* of the total correlation is
``(sum of marginal excesses + TC - joint excess) / TC``, 1 for the posterior itself.

A method's ``E`` comes from its ``predict_joint`` (an exact covariance) or from its
members: the members' correlation scaled by its own pointwise EU,
``E_ij = rho_ij sqrt(e_i e_j)`` (with the ddof-0 EU of combined members this is the
members' ddof-0 covariance). ``Sigma`` gets a ridge of :data:`RIDGE` times its mean
diagonal, so that a method with no aleatoric variance stays finite at repeated inputs.
"""

from __future__ import annotations

import numpy as np

RIDGE = 1e-9
# The arrays :func:`udora.scoring.score_arrays` takes for these metrics: the task's batches
# (udora.oracle.joint.JointBatches.to_arrays) and the method's covariance at them.
JOINT_FIELDS = ("joint_idx", "joint_design", "joint_post_cov", "joint_epistemic")
STATISTICS = ("excess", "share")


def joint_names(designs: tuple[str, ...]) -> tuple[str, ...]:
    """The metric names, ``joint_<statistic>_<design>``, designs outer."""
    return tuple(f"joint_{m}_{d}" for d in designs for m in STATISTICS)


def predictive_covariance(post_cov: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``P = S + diag(noise)``, the posterior predictive covariance of the outcomes at
    each batch: (B, t, t), (B, t) -> (B, t, t)."""
    return post_cov + noise[..., None] * np.eye(post_cov.shape[-1])


def _chol(C: np.ndarray) -> np.ndarray:
    """Lower Cholesky factors of a stack of SPD matrices (..., t, t)."""
    return np.linalg.cholesky(C)


def _logdet(L: np.ndarray) -> np.ndarray:
    return 2.0 * np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)


def gaussian_kl(m0: np.ndarray, P: np.ndarray, m1: np.ndarray, Sigma: np.ndarray) -> np.ndarray:
    """``KL(N(m0, P) || N(m1, Sigma))`` per batch: means (B, t), covariances (B, t, t),
    both positive definite -> (B,)."""
    Lp, Ls = _chol(P), _chol(Sigma)
    t = m0.shape[-1]
    # tr(Sigma^-1 P) = ||Ls^-1 Lp||_F^2; Mahalanobis term ||Ls^-1 (m0 - m1)||^2
    A = np.linalg.solve(Ls, Lp)
    r = np.linalg.solve(Ls, (m0 - m1)[..., None])[..., 0]
    return 0.5 * (
        np.sum(A * A, axis=(-2, -1)) + np.sum(r * r, axis=-1) - t + _logdet(Ls) - _logdet(Lp)
    )


def total_correlation(P: np.ndarray) -> np.ndarray:
    """``TC = 1/2 (sum_i log P_ii - log|P|)`` of covariances (B, t, t) -> (B,) (nats)."""
    d = np.diagonal(P, axis1=-2, axis2=-1)
    return 0.5 * (np.sum(np.log(d), axis=-1) - _logdet(_chol(P)))


def expected_joint_nll(
    m: np.ndarray, S: np.ndarray, noise: np.ndarray, mu: np.ndarray, Sigma: np.ndarray
) -> np.ndarray:
    """``E[-log q(y)]`` for ``y ~ N(m, S + diag(noise))`` and ``q = N(mu, Sigma)``, the
    closed form of the module doc: means (B, t), ``S`` and ``Sigma`` (B, t, t), ``noise``
    (B, t) -> (B,) nats."""
    t = m.shape[-1]
    P = predictive_covariance(S, noise)
    Ls = _chol(Sigma)
    A = np.linalg.solve(Ls, _chol(P))
    r = np.linalg.solve(Ls, (m - mu)[..., None])[..., 0]
    return 0.5 * (
        t * np.log(2.0 * np.pi)
        + _logdet(Ls)
        + np.sum(A * A, axis=(-2, -1))
        + np.sum(r * r, axis=-1)
    )


def joint_au(noise: np.ndarray) -> np.ndarray:
    """``sum_i 1/2 log(2 pi e sigma_i^2)``: noise variances (B, t) -> (B,)."""
    return 0.5 * np.sum(np.log(2.0 * np.pi * np.e * noise), axis=-1)


def joint_mi(S: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``1/2 log|I + D^-1/2 S D^-1/2|``: (B, t, t), (B, t) -> (B,) nats."""
    s = 1.0 / np.sqrt(noise)
    M = np.eye(S.shape[-1]) + s[..., :, None] * S * s[..., None, :]
    return 0.5 * _logdet(_chol(M))


def member_covariance(member_means: np.ndarray, epistemic: np.ndarray) -> np.ndarray:
    """The epistemic covariance over batches from members (module doc): member means
    (K, B, t), the method's EU (B, t) -> (B, t, t), ``rho_ij sqrt(e_i e_j)``; points where
    the members agree exactly get no correlation."""
    c = member_means - member_means.mean(axis=0)
    cov = np.einsum("kbi,kbj->bij", c, c) / member_means.shape[0]
    sd = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = cov / (sd[..., :, None] * sd[..., None, :])
    rho = np.where(np.isfinite(rho), rho, 0.0)
    e = np.sqrt(np.maximum(epistemic, 0.0))
    out = rho * e[..., :, None] * e[..., None, :]
    t = out.shape[-1]
    diag = np.arange(t)
    out[..., diag, diag] = np.maximum(epistemic, 0.0)
    return out


def batch_predictive(eu_cov: np.ndarray, aleatoric: np.ndarray) -> np.ndarray:
    """``Sigma = E + diag(a) + RIDGE * mean(diag) * I``: (B, t, t), (B, t) -> (B, t, t)."""
    t = eu_cov.shape[-1]
    Sigma = 0.5 * (eu_cov + eu_cov.transpose(0, 2, 1)) + aleatoric[..., None] * np.eye(t)
    scale = np.mean(np.diagonal(Sigma, axis1=-2, axis2=-1), axis=-1)
    return Sigma + (RIDGE * scale)[:, None, None] * np.eye(t)


def batch_parts(
    *,
    post_mean: np.ndarray,
    post_cov: np.ndarray,
    noise_var: np.ndarray,
    mean: np.ndarray,
    Sigma: np.ndarray,
) -> dict[str, np.ndarray]:
    """Per batch (B,): ``joint_excess``, ``marginal_excess`` (the sum of the pointwise
    excesses ``KL(N(m_i, P_ii) || N(mu_i, Sigma_ii))``) and ``tc`` of ``P``.

    Args:
        post_mean, noise_var, mean: at the batches' points, (B, t).
        post_cov: the posterior covariance of ``f``, (B, t, t). Sigma: the method's
            predictive covariance of the outcomes, (B, t, t).
    """
    P = predictive_covariance(post_cov, noise_var)
    p = np.diagonal(P, axis1=-2, axis2=-1)
    s = np.diagonal(Sigma, axis1=-2, axis2=-1)
    marginal = 0.5 * (np.log(s / p) + (p + (post_mean - mean) ** 2) / s - 1.0)
    return {
        "joint_excess": gaussian_kl(post_mean, P, mean, Sigma),
        "marginal_excess": np.sum(marginal, axis=-1),
        "tc": total_correlation(P),
    }


def _check_batches(
    idx: np.ndarray, design: np.ndarray, post_cov: np.ndarray, n: int, k: int
) -> np.ndarray:
    """``idx`` as integers, after checking the batches' arrays against each other and the
    pool of ``n`` points (a ValueError naming the array)."""
    idx, design = np.asarray(idx), np.asarray(design)
    if (
        idx.ndim != 2
        or idx.dtype.kind not in "iu"
        or (idx.size and not ((idx >= 0) & (idx < n)).all())
    ):
        raise ValueError(f"joint_idx: expected (B, tau) integers in 0..{n - 1}, got {idx.shape}")
    B, t = idx.shape
    if design.shape != (B,) or design.dtype.kind not in "iu" or not np.isin(design, range(k)).all():
        raise ValueError(f"joint_design: expected ({B},) integers in 0..{k - 1}")
    if np.shape(post_cov) != (B, t, t):
        raise ValueError(f"joint_post_cov: expected shape {(B, t, t)}, got {np.shape(post_cov)}")
    return idx


def joint_metrics(
    *,
    idx: np.ndarray,
    design: np.ndarray,
    post_cov: np.ndarray,
    post_mean: np.ndarray,
    noise_var: np.ndarray,
    mean: np.ndarray,
    aleatoric: np.ndarray,
    epistemic: np.ndarray,
    eu_cov: np.ndarray | None = None,
    member_means: np.ndarray | None = None,
    designs: tuple[str, ...],
) -> dict[str, float]:
    """The joint metrics of one prediction, per design (docs/metrics.md): ``joint_excess_<d>``
    (mean joint excess per point, nats) and ``joint_share_<d>`` (the share of the
    total correlation captured, summed over the design's batches before the ratio).

    Args:
        idx: (B, t) pool indices of the batches; design: (B,) index into ``designs``.
        post_cov: (B, t, t) the posterior covariance of ``f`` at each batch.
        post_mean, noise_var, mean, aleatoric, epistemic: over the pool, (N,).
        eu_cov: (B, t, t) the method's epistemic covariance at the batches
            (``predict_joint``), or None. member_means: (K, N) or None; used without
            ``eu_cov``. Neither: the metrics are NaN (a diagonal predictive captures no
            correlation by the identity of the module doc).
        designs: the designs' names.
    """
    out = dict.fromkeys(joint_names(designs), float("nan"))
    if eu_cov is None and member_means is None:
        return out
    idx = _check_batches(idx, design, post_cov, len(np.asarray(post_mean)), len(designs))
    e = np.asarray(epistemic, np.float64)[idx]
    if eu_cov is None:
        eu_cov = member_covariance(np.asarray(member_means, np.float64)[:, idx], e)
    Sigma = batch_predictive(np.asarray(eu_cov, np.float64), np.asarray(aleatoric)[idx])
    parts = batch_parts(
        post_mean=np.asarray(post_mean, np.float64)[idx],
        post_cov=np.asarray(post_cov, np.float64),
        noise_var=np.asarray(noise_var, np.float64)[idx],
        mean=np.asarray(mean, np.float64)[idx],
        Sigma=Sigma,
    )
    t = idx.shape[1]
    for k, d in enumerate(designs):
        rows = np.asarray(design) == k
        if not np.any(rows):
            continue
        J, M, tc = (parts[p][rows] for p in ("joint_excess", "marginal_excess", "tc"))
        out[f"joint_excess_{d}"] = float(np.mean(J) / t)
        out[f"joint_share_{d}"] = float(np.sum(M + tc - J) / np.sum(tc))
    return out
