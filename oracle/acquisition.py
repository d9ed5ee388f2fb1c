"""The exact value of labelling each candidate point, under the task's own posterior
(docs/design.md, "Choosing where to label"; the metrics are in docs/metrics.md,
"Acquisition").

With a GP and known noise the posterior covariance after new labels does not depend on
their values, so the value of acquiring a point is exact and deterministic. The pool
points outside the training sample are split (the task seed's stream
``acquisition_split``) into *candidates* ``C`` and a held-out *evaluation* set ``E``. With
``k_n`` the posterior covariance of ``f`` given the training sample and ``s2(x)`` the
noise variance, for a candidate ``x``:

- expected reduction of integrated posterior variance over ``E``:
  ``VR(x) = mean_{x* in E} k_n(x*, x)^2 / (k_n(x, x) + s2(x))``;
- BALD, the information ``y(x)`` carries about ``f``:
  ``BALD(x) = 1/2 log(1 + k_n(x, x) / s2(x))`` (not the largest variance when the noise
  varies);
- EPIG, the information ``y(x)`` carries about the outcomes at ``E``:
  ``EPIG(x) = mean_{x* in E} -1/2 log(1 - rho^2(x, x*))``,
  ``rho^2 = k_n(x, x*)^2 / ((k_n(x, x) + s2(x)) (k_n(x*, x*) + s2(x*)))``.

For a batch ``B`` of candidates: the joint BALD ``1/2 log|I + D_B^-1 K_n,BB|`` and the
joint variance reduction ``mean_{x* in E} k_n(x*, B) (K_n,BB + D_B)^-1 k_n(B, x*)``; the
greedy batch adds, one at a time, the candidate of largest value given those already
chosen (rank-one updates of the posterior). Built only when asked for (the acquisition
metrics and the active-learning study), never with a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from udora.oracle.streams import stream

VALUES = ("variance_reduction", "bald", "epig")


@dataclass(frozen=True)
class AcquisitionOracle:
    """The exact values of a task's candidates (module doc).

    ``candidates`` (C,) and ``evaluation`` (E,) pool indices; ``variance_reduction``,
    ``bald``, ``epig`` (C,); ``cov_cc`` (C, C) and ``cov_ec`` (E, C) the posterior
    covariance of ``f`` among the candidates and between the evaluation set and them;
    ``noise_c`` (C,) the candidates' noise variances. Original units.
    """

    candidates: np.ndarray
    evaluation: np.ndarray
    variance_reduction: np.ndarray
    bald: np.ndarray
    epig: np.ndarray
    cov_cc: np.ndarray
    cov_ec: np.ndarray
    noise_c: np.ndarray

    def value(self, name: str) -> np.ndarray:
        """One of :data:`VALUES` by name, (C,)."""
        if name not in VALUES:
            raise ValueError(f"unknown acquisition value {name!r}; known: {', '.join(VALUES)}")
        return getattr(self, name)


def split_pool(task: Any, evaluation_fraction: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """``(candidates (C,), evaluation (E,))``: the pool points outside the training sample,
    shuffled by the task seed's stream ``acquisition_split``, the first
    ``round(evaluation_fraction * count)`` for evaluation; each sorted."""
    if not 0.0 < evaluation_fraction < 1.0:
        raise ValueError(
            f"evaluation_fraction: expected a value in (0, 1), got {evaluation_fraction}"
        )
    outside = np.setdiff1d(np.arange(task.X.shape[0]), task.train_idx)
    if outside.size < 2:
        raise ValueError(
            "acquisition: the pool has fewer than 2 points outside the training sample"
        )
    order = stream(task.seed, "acquisition_split").permutation(outside)
    cut = min(max(round(evaluation_fraction * outside.size), 1), outside.size - 1)
    return np.sort(order[cut:]), np.sort(order[:cut])


def bald_of(var_c: np.ndarray, noise_c: np.ndarray) -> np.ndarray:
    """BALD ``1/2 log(1 + k(x, x) / s2(x))`` of candidates with posterior variances and
    noise variances (C,) -> (C,)."""
    return 0.5 * np.log1p(var_c / noise_c)


def variance_reduction_of(cov_ec: np.ndarray, var_c: np.ndarray, noise_c: np.ndarray) -> np.ndarray:
    """``mean_E k(x*, x)^2 / (k(x, x) + s2(x))``: cross-covariance (E, C), the candidates'
    variances and noise (C,) -> (C,)."""
    return np.mean(cov_ec**2, axis=0) / (var_c + noise_c)


def values_from(
    cov_cc_diag: np.ndarray,
    cov_ec: np.ndarray,
    noise_c: np.ndarray,
    var_e: np.ndarray,
    noise_e: np.ndarray,
) -> dict[str, np.ndarray]:
    """The three values of the module doc from the posterior's pieces: the candidates'
    variances (C,), the cross-covariance (E, C), their noise (C,), the evaluation points'
    variances and noise (E,) -> ``{name: (C,)}``."""
    total_c = cov_cc_diag + noise_c
    rho2 = cov_ec**2 / (total_c[None, :] * (var_e + noise_e)[:, None])
    return {
        "variance_reduction": variance_reduction_of(cov_ec, cov_cc_diag, noise_c),
        "bald": bald_of(cov_cc_diag, noise_c),
        "epig": np.mean(-0.5 * np.log1p(-np.minimum(rho2, 1.0 - 1e-15)), axis=0),
    }


def acquisition_oracle(
    task: Any,
    evaluation_fraction: float = 0.5,
    split: tuple[np.ndarray, np.ndarray] | None = None,
) -> AcquisitionOracle:
    """The exact values of ``task``'s candidates (a regression
    :class:`~udora.oracle.task.OracleTask`); costs ``O(n^2 N + N^2)`` (the posterior
    covariance among the pool's outside points). ``split``: ``(candidates, evaluation)``
    pool indices to use instead of :func:`split_pool` (an active-learning round's
    remaining candidates)."""
    cand, evaluation = split if split is not None else split_pool(task, evaluation_fraction)
    cand, evaluation = np.asarray(cand, np.int64), np.asarray(evaluation, np.int64)
    cov_cc = task.posterior_cross(cand, cand)
    cov_ec = task.posterior_cross(evaluation, cand)
    noise = np.asarray(task.noise_var, np.float64)
    diag = np.maximum(np.diag(cov_cc), 0.0)
    found = values_from(diag, cov_ec, noise[cand], task.post_var[evaluation], noise[evaluation])
    return AcquisitionOracle(
        cand,
        evaluation,
        found["variance_reduction"],
        found["bald"],
        found["epig"],
        cov_cc,
        cov_ec,
        noise[cand],
    )


def batch_values(oracle: AcquisitionOracle, batch: np.ndarray) -> dict[str, float]:
    """The joint BALD and joint variance reduction of ``batch`` (k,) positions into
    ``oracle.candidates`` (module doc)."""
    b = np.asarray(batch)
    K = oracle.cov_cc[np.ix_(b, b)]
    d = oracle.noise_c[b]
    s = 1.0 / np.sqrt(d)
    M = np.eye(b.size) + s[:, None] * K * s[None, :]
    L = np.linalg.cholesky(K + np.diag(d))
    V = np.linalg.solve(L, oracle.cov_ec[:, b].T)  # (k, E)
    return {
        "bald": float(0.5 * np.linalg.slogdet(M)[1]),
        "variance_reduction": float(np.mean(np.sum(V * V, axis=0))),
    }


def greedy_batch(oracle: AcquisitionOracle, k: int, value: str = "bald") -> np.ndarray:
    """The greedy batch of ``k`` positions into ``oracle.candidates`` for ``value``
    (``bald`` or ``variance_reduction``), each step the largest value given the points
    already chosen (rank-one updates of the posterior; ties to the smaller position)."""
    if value not in ("bald", "variance_reduction"):
        raise ValueError(f"greedy_batch: value must be bald or variance_reduction, got {value!r}")
    C = oracle.cov_cc.copy()
    EC = oracle.cov_ec.copy()
    noise = oracle.noise_c
    chosen: list[int] = []
    free = np.ones(C.shape[0], dtype=bool)
    for _ in range(min(k, C.shape[0])):
        diag = np.maximum(np.diag(C), 0.0)
        score = bald_of(diag, noise) if value == "bald" else variance_reduction_of(EC, diag, noise)
        score = np.where(free, score, -np.inf)
        j = int(np.argmax(score))
        chosen.append(j)
        free[j] = False
        scale = 1.0 / (C[j, j] + noise[j])
        c = C[:, j].copy()
        e = EC[:, j].copy()
        C -= scale * np.outer(c, c)
        EC -= scale * np.outer(e, c)
    return np.asarray(chosen, dtype=np.int64)
