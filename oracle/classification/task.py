"""``build_task(preset, seed)``: one semi-synthetic classification task and its sampled oracle.

Pipeline (docs/design.md, "Classification"): read the preset's table and labels, apply
its ``prepare`` step, standardise the covariates with the whole table's statistics (the
units the kernel was fitted in), take the pool and the shifted training sample as for
regression, draw the latent function jointly over the pool from the prior, draw labels
(each training draw and, freshly, each pool point), then sample the posterior over the
latent at the unique training inputs with NUTS (:mod:`.sampler`) and integrate each
draw's class probabilities, entropy and squared norm at every pool point analytically or
by conditional Monte Carlo (:mod:`.link`). Chains are extended while a diagnostic fails,
up to the preset's budget; then the task is refused with one line naming preset, seed
and diagnostic.

Randomness: one integer run seed split into named streams (``train_sample``,
``function``, ``labels_train``, ``labels_pool``, ``posterior``, ``softmax``); the pool
uses the preset's ``pool_seed``. The same seed on the same machine gives the same
draws; across CPUs a sampled posterior is not bit-identical, so tasks are cached on disk
by task hash and runs record the checksum of the arrays they were scored on.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

from udora.errors import UserError
from udora.oracle.classification.posterior import geometry, sample_posterior
from udora.oracle.classification.preset import ClassificationPreset, Sampler
from udora.oracle.classification.targets import SHAPES, PosteriorMoments, entropy
from udora.oracle.data import load_table_with_source
from udora.oracle.gp import cholesky_with_jitter, gram
from udora.oracle.kernels import build_kernel
from udora.oracle.preset import load_preset
from udora.oracle.prior import TaskKnowledge
from udora.oracle.shift import mahalanobis_distance, sample_training_indices
from udora.oracle.standardise import Standardiser
from udora.oracle.streams import stream
from udora.oracle.table import TableError
from udora.oracle.task import select_pool

ARRAYS = tuple(SHAPES)
"""What a classification task keeps (``to_arrays``), axes in
:data:`~udora.oracle.classification.targets.SHAPES`: the pool ``X`` (N, d),
``train_idx`` (n,), ``y_train`` (n,) labels, the realised latent ``f`` (N, L) and pool
labels ``y`` (N,); the posterior expectations ``prob`` (N, C), ``entropy``, ``square``
(N,), their standard errors, and their batch means (B, N, C) and (B, N)."""


@dataclass(frozen=True)
class ClassificationPrior:
    """The task's latent GP prior, for reference methods that declare ``uses_task_prior``.

    ``kernel`` (component dicts) and ``mean`` (L,) are in the units of ``standardiser``;
    the prior covariance is ``latent_scale^2 k``; ``classes`` (C,) name the labels;
    ``sampler`` is the preset's sampling budget (the reference ``gp_oracle`` samples its
    own chains with it).
    """

    kernel: tuple[dict[str, Any], ...]
    mean: tuple[float, ...]
    latent_scale: float
    standardiser: Standardiser
    classes: tuple[str, ...]
    sampler: Sampler


@dataclass(frozen=True)
class ClassificationSample:
    """What a method may be fitted on, without the task's truth or oracle: the pool ``X``
    (N, d), ``train_idx`` (n,) pool rows (may repeat), ``y_train`` (n,) labels 0..C-1
    and the prior. Tuning reads this (:func:`build_sample`: no posterior is sampled)."""

    preset: ClassificationPreset
    seed: int
    X: np.ndarray
    train_idx: np.ndarray
    y_train: np.ndarray
    prior: ClassificationPrior
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def X_train(self) -> np.ndarray:
        """Training covariates, (n, d)."""
        return self.X[self.train_idx]

    def knowledge(self, *, with_prior: bool = False) -> TaskKnowledge:
        """What a method may know; the prior only when ``with_prior``."""
        return TaskKnowledge(
            feature_names=tuple(self.preset.features),
            d=self.X.shape[1],
            n=int(self.train_idx.shape[0]),
            prior=self.prior if with_prior else None,
            classes=tuple(self.preset.classes),
        )


@dataclass(frozen=True)
class ClassificationTask(ClassificationSample):
    """A classification task: the sample, realised truth and sampled targets.

    Beside :class:`ClassificationSample`'s fields: ``f`` (N, L) the realised latent
    (L = 1 binary, C multiclass); ``y`` (N,) fresh pool labels; ``moments`` the posterior
    expectations with batch means (keyword-only).
    """

    f: np.ndarray = field(kw_only=True)
    y: np.ndarray = field(kw_only=True)
    moments: PosteriorMoments = field(kw_only=True)

    @property
    def true_prob(self) -> np.ndarray:
        """The realised class probabilities ``p_{f*}`` (N, C)."""
        return class_probabilities(self.f)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The task's arrays by name (:data:`ARRAYS`)."""
        m = self.moments
        own = {"X": self.X, "train_idx": self.train_idx, "y_train": self.y_train}
        return {
            **own,
            "f": self.f,
            "y": self.y,
            "prob": m.prob,
            "entropy": m.entropy,
            "square": m.square,
            "prob_se": m.standard_error(m.prob_batches),
            "entropy_se": m.standard_error(m.entropy_batches),
            "square_se": m.standard_error(m.square_batches),
            "prob_batches": m.prob_batches,
            "entropy_batches": m.entropy_batches,
            "square_batches": m.square_batches,
        }

    def arrays_sha256(self) -> str:
        """SHA-256 of :meth:`to_arrays` (names, dtypes, shapes, bytes): the oracle arrays
        a run is scored on."""
        digest = hashlib.sha256()
        for name, array in self.to_arrays().items():
            array = np.ascontiguousarray(array)
            digest.update(f"{name}{array.dtype}{array.shape}".encode())
            digest.update(array.tobytes())
        return digest.hexdigest()

    def fingerprint(self) -> str:
        """:meth:`arrays_sha256` and the prior's standardiser arrays: equal before and after
        a run proves the run changed nothing a later run on this (cached) task reads."""
        digest = hashlib.sha256(self.arrays_sha256().encode())
        std = self.prior.standardiser
        for array in (std.x_mean, std.x_sd):
            digest.update(np.ascontiguousarray(array).tobytes())
        return digest.hexdigest()

    @classmethod
    def from_arrays(
        cls, preset: ClassificationPreset, seed: int, arrays: dict, meta: dict
    ) -> ClassificationTask:
        """The task whose :meth:`to_arrays` gave ``arrays`` and whose ``meta`` was kept."""
        missing = [a for a in ARRAYS if a not in arrays]
        if missing:
            raise UserError(f"stored classification task: arrays {missing} are missing")
        std = Standardiser(np.asarray(meta["x_mean"]), np.asarray(meta["x_sd"]), 0.0, 1.0)
        moments = PosteriorMoments(
            *(np.asarray(arrays[k]) for k in ("prob", "entropy", "square")),
            *(np.asarray(arrays[k]) for k in ("prob_batches", "entropy_batches", "square_batches")),
        )
        return cls(
            preset=preset,
            seed=int(seed),
            X=np.asarray(arrays["X"]),
            train_idx=np.asarray(arrays["train_idx"]),
            y_train=np.asarray(arrays["y_train"]),
            f=np.asarray(arrays["f"]),
            y=np.asarray(arrays["y"]),
            moments=moments,
            prior=_prior(preset, std),
            meta=dict(meta),
        )


def class_probabilities(f: np.ndarray) -> np.ndarray:
    """Class probabilities (N, C) of latent values ``f`` (N, L): probit for L = 1
    (columns ``1 - Phi(f)``, ``Phi(f)``), softmax otherwise."""
    from scipy.special import ndtr, softmax

    f = np.asarray(f, dtype=np.float64)
    if f.shape[-1] == 1:
        p1 = ndtr(f[..., 0])
        return np.stack([1.0 - p1, p1], axis=-1)
    return softmax(f, axis=-1)


def _prior(preset: ClassificationPreset, std: Standardiser) -> ClassificationPrior:
    return ClassificationPrior(
        preset.kernel, preset.mean, preset.latent_scale, std, preset.classes, preset.sampler
    )


def load_labelled_table(
    preset: ClassificationPreset, data_dir: str | Path | None = None
) -> tuple[np.ndarray, np.ndarray, Any]:
    """The preset's prepared covariates X (rows, d) float64, labels (rows,) int64 and
    the table's :class:`~udora.oracle.data.DataSource`.

    Raises:
        TableError: a label that is not one of the codes 0..C-1, a ``drop_rows`` row the
            table does not have, or a class with no row; names the table and the row.
    """
    X, y, source = load_table_with_source(preset, data_dir)
    where = source.location
    C = preset.n_classes
    codes = np.rint(y)
    bad = np.flatnonzero((codes != y) | (codes < 0) | (codes >= C))
    if bad.size:
        raise TableError(
            f"{where}: column {preset.target!r} row {bad[0]} holds {y[bad[0]]:g}; preset "
            f"{preset.name!r} expects class codes 0..{C - 1} ({', '.join(preset.classes)})"
        )
    labels = codes.astype(np.int64)
    drop = np.asarray(preset.prepare.drop_rows, dtype=np.int64)
    if drop.size and drop.max() >= X.shape[0]:
        raise TableError(
            f"{where}: preset {preset.name!r} drops row {int(drop.max())} (prepare.drop_rows) "
            f"but the table has {X.shape[0]} rows"
        )
    keep = np.setdiff1d(np.arange(X.shape[0]), drop)
    X, labels = X[keep], labels[keep]
    for name in preset.prepare.slog:
        j = preset.features.index(name)
        X[:, j] = np.sign(X[:, j]) * np.log1p(np.abs(X[:, j]))
    empty = np.flatnonzero(np.bincount(labels, minlength=C) == 0)
    if empty.size:
        raise TableError(f"{where}: class {preset.classes[empty[0]]!r} has no row")
    return X, labels, source


def _draw_labels(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label per row of class probabilities ``p`` (m, C), by inversion: (m,) int64."""
    u = rng.random(p.shape[0])
    cdf = np.cumsum(p, axis=1)
    return np.minimum((u[:, None] > cdf).sum(axis=1), p.shape[1] - 1).astype(np.int64)


@dataclass(frozen=True)
class _Draw:
    """Everything :func:`build_task` draws before the posterior (one function for both
    builders, so a tuning sample is the scored task's sample, draw for draw)."""

    sample: ClassificationSample
    f: np.ndarray  # (N, L)
    p_true: np.ndarray  # (N, C)
    y_pool: np.ndarray  # (N,)
    counts: np.ndarray  # (u, C) label counts at the unique training inputs
    geo: Any  # posterior geometry at the unique training inputs
    seconds: float


def _check_build(preset: ClassificationPreset | str, seed: int) -> ClassificationPreset:
    if not isinstance(preset, ClassificationPreset):
        preset = load_preset(preset)
        if not isinstance(preset, ClassificationPreset):
            raise UserError(f"preset {preset.name!r} is a {preset.kind} preset")
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise UserError(f"seed: expected a non-negative integer, got {seed!r}")
    if preset.fit is None and preset.suite != "test":
        raise UserError(
            f"preset {preset.name!r} ({preset.suite}) has no fitted kernel yet (no fit "
            f"block): fit it on its real labels with `udora presets fit {preset.name} --write`"
        )
    return preset


def _draw(preset: ClassificationPreset, seed: int, data_dir: str | Path | None) -> _Draw:
    t0 = time.perf_counter()
    C = preset.n_classes
    X_all, _labels_all, source = load_labelled_table(preset, data_dir)
    std = Standardiser.fit(X_all, np.zeros(X_all.shape[0]))
    pool = select_pool(preset, X_all.shape[0])
    X = X_all[pool]
    Z = std.x(X)
    N = Z.shape[0]
    shift = sample_training_indices(
        mahalanobis_distance(Z), preset.shift, preset.n_train, stream(seed, "train_sample")
    )
    idx = shift.idx
    unique, inverse = np.unique(idx, return_inverse=True)

    # The realised latent: one joint prior draw over the pool (one factor, L columns).
    with jax.enable_x64(True):
        kernel = build_kernel(preset.kernel, preset.d)
        L_pool, jitter = cholesky_with_jitter(preset.latent_scale**2 * gram(kernel, Z, Z))
    f = np.asarray(preset.mean) + L_pool @ stream(seed, "function").standard_normal(
        (N, preset.latent_dim)
    )
    p_true = class_probabilities(f)
    y_train = _draw_labels(p_true[idx], stream(seed, "labels_train"))
    y_pool = _draw_labels(p_true, stream(seed, "labels_pool"))
    counts = np.zeros((unique.size, C))
    np.add.at(counts, (inverse, y_train), 1.0)
    geo = geometry(preset.kernel, preset.mean, preset.latent_scale, Z, unique)
    meta = {
        **std.to_dict(),
        "data_source": source.to_dict(),
        "kernel": [dict(c) for c in preset.kernel],
        "mean": list(preset.mean),
        "latent_scale": preset.latent_scale,
        "classes": list(preset.classes),
        "bin_counts": shift.bin_counts.tolist(),
        "n_unique_train": int(unique.size),
        "bins_filled_with_replacement": list(shift.filled_with_replacement),
        "jitter": jitter,
        "posterior_jitter": geo.jitter,
    }
    sample = ClassificationSample(
        preset=preset,
        seed=seed,
        X=X,
        train_idx=idx,
        y_train=y_train,
        prior=_prior(preset, std),
        meta=meta,
    )
    return _Draw(sample, f, p_true, y_pool, counts, geo, time.perf_counter() - t0)


def build_sample(
    preset: ClassificationPreset | str, seed: int, *, data_dir: str | Path | None = None
) -> ClassificationSample:
    """The pool, training sample and prior of :func:`build_task` at ``seed`` (the same
    draws), without sampling the posterior: what tuning fits on (seconds, not minutes)."""
    preset = _check_build(preset, seed)
    return _draw(preset, int(seed), data_dir).sample


def build_task(
    preset: ClassificationPreset | str, seed: int, *, data_dir: str | Path | None = None
) -> ClassificationTask:
    """Build the classification task of ``preset`` (a preset, a shipped name or a YAML
    path) at ``seed``.

    Raises:
        UserError: a bad seed; a table that cannot be used; chains that fail a diagnostic
            after the preset's whole draw budget (one line: preset, seed, diagnostic).
    """
    preset = _check_build(preset, seed)
    seed = int(seed)
    where = f"preset {preset.name!r} seed {seed}"
    t0 = time.perf_counter()
    draw = _draw(preset, seed, data_dir)
    try:
        post = sample_posterior(draw.geo, draw.counts, preset.sampler, seed, refuse=where)
    except ValueError as err:
        raise UserError(str(err)) from None
    moments = post.moments
    from scipy.stats import spearmanr

    true_entropy = entropy(draw.p_true)
    meta = {
        **draw.sample.meta,
        "sampler": preset.sampler.model_dump(),
        "diagnostics": post.record,
        "au_ceiling_spearman": float(spearmanr(moments.entropy, true_entropy).statistic),
        "bayes_log_loss": float(true_entropy.mean()),
        "bayes_accuracy": float(draw.p_true.max(axis=1).mean()),
        "seconds_setup": draw.seconds,
        "seconds_total": time.perf_counter() - t0,
    }
    sample = draw.sample
    return ClassificationTask(
        preset=preset,
        seed=seed,
        X=sample.X,
        train_idx=sample.train_idx,
        y_train=sample.y_train,
        f=draw.f,
        y=draw.y_pool,
        moments=moments,
        prior=sample.prior,
        meta=meta,
    )
