"""``build_task(preset, seed)``: one semi-synthetic regression task and its exact oracle.

Pipeline (docs/design.md, "The oracle"): take the preset's pool of real covariates,
standardise them with the whole table's statistics (the units the kernel was fitted in),
draw the training sample with the preset's shift profile, draw a latent function from the
prior of the preset's ground-truth family (the fitted GP by default; :mod:`oracle.truths`)
on the pool, add heteroscedastic noise (training sample and, freshly, the whole pool), and
condition the same prior on the training sample with the known noise.

Randomness: one integer run seed, split into named streams (``function``,
``noise_train``, ``noise_pool``, ``train_sample``); the pool subsample uses the preset's
``pool_seed`` so every run seed sees the same pool.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from udora.errors import UserError
from udora.oracle.data import load_table, load_table_with_source
from udora.oracle.files import ARRAYS
from udora.oracle.joint import JointBatches, joint_batches
from udora.oracle.memory import check_memory
from udora.oracle.noise import NoiseModel
from udora.oracle.preset import Preset, load_preset
from udora.oracle.prior import GPPrior, TaskKnowledge
from udora.oracle.shift import mahalanobis_distance, sample_training_indices
from udora.oracle.standardise import Standardiser
from udora.oracle.streams import stream
from udora.oracle.truths import make_truth

JOINT_LIMIT = 10_000


@dataclass(frozen=True)
class OracleTask:
    """A task: pool, training sample and exact targets; arrays in original units.

    Shapes: ``X`` (N, d); ``train_idx`` (n,) indices into X (may repeat); ``y_train`` (n,);
    ``f``, ``y``, ``noise_var``, ``post_mean``, ``post_var`` (N,).
    """

    preset: Preset
    seed: int
    X: np.ndarray
    train_idx: np.ndarray
    y_train: np.ndarray
    f: np.ndarray
    y: np.ndarray
    noise_var: np.ndarray
    post_mean: np.ndarray
    post_var: np.ndarray
    prior: GPPrior
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def X_train(self) -> np.ndarray:
        """Training covariates, (n, d)."""
        return self.X[self.train_idx]

    def fingerprint(self) -> str:
        """The SHA-256 of every array of the task and of its prior: equal before and after
        a run proves the run changed nothing a later run on this (cached) task reads."""
        import hashlib
        import pickle

        digest = hashlib.sha256()
        for name in ARRAYS:
            array = np.ascontiguousarray(getattr(self, name))
            digest.update(f"{name}{array.dtype}{array.shape}".encode())
            digest.update(array.tobytes())
        digest.update(pickle.dumps(self.prior))
        return digest.hexdigest()

    def knowledge(self, *, with_prior: bool = False) -> TaskKnowledge:
        """The :class:`TaskKnowledge` of this task; the prior only when ``with_prior``."""
        return TaskKnowledge(
            feature_names=tuple(self.preset.features),
            d=self.X.shape[1],
            n=int(self.train_idx.shape[0]),
            prior=self.prior if with_prior else None,
        )

    def posterior_draws(self, draws: int, seed: int) -> tuple[np.ndarray, float]:
        """``draws`` joint draws of ``f | S`` over the whole pool, original units.

        Exact draws of the task's own family (:mod:`udora.oracle.truths`): for a GP
        (warped or not) pathwise conditioning on its training sample
        (:func:`udora.oracle.gp.sample_posterior_paths`), for ``features`` the weights'
        Gaussian posterior; float64. The standard normals
        come from the named streams ``posterior_draws_prior`` and ``posterior_draws_noise``
        of ``seed``, one row per draw, so the first M of M' > M draws are the M draws.
        Their mean and variance converge to ``post_mean`` and ``post_var`` (up to the
        jitter the prior Gram of the pool needed, returned). Needs a joint prior draw
        over the pool, so pools larger than :data:`JOINT_LIMIT` are refused.

        Returns:
            ``(G (M, N), relative jitter of the pool's prior Gram)``.
        """
        N = self.X.shape[0]
        if N > JOINT_LIMIT:
            raise UserError(
                f"preset {self.preset.name!r}: posterior draws need a joint draw over the "
                f"pool, at most {JOINT_LIMIT} points; this pool has {N} (set a smaller "
                "preset.pool_size)"
            )
        if not isinstance(draws, int | np.integer) or draws < 1:
            raise UserError(f"draws: expected a positive integer, got {draws!r}")
        std = self.prior.standardiser
        Z = std.x(self.X)
        noise_S = self.prior.noise.std(Z[self.train_idx]) ** 2
        G, jitter = make_truth(self.preset).draw_posterior(
            Z,
            self.train_idx,
            std.y(self.y_train),
            noise_S,
            stream(seed, "posterior_draws_prior"),
            stream(seed, "posterior_draws_noise"),
            draws,
        )
        return std.mean_back(G), jitter

    def posterior_given(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The exact posterior of ``f`` over the pool given only the training rows
        ``rows`` (m,) (indices into ``train_idx``, e.g. a tuning split's fit part), from
        the task's family (:mod:`udora.oracle.truths`): ``(mean (N,), latent variance
        (N,))`` in original units. All rows give ``post_mean`` and ``post_var``."""
        std = self.prior.standardiser
        Z = std.x(self.X)
        idx = self.train_idx[np.asarray(rows)]
        noise_S = self.prior.noise.std(Z[idx]) ** 2
        y_S = std.y(np.asarray(self.y_train)[np.asarray(rows)])
        mean, var = make_truth(self.preset).condition(Z[idx], y_S, noise_S).predict(Z)
        return std.mean_back(mean), std.var_back(var)

    def posterior_cov_times(self, V: np.ndarray) -> np.ndarray:
        """The posterior covariance of ``f`` over the pool times ``V`` (N, q), original
        (squared target) units: (N, q). Exact, from the task's family
        (:mod:`udora.oracle.truths`); costs ``O(N^2 q + N n^2)``."""
        std = self.prior.standardiser
        Z = std.x(self.X)
        noise_S = self.prior.noise.std(Z[self.train_idx]) ** 2
        out = make_truth(self.preset).posterior_cov_times(Z, self.train_idx, noise_S, V)
        return std.y_sd**2 * out

    @cached_property
    def joint(self) -> JointBatches:
        """The task's batches for joint predictions and the exact posterior covariance of
        ``f`` over each (:func:`udora.oracle.joint.joint_batches`), built on first use."""
        return joint_batches(self)

    def posterior_cross(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The posterior covariance of ``f`` between the pool points ``rows`` (r,) and
        ``cols`` (c,) (indices into ``X``), original (squared target) units: (r, c). Exact,
        from the task's family (:mod:`udora.oracle.truths`); ``rows == cols == i`` gives
        ``post_var[i]`` on the diagonal."""
        std = self.prior.standardiser
        Z = std.x(self.X)
        noise_S = self.prior.noise.std(Z[self.train_idx]) ** 2
        truth = make_truth(self.preset)
        return std.y_sd**2 * truth.posterior_cross(Z, self.train_idx, noise_S, rows, cols)


def select_pool(preset: Preset, n_rows: int) -> np.ndarray:
    """Sorted row indices (pool_size,) of the pool, drawn with the preset's ``pool_seed``."""
    if preset.pool_size > n_rows:
        raise UserError(
            f"preset {preset.name!r}: pool_size {preset.pool_size} exceeds the {n_rows} data rows"
        )
    if preset.pool_size == n_rows:
        return np.arange(n_rows)
    rng = stream(preset.pool_seed, "pool")
    return np.sort(rng.choice(n_rows, size=preset.pool_size, replace=False))


def noise_for_median_std(
    preset: Preset, median_std: float, data_dir: str | Path | None = None, ratio: float = 3.0
) -> dict[str, float]:
    """``{std_min, std_max = ratio * std_min}`` giving a pool median sigma_eps of ``median_std``.

    ``median_std`` is in original target units; the result is in standardised units (the
    whole table's target sd, as in the oracle). With ``sigma_eps = std_min (1 + (ratio - 1) r)``
    monotone in r, the median is ``std_min (1 + (ratio - 1) median(r))``.
    """
    X, y = load_table(preset, data_dir)
    std = Standardiser.fit(X, y)
    Z = std.x(X[select_pool(preset, X.shape[0])])
    r = NoiseModel.from_pool(Z, 1.0, 2.0).rank_score(Z)
    std_min = median_std / std.y_sd / (1.0 + (ratio - 1.0) * float(np.median(r)))
    return {"std_min": float(std_min), "std_max": float(ratio * std_min)}


def build_task(
    preset: Preset | str,
    seed: int,
    *,
    data_dir: str | Path | None = None,
    joint_limit: int = JOINT_LIMIT,
) -> OracleTask:
    """Build the task of ``preset`` (a Preset, a shipped name or a YAML path) at ``seed``.

    Pools of at most ``joint_limit`` points get a joint prior draw; larger pools get a
    joint draw at the unique training points and exact conditional marginals elsewhere.

    Raises:
        UserError: a bad seed; a task whose dense GP matrices do not fit in the memory
            available (:func:`~udora.oracle.memory.check_memory`, asked first); a table
            that cannot be used (:mod:`udora.oracle.table`).
    """
    if not isinstance(preset, Preset):
        preset = load_preset(preset)
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise UserError(f"seed: expected a non-negative integer, got {seed!r}")
    seed = int(seed)
    check_memory(preset, joint_limit)  # before anything is read or allocated
    t0 = time.perf_counter()
    X_all, y_all, source = load_table_with_source(preset, data_dir)  # checked: oracle/table.py
    if not np.ptp(y_all) > 0:  # nothing to learn (another task kind may read such a column)
        raise UserError(
            f"{source.location}: column {preset.target!r}, the target of preset "
            f"{preset.name!r}, is constant ({y_all[0]:g} in every row)"
        )
    std = Standardiser.fit(X_all, y_all)  # the kernel fit's units (oracle/fit.py)
    pool = select_pool(preset, X_all.shape[0])
    X = X_all[pool]
    Z = std.x(X)
    N = Z.shape[0]
    mean = preset.mean.value

    noise = NoiseModel.from_pool(Z, preset.noise.std_min, preset.noise.std_max)
    sigma = noise.std(Z)
    shift = sample_training_indices(
        mahalanobis_distance(Z), preset.shift, preset.n_train, stream(seed, "train_sample")
    )
    idx = shift.idx
    truth = make_truth(preset)
    f, jitter, joint = truth.draw_prior(Z, idx, stream(seed, "function"), joint_limit)
    y_train = f[idx] + sigma[idx] * stream(seed, "noise_train").standard_normal(idx.size)
    y_pool = f + sigma * stream(seed, "noise_pool").standard_normal(N)
    if preset.acquired:  # labelled with their realised outcomes; f and y stay the task's
        acquired = np.asarray(preset.acquired, dtype=np.int64)
        idx = np.concatenate([idx, acquired])
        y_train = np.concatenate([y_train, y_pool[acquired]])
    t1 = time.perf_counter()
    cond = truth.condition(Z[idx], y_train, sigma[idx] ** 2)
    post_mean, post_var = cond.predict(Z)
    t2 = time.perf_counter()

    meta = {
        **std.to_dict(),
        "data_source": source.to_dict(),  # kind, location, sha256 (oracle/data.py)
        "kernel": [dict(c) for c in preset.kernel],
        "mean": preset.mean.model_dump(),
        "noise": preset.noise.model_dump(),
        "truth": preset.truth.model_dump(),
        "bin_counts": shift.bin_counts.tolist(),
        "n_unique_train": shift.n_unique,
        "bins_filled_with_replacement": list(shift.filled_with_replacement),
        "jitter": jitter,
        "posterior_jitter": cond.jitter,
        "joint_sampling": joint,
        "seconds_sampling": t1 - t0,
        "seconds_posterior": t2 - t1,
    }
    prior = GPPrior(preset.kernel, mean, std, noise)
    return OracleTask(
        preset=preset,
        seed=seed,
        X=X,
        train_idx=idx,
        y_train=std.mean_back(y_train),
        f=std.mean_back(f),
        y=std.mean_back(y_pool),
        noise_var=std.var_back(sigma**2),
        post_mean=std.mean_back(post_mean),
        post_var=std.var_back(post_var),
        prior=prior,
        meta=meta,
    )
