"""One run: build the oracle task, fit a method on the training sample, predict, score.

A run writes ``<out>/<preset>/<method>/<config-hash>/seed-<s>/`` atomically
(:func:`udora.experiments.run.record.write_run`): ``result.json``, one
:class:`~udora.experiments.run.record.RunRecord` (spec, the hashed ``identity``, resolved
config, derived preset, metrics, curve summaries, timings, versions, code and compute,
status, error) and, when the method produced a valid prediction,
``predictions.npz`` (``mean``, ``aleatoric``, ``epistemic`` (N,) and ``member_means``
(K, N) when present). A method that raises or returns NaN or negative variances is
recorded as ``failed`` with its reason; nothing else is affected. The hash and folder
come from :func:`udora.experiments.run.spec.resolve` (docs/running.md).
"""

from __future__ import annotations

import functools
import json
import os
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from udora.experiments.run import interrupts, processes, provenance
from udora.experiments.run.overrides import PRESET_PREFIX, Overrides, parse_set
from udora.experiments.run.record import SCHEMA, RunRecord, write_run
from udora.experiments.run.records import read_run, refuse_old
from udora.experiments.run.spec import (
    ResolvedRun,
    RunSpec,
    data_source_record,
    resolve,
    task_hash,
    task_part,
)
from udora.experiments.tasks import arrays as oracle_arrays
from udora.experiments.tasks import cache as task_cache
from udora.experiments.tasks.kinds import run_kind
from udora.methods.prediction import attach_joint, stored
from udora.oracle import kinds as oracle_kinds
from udora.oracle.preset import Preset, parse_preset

if TYPE_CHECKING:
    from udora.oracle.task import OracleTask

__all__ = [
    "PRESET_PREFIX",
    "Overrides",
    "ResolvedRun",
    "RunResult",
    "RunSpec",
    "parse_set",
    "record_skipped",
    "resolve",
    "run_one",
    "run_resolved",
]


@dataclass
class RunResult:
    """The outcome of :func:`run_one`; ``path`` is the run's folder."""

    run: ResolvedRun
    status: str
    path: Path
    metrics: dict[str, float]
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)


@functools.lru_cache(maxsize=16)  # a worker of a tune over both suites meets all 14 presets
def _cached_task(preset_json: str, seed: int, data_dir: str | None) -> Any:
    preset = parse_preset(json.loads(preset_json), "the run's preset")

    def build() -> Any:  # JAX: the builders import it when a run starts, not before
        return processes.build(preset, seed, data_dir)

    if not oracle_kinds.get_kind(preset.kind).cache_on_disk:
        return build()
    digest = task_hash({"task": task_part(preset, data_source_record(preset, data_dir))}, seed)
    return task_cache.load_or_build(preset, seed, digest, build)


def cached_task(preset: Preset, seed: int, data_dir: str | Path | None = None) -> OracleTask:
    """The task of ``preset`` at ``seed`` (of the preset's kind), built once per process
    (the last 16 are kept; a kind that keeps a disk cache reads it first:
    :mod:`udora.experiments.tasks.cache`) and shared by runs, scoring and exports;
    ``data_dir`` defaults to ``UDORA_DATA_DIR``. Callers read it and never change it (a
    run checks it: :func:`_check_unchanged`)."""
    dd = str(data_dir) if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    return _cached_task(preset.model_dump_json(exclude={"paper"}), int(seed), dd)


@functools.lru_cache(maxsize=16)
def _cached_sample(preset_json: str, seed: int, data_dir: str | None) -> Any:
    preset = parse_preset(json.loads(preset_json), "the run's preset")
    return oracle_kinds.get_kind(preset.kind).build_sample(preset, seed, data_dir=data_dir)


def training_sample(preset: Preset, seed: int, data_dir: str | Path | None = None) -> Any:
    """What tuning fits on: the pool ``X``, ``train_idx``, ``y_train`` and
    ``knowledge(...)`` of ``preset`` at ``seed``. A kind with a ``build_sample`` gives its
    sample without the oracle (built once per process, the last 16 kept); any other gives
    :func:`cached_task`."""
    if oracle_kinds.get_kind(preset.kind).build_sample is None:
        return cached_task(preset, seed, data_dir)
    dd = str(data_dir) if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    return _cached_sample(preset.model_dump_json(exclude={"paper"}), int(seed), dd)


def _summarise(curve: dict[str, np.ndarray], points: int = 101) -> dict[str, list[float]]:
    """Curves for result.json: full-length (N,) risk-coverage curves subsampled to ``points``."""
    out = {}
    for name, arr in curve.items():
        arr = np.asarray(arr, dtype=float)
        if arr.ndim == 1 and arr.size > points:
            arr = arr[np.linspace(0, arr.size - 1, points).round().astype(int)]
        out[name] = [None if not np.isfinite(v) else float(v) for v in arr.ravel()]
    return out


def _clean(metrics: dict[str, float]) -> dict[str, float | None]:
    return {k: (float(v) if np.isfinite(v) else None) for k, v in metrics.items()}


def _declared(kind: str, metrics: dict[str, float]) -> dict[str, float]:
    """``metrics``, each of which must be declared for ``kind`` in the metric registry
    (:mod:`udora.scoring.registry`): a scorer never records a metric nobody declared."""
    from udora.scoring.registry import names

    unknown = sorted(set(metrics) - set(names(kind)))
    if unknown:
        raise RuntimeError(f"the {kind} scorer returned undeclared metrics {unknown}")
    return metrics


def _check_unchanged(task: OracleTask, before: str) -> None:
    """Raise when the run changed the cached task (through its prior, say); the task is
    dropped from the cache first, so later runs rebuild it as it should be."""
    if task.fingerprint() != before:
        _cached_task.cache_clear()
        raise RuntimeError(
            "the method changed the task's arrays or prior in place; the "
            "task is rebuilt for later runs"
        )


def run_one(
    preset: str | Path,
    method: str,
    seed: int,
    overrides: Overrides | dict[str, Any] | None = None,
    out_dir: str | Path = "results",
    *,
    data_dir: str | Path | None = None,
) -> RunResult:
    """Run ``method`` on ``preset`` at ``seed`` and write the run folder (see module doc).

    ``overrides`` are :class:`Overrides` or flat ``--set`` keys. Bad presets, methods or
    overrides raise before anything runs; failures of the method itself are recorded in
    the result (status ``failed``) and returned.
    """
    run = resolve(RunSpec(str(preset), method, int(seed), Overrides.of(overrides)), data_dir)
    return run_resolved(run, out_dir, data_dir=data_dir)


def _record(run: ResolvedRun, status: str, **fields: Any) -> RunRecord:
    """The record of ``run`` with every field a built-in run writes (docs/running.md, "What
    a finished run is"), ``fields`` set on top."""
    values: dict[str, Any] = {
        "schema": SCHEMA,
        "kind": run.preset.kind,
        "preset": run.preset.name,
        "preset_arg": run.preset_arg,
        "method": run.method,
        "seed": run.seed,
        "overrides": run.overrides.flat(),  # the user's keys, as --set takes them
        "label": run.label,
        "config": run.config.to_dict(),
        "config_hash": run.config_hash,
        "task_hash": run.task_hash,
        "identity": run.identity,
        "preset_config": run.preset.model_dump(mode="json", exclude={"paper"}),
        "versions": provenance.versions(run.method_class.libraries),
        "code": provenance.code_identity(),
        "compute": provenance.compute(),
        "status": status,
        "error": None,
        "metrics": {},
        "curves": {},
        "timings": {},
    }
    return RunRecord(**{**values, **fields})


def run_resolved(
    run: ResolvedRun,
    out_dir: str | Path,
    *,
    data_dir: str | Path | None = None,
    config_source: str | dict[str, str] | None = None,
) -> RunResult:
    """Run an already resolved run and write its folder under ``out_dir``.

    ``config_source`` (recorded in result.json, default ``"default"``) says where the
    method's config came from: ``{"path", "hash"}`` of a tuned file (``bench --tuned``).
    """
    final = run.run_dir(out_dir)
    model = run.make_method()
    source = config_source or "default"
    data_source = run.check_data_source(data_dir)  # raises if not the one hashed
    timings: dict[str, float] = {}
    outcome: dict[str, Any] = {"status": "failed"}
    prediction = None
    t0 = time.perf_counter()
    task = cached_task(run.preset, run.seed, data_dir)
    timings["oracle"] = time.perf_counter() - t0
    kind = run_kind(run.preset.kind)
    # once per task, for later analyses; the run records the checksum it was scored on
    if kind.standard_errors is not None:  # sampled targets: these draws, or none
        oracle_sha256 = oracle_arrays.store_checked(
            out_dir, run.task_hash, task, kind.task_arrays(task)
        )
    else:  # exact targets: a rebuild differs in the last bits at most
        oracle_arrays.store(out_dir, run.task_hash, task, kind.task_arrays(task))
        oracle_sha256 = oracle_arrays.checksum(out_dir, run.task_hash)
    before = task.fingerprint()
    try:
        knowledge = task.knowledge(with_prior=type(model).uses_task_prior)
        t0 = time.perf_counter()  # the method gets copies: the cached task stays as built
        model.fit(
            np.array(task.X_train), np.array(task.y_train), seed=run.fit_seed, knowledge=knowledge
        )
        timings["fit"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        returned = model.predict(np.array(task.X))
        timings["predict"] = time.perf_counter() - t0
        _check_unchanged(task, before)
        # what is scored and written is a validated copy, whatever predict returned
        prediction = stored(returned, kind.name, task.X.shape[0])
        batches = getattr(task, "joint", None) if model.predict_joint is not None else None
        if batches is not None:  # an exact joint predictive at the task's batches
            t0 = time.perf_counter()
            joint = model.predict_joint(np.array(task.X[batches.idx]))
            prediction = attach_joint(prediction, joint, batches.idx)
            timings["predict_joint"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        outcome = {
            "status": "ok",
            "metrics": _clean(_declared(kind.name, kind.score(task, prediction))),
            "curves": _summarise(kind.curves(task, prediction)) if kind.curves else {},
        }
        if kind.standard_errors is not None:  # targets that are Monte Carlo estimates
            se = _declared(kind.name, kind.standard_errors(task, prediction))
            outcome["metrics_se"] = _clean(se)
        diagnostics = _clean(model.diagnostics())
        timings["score"] = time.perf_counter() - t0
    except BaseException as err:  # one failing method never takes the grid down (SystemExit too)
        outcome = {"status": "failed", "error": interrupts.method_failed(err)}
        extra = {"traceback": traceback.format_exc(limit=8)}
        if task.fingerprint() != before:  # a method that failed after changing the task
            _cached_task.cache_clear()
    else:
        extra = {"diagnostics": diagnostics}
    record = _record(
        run,
        **outcome,
        timings=timings,
        config_source=source,
        data_source=data_source,
        oracle_sha256=oracle_sha256,
        **extra,
    )
    record = _write(final, record, prediction)
    metrics = {k: (np.nan if v is None else v) for k, v in record.metrics.items()}
    return RunResult(run, record.status, final, metrics, record.error, timings)


def record_skipped(run: ResolvedRun, out_dir: str | Path, reason: str) -> Path:
    """Write ``result.json`` with status ``skipped`` and the reason for a run that cannot happen.

    E.g. its preset's data cannot be found; a later grid retries it like a failed run
    (docs/running.md, "A grid").
    """
    final = run.run_dir(out_dir)
    _write(final, _record(run, "skipped", error=reason, reason=reason), None)
    return final


def record_failed(run: ResolvedRun, out_dir: str | Path, reason: str) -> Path:
    """Write ``result.json`` with status ``failed`` for a run that never returned.

    E.g. the worker process running it died (:mod:`udora.experiments.grid.workers`); a later
    grid retries it like any failed run.
    """
    final = run.run_dir(out_dir)
    _write(final, _record(run, "failed", error=reason), None)
    return final


def _write(final: Path, record: RunRecord, prediction: Any) -> RunRecord:
    """Publish the run folder (:func:`udora.experiments.run.record.write_run`); the record
    on disk after. A finished run already there (written meanwhile by another process: a
    worker presumed dead) is never replaced by one that is not ok: it is kept and
    returned; a run of udora 0.1.0 there is an :class:`~udora.experiments.run.records.
    OldResultsError`. A Ctrl-C waits the few ms until the folder is whole."""
    arrays = None if prediction is None else prediction.to_arrays()

    def replace(old: Path) -> bool:
        found = read_run(old)
        refuse_old(old.parents[3], found)  # a run of udora 0.1.0 is never overwritten
        if found.newer is not None:  # nor one a newer udora wrote: kept, said
            warnings.warn(f"{old}: {found.problem}; left alone, not replaced", stacklevel=2)
            return False
        return record.status == "ok" or not found.finished

    with interrupts.deferred():
        written = write_run(final, record, arrays, replace=replace)
    return written or read_run(final).record or record
