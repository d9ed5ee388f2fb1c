"""One trial of a sweep, as a record on disk: ``<sweep folder>/trial-<k>/``.

``trial.json`` holds the parameters, the method config, the objective's name and value,
status ``ok`` or ``failed``, the error, timings (``trial``: wall seconds; ``compile``: the
seconds JAX spent tracing, lowering and compiling, cache reads included), and ``oracle``:
the trial's agreement with the oracle
(:func:`udora.experiments.tuning.protocol.trial_oracle_metrics`) for later analysis, which
selection never reads. ``validation.npz`` holds the arrays the objective is computed
from (``targets`` (v,) and the prediction's: ``mean`` or ``prob`` (v, C),
``aleatoric``, ``epistemic``). Every
validation score is a field (``val_nll`` and ``val_rmse``; for classification
``val_nll``, ``val_brier``, ``val_ece``, ``val_accuracy``). A classification trial's
``oracle`` is null (:func:`udora.experiments.tuning.protocol.trial_oracle_metrics`).
A folder appears whole or not at all (written beside it, then renamed).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from udora.experiments.run import interrupts
from udora.experiments.tuning.protocol import OBJECTIVES, VAL_FRACTION
from udora.experiments.tuning.sweep_file import FIXED
from udora.oracle import reading
from udora.oracle.atomic import publish_folder, write_json, write_npz

TRIAL_SCHEMA = 1


def split_params(params: dict[str, Any]) -> dict[str, Any]:
    """The :func:`udora.experiments.tuning.protocol.trial` keywords from a flat proposal."""
    return {
        "preset": str(params["preset"]),
        "method": str(params["method"]),
        "seed": int(params.get("seed", 0)),
        "objective": str(params.get("objective", "nll")),
        "val_fraction": float(params.get("tuning_val_fraction", VAL_FRACTION)),
        "config_overrides": {k: v for k, v in params.items() if k not in FIXED},
    }


def _failed_record(k: int, params: dict[str, Any], error: str | None = None) -> dict[str, Any]:
    kw = split_params(params)
    return {
        "schema": TRIAL_SCHEMA,
        "k": k,
        "params": params,
        "overrides": kw["config_overrides"],
        "config": None,
        "objective": kw["objective"],
        "metric": OBJECTIVES.get(kw["objective"], kw["objective"]),
        "value": None,
        "status": "failed",
        "error": error,
        "timings": {},
    }


def record_crashed_trial(
    folder: str | Path, k: int, params: dict[str, Any], reason: str
) -> dict[str, Any]:
    """Write ``folder/trial-<k>/`` as ``failed`` for a trial whose worker died; its record."""
    return _write_trial(Path(folder) / f"trial-{k}", _failed_record(k, params, reason), None)


def run_trial(
    folder: str | Path, k: int, params: dict[str, Any], data_dir: str | None
) -> dict[str, Any]:
    """Run trial ``k`` with the flat ``params`` and write ``folder/trial-<k>/``; its record.

    Never raises for a failing method or a bad value: the trial is recorded ``failed``.
    """
    from udora.experiments.tuning import protocol as tuning

    kw = split_params(params)
    record = _failed_record(k, params)
    arrays = None
    c0 = compile_seconds()
    t0 = time.perf_counter()
    try:
        result = tuning.trial(data_dir=data_dir, **kw)
        summary = result.summary()
        record.update(
            config=result.config,
            value=result.value,
            **{k: _finite(v) for k, v in result.scores.items()},
            n_fit=summary["n_fit"],
            n_val=summary["n_val"],
        )
        arrays = result.arrays
        if math.isfinite(result.value):
            record["status"] = "ok"
        else:
            record["value"] = None
            record["error"] = f"non-finite objective {record['metric']}={result.value}"
    except BaseException as err:  # a failing trial never stops the sweep (SystemExit too)
        record["error"] = interrupts.method_failed(err)
        result = None
    record["timings"]["trial"] = time.perf_counter() - t0
    record["timings"]["compile"] = compile_seconds() - c0
    if result is not None and record["status"] == "ok":
        record["oracle"] = _oracle_metrics(result, record, folder)
    return _write_trial(Path(folder) / f"trial-{k}", record, arrays)


def _oracle_metrics(
    result: Any, record: dict[str, Any], folder: str | Path
) -> dict[str, Any] | None:
    """The trial's oracle metrics, after its objective is final, the fit part's posterior
    kept in the sweep ``folder``; an error here is noted in ``record["oracle_error"]`` and
    never fails the trial (analysis only). A fault of the machine (an OSError: a full
    disk, an I/O error) is not the analysis's: it stops the command, naming the file, as
    any write that fails does, instead of leaving every trial without its oracle."""
    from udora.experiments.tuning import protocol as tuning

    t0 = time.perf_counter()
    try:
        return tuning.trial_oracle_metrics(result.task, result, store=folder)
    except OSError:
        raise
    except Exception as err:
        if interrupts.requested():
            raise KeyboardInterrupt from err
        record["oracle_error"] = f"{type(err).__name__}: {err}"
        return None
    finally:
        record["timings"]["oracle"] = time.perf_counter() - t0


_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",  # includes persistent-cache reads
)
_compile = {"seconds": 0.0, "listening": False}


def compile_seconds() -> float:
    """Seconds JAX has spent tracing, lowering and compiling in this process so far.

    Counted from the first call on, by a ``jax.monitoring`` duration listener on JAX's
    own compile events (the first call imports JAX; every trial builds its task with it).
    """
    if not _compile["listening"]:
        from jax import monitoring

        def listen(event: str, duration: float, **_: Any) -> None:
            if event in _COMPILE_EVENTS:
                _compile["seconds"] += duration

        monitoring.register_event_duration_secs_listener(listen)
        _compile["listening"] = True
    return _compile["seconds"]


def validation_fields(record: dict[str, Any]) -> dict[str, float]:
    """The validation scores (``val_*`` fields that are set) of a trial record or a
    :meth:`~udora.experiments.tuning.protocol.TrialResult.summary`: what is logged to W&B."""
    return {
        k: float(v)
        for k, v in record.items()
        if k.startswith("val_") and isinstance(v, int | float) and not isinstance(v, bool)
    }


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _write_trial(final: Path, record: dict[str, Any], arrays: dict[str, Any] | None) -> dict:
    """Publish ``final`` (``trial.json``, ``validation.npz``); the record on disk after.

    A trial folder is never rewritten: when another writer published it first (a pool
    retrying a trial whose worker was presumed dead), that one stays and is returned.
    """

    def fill(tmp: Path) -> None:
        if arrays is not None:
            write_npz(tmp / "validation.npz", arrays)
        write_json(tmp / "trial.json", record, default=str)

    if publish_folder(final, fill, replace=lambda old: False):
        return record
    return load_trial(final.parent, int(final.name.removeprefix("trial-"))) or record


def load_trial(folder: str | Path, k: int) -> dict[str, Any] | None:
    """Trial ``k``'s record under ``folder``, or None when it is not (readably) written."""
    try:
        return reading.json_object(Path(folder) / f"trial-{k}" / "trial.json")
    except (OSError, ValueError):  # not a JSON object (a BadFile is a ValueError)
        return None


def load_trials(folder: str | Path) -> list[dict[str, Any]]:
    """Every finished trial record under ``folder``, ordered by ``k`` (unreadable ones skipped)."""
    out = []
    for path in Path(folder).glob("trial-*/trial.json"):
        try:
            record = reading.json_value(path)
        except (OSError, ValueError):  # not JSON (a BadFile is a ValueError)
            continue
        if isinstance(record, dict) and "k" in record and "params" in record:
            out.append(record)
    return sorted(out, key=lambda r: r["k"])


def trial_line(record: dict[str, Any]) -> str:
    """``trial-3 ok val_nll=0.8123 {"alpha": 0.1}`` or ``trial-3 failed: <reason> {...}``."""
    over = json.dumps(record["overrides"], default=str)
    if record["status"] == "ok":
        return f"trial-{record['k']} ok {record['metric']}={record['value']:.6g} {over}"
    return f"trial-{record['k']} failed: {record['error']} {over}"
