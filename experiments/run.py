"""One run: build the oracle task, fit a method on the training sample, predict, score.

A run writes ``<out>/<preset>/<method>/<config-hash>/seed-<s>/`` atomically (built under a
temporary name, then renamed): ``result.json`` (spec, resolved config, metrics, curve
summaries, timings, versions, status, error) and, when the method produced a valid
prediction, ``predictions.npz`` (``mean``, ``aleatoric``, ``epistemic`` (N,) and
``member_means`` (K, N) when present). A method that raises or returns NaN or negative
variances is recorded as ``failed`` with its reason; nothing else is affected.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from udora import methods
from udora.oracle.preset import Preset, load_preset
from udora.oracle.task import OracleTask, build_task
from udora.scoring import curves, score

PRESET_PREFIX = "preset."
_LIBRARIES = {"ngboost": "ngboost", "catboost": "catboost", "gp": "gpjax", "laplace": "laplax"}


def parse_set(pairs: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``["width=64", "preset.n_train=300"]`` -> dict; values parsed as YAML scalars/lists."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set: expected key=value, got {pair!r}")
        out[key.strip()] = yaml.safe_load(value)
    return out


def split_overrides(overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(method overrides, preset overrides): keys ``preset.X`` go to the preset."""
    method = {k: v for k, v in overrides.items() if not k.startswith(PRESET_PREFIX)}
    preset = {
        k[len(PRESET_PREFIX) :]: v for k, v in overrides.items() if k.startswith(PRESET_PREFIX)
    }
    return method, preset


@dataclass(frozen=True)
class RunSpec:
    """What a run is: preset, method, seed and validated overrides."""

    preset: str
    method: str
    seed: int
    overrides: dict[str, Any] = field(default_factory=dict)

    def resolve(self) -> tuple[Preset, Any]:
        """The (derived) preset and an unfitted method instance; validates every override."""
        method_over, preset_over = split_overrides(self.overrides)
        preset = load_preset(self.preset)
        if preset_over:
            preset = preset.with_overrides(preset_over, origin="--set preset")
        return preset, methods.get_method(self.method, **method_over)

    def config_hash(self, preset: Preset, method: Any) -> str:
        """10 hex digits of the resolved method config and the derived preset."""
        blob = json.dumps(
            {"config": method.config.to_dict(), "preset": preset.model_dump(mode="json")},
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:10]

    def run_dir(self, out_dir: str | Path) -> Path:
        preset, method = self.resolve()
        return (
            Path(out_dir) / preset.name / self.method / self.config_hash(preset, method)
            / f"seed-{self.seed}"
        )  # fmt: skip


@dataclass
class RunResult:
    """The outcome of :func:`run_one`; ``path`` is the run's folder."""

    spec: RunSpec
    status: str
    path: Path
    metrics: dict[str, float]
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)


@functools.lru_cache(maxsize=4)
def _cached_task(preset_json: str, seed: int, data_dir: str | None) -> OracleTask:
    return build_task(Preset.model_validate_json(preset_json), seed, data_dir=data_dir)


def _versions(method_name: str) -> dict[str, str]:
    lib = next((v for k, v in _LIBRARIES.items() if method_name.startswith(k)), "flax")
    out = {}
    for dist in ("udora", "jax", lib):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


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


def run_one(
    preset: str | Path,
    method: str,
    seed: int,
    overrides: dict[str, Any] | None = None,
    out_dir: str | Path = "results",
    *,
    data_dir: str | Path | None = None,
) -> RunResult:
    """Run ``method`` on ``preset`` at ``seed`` and write the run folder (see module doc).

    Bad presets, methods or overrides raise before anything runs; failures of the method
    itself are recorded in the result (status ``failed``) and returned.
    """
    spec = RunSpec(str(preset), method, int(seed), dict(overrides or {}))
    preset_obj, model = spec.resolve()
    final = spec.run_dir(out_dir)
    record: dict[str, Any] = {
        "preset": preset_obj.name,
        "method": method,
        "seed": spec.seed,
        "overrides": spec.overrides,
        "config": model.config.to_dict(),
        "config_hash": final.parent.name,
        "preset_config": preset_obj.model_dump(mode="json", exclude={"paper"}),
        "versions": _versions(method),
        "status": "failed",
        "error": None,
        "metrics": {},
        "curves": {},
        "timings": {},
    }
    timings = record["timings"]
    prediction = None
    t0 = time.perf_counter()
    dd = str(data_dir) if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    task = _cached_task(preset_obj.model_dump_json(), spec.seed, dd)
    timings["oracle"] = time.perf_counter() - t0
    try:
        knowledge = task.knowledge(with_prior=type(model).uses_task_prior)
        t0 = time.perf_counter()
        model.fit(task.X_train, task.y_train, seed=spec.seed, knowledge=knowledge)
        timings["fit"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        prediction = model.predict(task.X)
        timings["predict"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        record["metrics"] = _clean(score(task, prediction))
        record["curves"] = _summarise(curves(task, prediction))
        timings["score"] = time.perf_counter() - t0
        record["status"] = "ok"
    except Exception as err:  # one failing method never takes the grid down
        record["error"] = f"{type(err).__name__}: {err}"
        record["traceback"] = traceback.format_exc(limit=8)
    _write_atomically(final, record, prediction)
    metrics = {k: (np.nan if v is None else v) for k, v in record["metrics"].items()}
    return RunResult(spec, record["status"], final, metrics, record["error"], timings)


def _write_atomically(final: Path, record: dict[str, Any], prediction: Any) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp"))
    try:
        if prediction is not None:
            arrays = {
                "mean": prediction.mean,
                "aleatoric": prediction.aleatoric,
                "epistemic": prediction.epistemic,
            }
            if prediction.member_means is not None:
                arrays["member_means"] = prediction.member_means
            np.savez(tmp / "predictions.npz", **arrays)
        (tmp / "result.json").write_text(json.dumps(record, indent=1, allow_nan=False))
        if final.exists():  # a failed earlier attempt: replace it
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_result(run_dir: str | Path) -> dict[str, Any] | None:
    """The run's result.json as a dict, or None when absent or unreadable."""
    path = Path(run_dir) / "result.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
