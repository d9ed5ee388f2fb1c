"""Batches of pool points for joint predictions, and the posterior over each
(docs/design.md, "Joint predictions"; the metrics are in docs/metrics.md, "Joint
predictions").

A batch is ``tau`` pool points (repeats allowed); the oracle of a batch is the exact
posterior covariance ``S`` (tau, tau) of ``f`` there, with the posterior mean and the noise
variances the task already has. Three designs, ``per_design`` batches each, every batch's
first point an *anchor*:

- ``dyadic`` (Osband et al., 2022, "dyadic sampling"): two anchors, the first of them
  then ``tau - 1`` draws with replacement from the two, so inputs repeat and the noise of
  repeated draws is independent;
- ``neighbour``: an anchor and the ``tau - 1`` other pool points most correlated with it
  under the task's posterior (``S_ax / sqrt(S_aa S_xx)``), not the nearest in covariates;
- ``random``: an anchor and ``tau - 1`` other pool points drawn uniformly without
  replacement, the control.

Anchors are stratified by the shift profile's distance bins
(:func:`udora.oracle.shift.quintile_bins`): batch ``b`` of a design takes its anchor from
bin ``b mod 5``; the second dyadic anchor comes from bin ``(b + floor(b / 5)) mod 5``, so
every 25 dyadic batches cover the 25 ordered pairs of bins. Everything is drawn from the
task seed's stream ``joint_batches``. The design (``tau``, ``per_design``, the rules
above) is part of the joint metrics' identity: :data:`VERSION` changes with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from udora.oracle.shift import N_BINS, mahalanobis_distance, quintile_bins
from udora.oracle.streams import stream

DESIGNS = ("dyadic", "neighbour", "random")
TAU = 10
PER_DESIGN = 100
VERSION = 1


@dataclass(frozen=True)
class JointBatches:
    """The batches of a task and the posterior covariance of ``f`` over each.

    ``idx`` (B, tau) pool indices; ``design`` (B,) index into :data:`DESIGNS`;
    ``post_cov`` (B, tau, tau) the exact posterior covariance of ``f`` at each batch,
    original (squared target) units. ``B = len(DESIGNS) * per_design``, designs in order.
    """

    idx: np.ndarray
    design: np.ndarray
    post_cov: np.ndarray

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The stored form: ``joint_idx``, ``joint_design``, ``joint_post_cov``."""
        return {
            "joint_idx": self.idx,
            "joint_design": self.design,
            "joint_post_cov": self.post_cov,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> JointBatches:
        """The batches of :meth:`to_arrays`' output."""
        return cls(
            np.asarray(arrays["joint_idx"], np.int64),
            np.asarray(arrays["joint_design"], np.int64),
            np.asarray(arrays["joint_post_cov"], np.float64),
        )


def _anchors(pool_bins: np.ndarray, bins: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One pool index per entry of ``bins`` (B,), drawn from that bin, without
    replacement within a bin while it has points left."""
    out = np.empty(bins.shape[0], dtype=np.int64)
    for b in range(N_BINS):
        where = np.flatnonzero(bins == b)
        members = np.flatnonzero(pool_bins == b)
        out[where] = rng.choice(members, size=where.size, replace=where.size > members.size)
    return out


def design_batches(
    task: Any, *, tau: int = TAU, per_design: int = PER_DESIGN
) -> tuple[np.ndarray, np.ndarray]:
    """The batches of a regression task (module doc): ``(idx (B, tau), design (B,))``.

    Args:
        task: an :class:`~udora.oracle.task.OracleTask` (its pool, seed, posterior).
        tau: points per batch, >= 2. per_design: batches per design, >= 1.
    """
    N = task.X.shape[0]
    if not 2 <= tau <= N or per_design < 1:
        raise ValueError(f"joint batches: need 2 <= tau <= N = {N} and per_design >= 1")
    rng = stream(task.seed, "joint_batches")
    pool_bins = quintile_bins(mahalanobis_distance(task.prior.standardiser.x(task.X)))
    b = np.arange(per_design)
    first = b % N_BINS
    # dyadic: two anchors (from two bins), tau draws with replacement from them
    a1 = _anchors(pool_bins, first, rng)
    a2 = _anchors(pool_bins, (first + b // N_BINS) % N_BINS, rng)
    clash = a2 == a1
    while np.any(clash):  # the same point twice: draw the second again from its bin
        a2[clash] = _anchors(pool_bins, pool_bins[a2[clash]], rng)
        clash = a2 == a1
    pick = rng.integers(0, 2, size=(per_design, tau))
    dyadic = np.where(pick == 0, a1[:, None], a2[:, None])
    dyadic[:, 0] = a1  # the anchor first
    # neighbour: the anchor's tau - 1 most correlated other points under the posterior
    anchors = _anchors(pool_bins, first, rng)
    cross = task.posterior_cross(anchors, np.arange(N))  # (per_design, N)
    sd = np.sqrt(np.maximum(np.asarray(task.post_var, np.float64), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = cross / (sd[anchors][:, None] * sd[None, :])
    corr = np.where(np.isfinite(corr), corr, -np.inf)
    corr[b, anchors] = np.inf  # the anchor itself comes first
    neighbour = np.argsort(-corr, axis=1, kind="stable")[:, :tau]
    # random: the anchor and tau - 1 other points uniformly without replacement
    anchors = _anchors(pool_bins, first, rng)
    random = np.empty((per_design, tau), dtype=np.int64)
    for i, a in enumerate(anchors):
        others = rng.choice(N - 1, size=tau - 1, replace=False)
        random[i] = np.concatenate([[a], others + (others >= a)])
    idx = np.concatenate([dyadic, neighbour, random]).astype(np.int64)
    design = np.repeat(np.arange(len(DESIGNS)), per_design)
    return idx, design


def joint_batches(task: Any, *, tau: int = TAU, per_design: int = PER_DESIGN) -> JointBatches:
    """:func:`design_batches` and the exact posterior covariance of ``f`` at each batch,
    from one posterior covariance over the batches' distinct points."""
    idx, design = design_batches(task, tau=tau, per_design=per_design)
    points, inverse = np.unique(idx, return_inverse=True)
    inverse = inverse.reshape(idx.shape)
    C = task.posterior_cross(points, points)
    post_cov = C[inverse[:, :, None], inverse[:, None, :]]
    return JointBatches(idx, design, 0.5 * (post_cov + post_cov.transpose(0, 2, 1)))
