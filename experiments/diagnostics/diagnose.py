"""``udora diagnose``: split a method's epistemic target into estimation and approximation.

The source paper's Appendix B, estimated as in its Equations 31-32
(:mod:`udora.scoring.decomposition`; docs/diagnostics.md). For one run (preset, method,
config, seed):

1. fit the method on the benchmark's training sample and predict the pool: ``f_S``;
2. draw ``g_1..g_M ~ p(f | S)`` jointly over the pool (:meth:`OracleTask.posterior_draws`);
3. for each ``g_i``, a reference sample of ``K n`` points: inputs are pool points, every
   pool point ``floor(K n / N)`` times and a uniform random subset of the rest once more
   (:func:`reference_indices`), so the inputs follow the pool's distribution, the
   ``mu`` the comparator is best for (Equation 27), as evenly as the size allows; targets
   ``g_i(x) + sigma_eps(x) eps`` with fresh noise for every repeat. The same method with
   the same config is fitted on it and predicts the pool: ``r_i``;
4. Equations 31-32 and their Monte Carlo standard errors;
5. for blr and gp_linear, whose class is affine, the exact projection form of Equations
   28-30 beside them (:mod:`udora.experiments.diagnostics.projection`).

A diagnosis writes ``<out>/<preset>/<method>/<config-hash>/seed-<s>-M<M>-K<K>/``
atomically: ``decomposition.json`` (status, identity, pool means raw and normalised by the
variance of the pool's targets, standard errors, the sum check, timings; ``projection``
for an affine class) and, when ok, ``decomposition.npz`` (per point: ``estimation``,
``approximation``, their ``*_se``, ``eu_target``, ``f_hat``; ``projection_estimation``,
``projection_approximation`` and ``in_class_variance`` for an affine class). A failing
fit or NaN prediction fails that diagnosis only; the grid of diagnoses is
:mod:`udora.experiments.diagnostics.runner`.
Randomness: named streams of the run's seed (:func:`udora.methods.seeding.numpy_rng`).
"""

from __future__ import annotations

import dataclasses
import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from udora.errors import UserError
from udora.experiments.diagnostics.projection import projection_part
from udora.experiments.run import interrupts, provenance
from udora.experiments.run.execute import cached_task
from udora.experiments.run.spec import ResolvedRun
from udora.methods import get_method_class
from udora.methods.seeding import numpy_rng
from udora.oracle import reading
from udora.oracle.atomic import publish_folder, write_npz, write_text

RECORD = "decomposition.json"
ARRAYS = "decomposition.npz"
SCHEMA = 1  # of decomposition.json; a rerun redoes diagnoses of another schema


@dataclass(frozen=True)
class Diagnosis:
    """One diagnosis: a resolved run, ``draws`` (M) posterior draws, reference samples
    ``scale`` (K) times the training sample's size."""

    run: ResolvedRun
    draws: int
    scale: int

    def __post_init__(self) -> None:
        for name in ("draws", "scale"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise UserError(f"--{name}: expected a positive integer, got {value!r}")
        if self.draws < 2:
            raise UserError("--draws: at least 2 (standard errors are over draws)")
        from udora.oracle.task import JOINT_LIMIT

        if self.run.preset.pool_size > JOINT_LIMIT:
            raise UserError(
                f"preset {self.run.preset.name!r}: diagnose draws jointly over the pool, at "
                f"most {JOINT_LIMIT} points; this pool has {self.run.preset.pool_size} "
                "(set a smaller preset.pool_size)"
            )

    @property
    def rel_dir(self) -> Path:
        """``<preset>/<method>/<hash>/seed-<s>-M<M>-K<K>`` under the results folder."""
        run = self.run
        return run.rel_dir.parent / f"seed-{run.seed}-M{self.draws}-K{self.scale}"

    def folder(self, out: str | Path) -> Path:
        return Path(out) / self.rel_dir


def reference_indices(pool: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Pool indices of a reference sample, (size,): every index ``size // pool`` times and
    ``size % pool`` distinct ones drawn uniformly once more; sorted."""
    whole = np.tile(np.arange(pool), size // pool)
    extra = rng.choice(pool, size=size % pool, replace=False)
    return np.sort(np.concatenate([whole, extra]))


def _fit_mean(
    make: Callable[[], Any],
    X: np.ndarray,
    y: np.ndarray,
    seed: int,
    knowledge: Any,
    X_pool: np.ndarray,
) -> np.ndarray:
    """A fresh method from ``make()``, fitted on (X, y); its mean on ``X_pool``, (N,)."""
    model = make()
    model.fit(X, y, seed=seed, knowledge=knowledge)
    return model.predict(X_pool).mean


def reference_means(
    make: Callable[[], Any],
    X: np.ndarray,
    draws: np.ndarray,
    noise_var: np.ndarray,
    size: int,
    seed: int,
    knowledge: Any = None,
) -> tuple[np.ndarray, list[float]]:
    """The reference fits ``r_i``: for each draw ``g_i``, a fresh ``make()`` fitted on
    ``size`` points of the pool (:func:`reference_indices`) with targets ``g_i(x) +
    sqrt(noise_var(x)) eps``, predicting the pool.

    Args:
        make: a zero-argument factory of unfitted methods (the run's method and config).
        X: (N, d) the pool; draws: (M, N) the ``g_i``; noise_var: (N,).
        size: the reference sample size (K n); seed: the run's seed, split into named
            streams per draw for inputs, noise and the fit's own seed.
        knowledge: handed to ``fit`` (its ``n`` should be ``size``).

    Returns:
        ``(R (M, N), seconds per reference fit)``.
    """
    N = X.shape[0]
    R = np.empty_like(draws, dtype=np.float64)
    seconds = []
    for i in range(draws.shape[0]):
        if interrupts.requested():
            raise KeyboardInterrupt
        t0 = time.perf_counter()
        idx = reference_indices(N, size, numpy_rng(seed, f"diagnose_inputs_{i}"))
        noise = numpy_rng(seed, f"diagnose_noise_{i}").standard_normal(size)
        y = draws[i, idx] + np.sqrt(noise_var[idx]) * noise
        seed_i = int(numpy_rng(seed, f"diagnose_fit_{i}").integers(2**31 - 1))
        R[i] = _fit_mean(make, X[idx], y, seed_i, knowledge, X)
        seconds.append(time.perf_counter() - t0)
    return R, seconds


def diagnose(job: Diagnosis, data_dir: str | None = None) -> tuple[dict[str, Any], dict]:
    """Run one diagnosis; its record (see module doc) and arrays (empty when it failed)."""
    run = job.run
    record: dict[str, Any] = {
        "schema": SCHEMA,
        "status": "failed",
        "error": None,
        "preset": run.preset.name,
        "preset_arg": run.preset_arg,
        "method": run.method,
        "seed": run.seed,
        "label": run.label,
        "overrides": run.overrides.flat(),
        "config": run.config.to_dict(),
        "config_hash": run.config_hash,
        "identity": run.identity,
        "n_train": run.preset.n_train,
        "draws": job.draws,
        "scale": job.scale,
        "versions": provenance.versions(run.method_class.libraries),
        "timings": {},
    }
    timings = record["timings"]
    arrays: dict[str, np.ndarray] = {}
    try:
        from udora.scoring.decomposition import decompose

        record["data_source"] = run.check_data_source(data_dir)  # raises if not the hashed
        t0 = time.perf_counter()
        task = cached_task(run.preset, run.seed, data_dir)
        timings["oracle"] = time.perf_counter() - t0
        knowledge = task.knowledge(with_prior=get_method_class(run.method).uses_task_prior)
        t0 = time.perf_counter()
        f_hat = _fit_mean(run.make_method, task.X_train, task.y_train, run.seed, knowledge, task.X)
        timings["fit"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        G, jitter = task.posterior_draws(job.draws, run.seed)
        timings["draws"] = time.perf_counter() - t0
        N, size = task.X.shape[0], job.scale * task.train_idx.size
        record.update(pool_size=N, reference_size=size, draws_jitter=jitter)
        big = dataclasses.replace(knowledge, n=size)
        R, per_reference = reference_means(
            run.make_method, task.X, G, task.noise_var, size, run.seed, big
        )
        timings["reference_median"] = float(np.median(per_reference))
        timings["references"] = float(np.sum(per_reference))
        record["reference_seconds"] = per_reference  # the first one compiles new shapes
        dec = decompose(f_hat, G, R, task.post_mean, task.post_var)
        target_var = float(np.var(task.y))
        record.update(
            target_variance=target_var,
            pool_means=dec.pool_means(),
            normalised=dec.pool_means(scale=target_var),
            sum_check=dec.sum_check(),
            shares=dec.shares(),
            status="ok",
        )
        arrays = {
            "estimation": dec.estimation,
            "approximation": dec.approximation,
            "estimation_se": dec.estimation_se,
            "approximation_se": dec.approximation_se,
            "eu_target": dec.eu_target,
            "f_hat": f_hat,
        }
        t0 = time.perf_counter()
        part, exact = projection_part(run, task, f_hat, dec, target_var)  # blr, gp_linear
        if part:
            record["projection"] = part
            arrays.update(exact)
            timings["projection"] = time.perf_counter() - t0
    except Exception as err:  # one failing diagnosis never takes the others down
        if interrupts.requested():
            raise KeyboardInterrupt from err
        record["error"] = f"{type(err).__name__}: {err}"
        record["traceback"] = traceback.format_exc(limit=8)
    return record, arrays


def write_diagnosis(folder: Path, record: dict[str, Any], arrays: dict) -> None:
    """Write a diagnosis folder atomically (replacing a failed earlier attempt)."""

    def fill(tmp: Path) -> None:
        if arrays:
            write_npz(tmp / ARRAYS, arrays)
        write_text(tmp / RECORD, json.dumps(record, indent=1, allow_nan=False, default=float))

    with interrupts.deferred():  # a Ctrl-C waits the few ms until the folder is whole
        publish_folder(folder, fill)


def load_diagnosis(folder: str | Path) -> dict[str, Any] | None:
    """A diagnosis folder's record, or None when absent or unreadable."""
    try:
        return reading.json_object(Path(folder) / RECORD)
    except (OSError, ValueError):  # not a JSON object (a BadFile is a ValueError)
        return None


def is_current(record: dict[str, Any] | None) -> bool:
    """Whether ``record`` is a diagnosis of the current :data:`SCHEMA`."""
    return record is not None and record.get("schema") == SCHEMA


def finite_json(value: Any) -> Any:
    """NaN and infinities to None, so the record is strict JSON."""
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_json(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
