"""Run a sweep offline: the ``sweeps`` package proposes, trials run locally, results on disk.

``udora sweep run FILE.yaml`` needs no W&B account. The sweep YAML (written by ``udora sweep
init`` and validated by :func:`udora.experiments.tuning.load_sweep_config`) is given to the
``sweeps`` package, which proposes each next configuration (random, grid or bayes) from the
trials so far. Proposals are sequential in batches: ``jobs`` configurations are proposed,
run in parallel on spawned worker processes (as in ``udora bench``), and their results are
fed back before the next batch is proposed. The random draws of the proposals are seeded by
the sweep's hash and the number of trials so far, so a sweep is reproducible.

Each trial is written atomically to ``<out>/<name>-<hash>/trial-<k>/``: ``trial.json``
(parameters, method config, objective name and value, status ``ok`` or ``failed``, error,
timings) and, when the method predicted, ``validation.npz`` (``targets``, ``mean``,
``aleatoric``, ``epistemic``) from which the objective can be recomputed. The hash covers
the sweep YAML without ``run_cap``, so ``--trials`` may grow a sweep. Rerunning resumes:
finished trials are read back and fed to the search. A trial that raises or gives a
non-finite objective is recorded as ``failed`` with its reason, reported to the search as
``RunState.failed`` (bayes imputes the worst value seen), and the sweep goes on. The sweep
folder takes the results lock; Ctrl-C stops cleanly, keeping finished trials.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import math
import multiprocessing
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from udora.experiments import interrupts
from udora.experiments.lock import results_lock
from udora.experiments.tuning import FIXED, OBJECTIVES, VAL_FRACTION, load_sweep_config

TRIAL_SCHEMA = 1
DEFAULT_TRIALS = 20  # when neither --trials nor the YAML's run_cap says


def sweep_hash(config: dict[str, Any]) -> str:
    """12 hex digits of the SHA-256 of the canonical JSON of ``config`` without ``run_cap``."""
    body = {k: v for k, v in config.items() if k != "run_cap"}
    blob = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def sweep_dir(config: dict[str, Any], out: str | Path) -> Path:
    """``<out>/<name>-<hash>``; characters other than letters, digits, ``._-`` become ``_``."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", str(config.get("name") or "sweep"))
    return Path(out) / f"{name}-{sweep_hash(config)}"


@dataclass
class SweepSummary:
    """What a sweep run did and found; ``trials`` are every finished trial record."""

    folder: Path
    trials: list[dict[str, Any]] = field(default_factory=list)
    ran: int = 0  # by this invocation
    interrupted: bool = False
    goal: str = "minimize"

    @property
    def n_ok(self) -> int:
        return sum(t["status"] == "ok" for t in self.trials)

    @property
    def n_failed(self) -> int:
        return sum(t["status"] != "ok" for t in self.trials)

    @property
    def best(self) -> dict[str, Any] | None:
        ok = [t for t in self.trials if t["status"] == "ok"]
        if not ok:
            return None
        sign = 1 if self.goal == "minimize" else -1
        return min(ok, key=lambda t: (sign * t["value"], t["k"]))

    def line(self) -> str:
        best = self.best
        tail = "no trial ok"
        if best:
            over = json.dumps(best["overrides"], default=str)
            tail = f"best {best['metric']}={best['value']:.6g} (trial-{best['k']}) {over}"

        return (f"{len(self.trials)} trials ({self.n_ok} ok, {self.n_failed} failed, "
                f"{self.ran} ran now); {tail}; in {self.folder}")  # fmt: skip


# --------------------------------------------------------------------------- one trial


def split_params(params: dict[str, Any]) -> dict[str, Any]:
    """The :func:`udora.experiments.tuning.trial` keywords from a flat proposal."""
    return {
        "preset": str(params["preset"]),
        "method": str(params["method"]),
        "seed": int(params.get("seed", 0)),
        "objective": str(params.get("objective", "nll")),
        "val_fraction": float(params.get("val_fraction", VAL_FRACTION)),
        "config_overrides": {k: v for k, v in params.items() if k not in FIXED},
    }


def run_trial(
    folder: str | Path, k: int, params: dict[str, Any], data_dir: str | None
) -> dict[str, Any]:
    """Run trial ``k`` with the flat ``params`` and write ``folder/trial-<k>/``; its record.

    Never raises for a failing method or a bad value: the trial is recorded ``failed``.
    """
    from udora.experiments import tuning

    kw = split_params(params)
    record: dict[str, Any] = {
        "schema": TRIAL_SCHEMA, "k": k, "params": params, "overrides": kw["config_overrides"],
        "config": None, "objective": kw["objective"],
        "metric": OBJECTIVES.get(kw["objective"], kw["objective"]), "value": None,
        "status": "failed", "error": None, "timings": {},
    }  # fmt: skip
    arrays = None
    t0 = time.perf_counter()
    try:
        result = tuning.trial(data_dir=data_dir, **kw)
        summary = result.summary()
        record.update(config=result.config, value=result.value,
                      val_nll=_finite(summary["val_nll"]), val_rmse=_finite(summary["val_rmse"]),
                      n_fit=summary["n_fit"], n_val=summary["n_val"])  # fmt: skip
        arrays = {"targets": result.targets, "mean": result.mean,
                  "aleatoric": result.aleatoric, "epistemic": result.epistemic}  # fmt: skip
        if math.isfinite(result.value):
            record["status"] = "ok"
        else:
            record["value"] = None
            record["error"] = f"non-finite objective {record['metric']}={result.value}"
    except Exception as err:  # a failing trial never stops the sweep
        if interrupts.requested():
            raise KeyboardInterrupt from err
        record["error"] = f"{type(err).__name__}: {err}"
    record["timings"]["trial"] = time.perf_counter() - t0
    _write_trial(Path(folder) / f"trial-{k}", record, arrays)
    return record


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _write_trial(final: Path, record: dict[str, Any], arrays: dict[str, Any] | None) -> None:
    tmp = final.parent / f".{final.name}.{secrets.token_hex(4)}.tmp"
    tmp.mkdir()
    try:
        if arrays is not None:
            np.savez(tmp / "validation.npz", **arrays)
        (tmp / "trial.json").write_text(json.dumps(record, indent=1, allow_nan=False, default=str))
        if final.exists():
            raise FileExistsError(f"{final}: already written")
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_trials(folder: str | Path) -> list[dict[str, Any]]:
    """Every finished trial record under ``folder``, ordered by ``k`` (unreadable ones skipped)."""
    out = []
    for path in Path(folder).glob("trial-*/trial.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(record, dict) and "k" in record and "params" in record:
            out.append(record)
    return sorted(out, key=lambda r: r["k"])


# --------------------------------------------------------------------------- the loop


def _as_sweep_runs(trials: list[dict[str, Any]], metric: str) -> list[Any]:
    from sweeps import RunState, SweepRun

    runs = []
    for t in trials:
        ok = t["status"] == "ok"
        runs.append(SweepRun(
            name=f"trial-{t['k']}",
            state=RunState.finished if ok else RunState.failed,
            config={key: {"value": value} for key, value in t["params"].items()},
            summary_metrics={metric: t["value"]} if ok else {},
        ))  # fmt: skip
    return runs


def propose(config: dict[str, Any], trials: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Up to ``n`` flat parameter dicts proposed by ``sweeps`` given ``trials`` (fewer when a
    grid is exhausted). Seeded by the sweep hash and ``len(trials)``."""
    import warnings

    with warnings.catch_warnings():  # pydantic's V2 notice on importing sweeps 0.2
        warnings.simplefilter("ignore")
        import sweeps

    metric = config.get("metric", {}).get("name", "val_nll")
    search_config = {k: v for k, v in config.items() if k not in ("run_cap", "command")}
    seed = (int(sweep_hash(config)[:8], 16) + 7919 * len(trials)) % 2**32
    state = np.random.get_state()  # noqa: NPY002 (sweeps draws from the global RNG)
    np.random.seed(seed)  # noqa: NPY002
    try:
        with warnings.catch_warnings():  # sklearn's GP convergence notes in bayes search
            warnings.simplefilter("ignore")
            proposals = sweeps.next_runs(search_config, _as_sweep_runs(trials, metric), n=n)
    finally:
        np.random.set_state(state)  # noqa: NPY002
    return [{k: _plain(v["value"]) for k, v in p.config.items()} for p in proposals if p]


def _plain(value: Any) -> Any:
    """numpy scalars (from the search) as Python values, as they read back from JSON."""
    return value.item() if isinstance(value, np.generic) else value


def trial_cap(config: dict[str, Any], trials: int | None) -> int:
    if trials is None:
        return int(config.get("run_cap") or DEFAULT_TRIALS)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"--trials: expected a positive integer, got {trials!r}")
    return trials


def run_sweep(
    path: str | Path | dict[str, Any],
    out: str | Path = "sweeps",
    *,
    trials: int | None = None,
    jobs: int = 1,
    data_dir: str | Path | None = None,
    on_trial: Callable[[dict[str, Any]], None] | None = None,
    wait_lock: bool = False,
) -> SweepSummary:
    """Run (or resume) the sweep of the YAML at ``path`` until it has ``trials`` trials.

    ``trials`` defaults to the YAML's ``run_cap`` (else 20); a grid stops when exhausted.
    ``on_trial`` is called with each new trial's record. Raises SweepConfigError (a bad
    file), ValueError (bad ``trials``/``jobs``), LockHeldError (the folder is in use).
    """
    from udora.experiments.checks import check_jobs

    config = load_sweep_config(path) if not isinstance(path, dict) else path
    cap = trial_cap(config, trials)
    check_jobs(jobs)
    folder = sweep_dir(config, out)
    summary = SweepSummary(folder, goal=config.get("metric", {}).get("goal", "minimize"))
    dd = str(data_dir) if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    with interrupts.catch_interrupts():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with results_lock(folder, wait=wait_lock):
                _run_locked(config, folder, cap, jobs, dd, summary, on_trial)
        except KeyboardInterrupt:
            interrupts.stopping()
            summary.interrupted = True
            summary.trials = load_trials(folder)
    return summary


def _run_locked(
    config: dict[str, Any],
    folder: Path,
    cap: int,
    jobs: int,
    dd: str | None,
    summary: SweepSummary,
    on_trial: Callable[[dict[str, Any]], None] | None,
) -> None:
    for tmp in folder.glob(".trial-*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True)
    saved = folder / "sweep.yaml"
    if not saved.exists():
        tmp = folder / f".sweep.yaml.{secrets.token_hex(4)}.tmp"
        tmp.write_text(yaml.safe_dump(config, sort_keys=False))
        os.replace(tmp, saved)
    summary.trials = load_trials(folder)
    pool = None
    if jobs > 1:
        from udora.experiments.bench import _init_worker

        ctx = multiprocessing.get_context("spawn")
        pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker)
    else:
        from udora.experiments.jax_cache import configure_compilation_cache

        configure_compilation_cache()
    try:
        while len(summary.trials) < cap:
            batch = propose(config, summary.trials, min(jobs, cap - len(summary.trials)))
            if not batch:  # a grid with every point tried
                break
            used = {t["k"] for t in summary.trials}
            free = (k for k in range(cap + len(used) + len(batch)) if k not in used)
            ks = [next(free) for _ in batch]
            if pool is None:
                records = [run_trial(folder, k, p, dd) for k, p in zip(ks, batch, strict=True)]
            else:
                futures = [pool.submit(run_trial, str(folder), k, p, dd)
                           for k, p in zip(ks, batch, strict=True)]  # fmt: skip
                records = [f.result() for f in futures]
            for record in records:
                summary.trials.append(record)
                summary.ran += 1
                if on_trial is not None:
                    on_trial(record)
            summary.trials.sort(key=lambda r: r["k"])
            if interrupts.requested():
                raise KeyboardInterrupt
    except BaseException:
        if pool is not None:
            from udora.experiments.bench import _stop_pool

            interrupts.stopping()
            _stop_pool(pool)
            pool = None
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True)


def trial_line(record: dict[str, Any]) -> str:
    """``trial-3 ok val_nll=0.8123 {"alpha": 0.1}`` or ``trial-3 failed: <reason> {...}``."""
    over = json.dumps(record["overrides"], default=str)
    if record["status"] == "ok":
        return f"trial-{record['k']} ok {record['metric']}={record['value']:.6g} {over}"
    return f"trial-{record['k']} failed: {record['error']} {over}"


# --------------------------------------------------------------------------- W&B


def wandb_api_key() -> str | None:
    """The W&B API key from WANDB_API_KEY or the netrc written by ``wandb login``; or None."""
    key = os.environ.get("WANDB_API_KEY")
    if key:
        return key
    try:
        import wandb

        return wandb.api.api_key or None
    except Exception:  # no wandb, or no settings readable: no credentials
        return None


def run_on_wandb(
    config: dict[str, Any],
    out: str | Path,
    *,
    trials: int | None = None,
    data_dir: str | Path | None = None,
    on_trial: Callable[[dict[str, Any]], None] | None = None,
) -> str:
    """Create the sweep on W&B from the same YAML and run ``trials`` under ``wandb.agent``.

    Each agent call runs the same :func:`run_trial` (also written under the sweep folder,
    numbered after the trials there) and logs its objective. Returns the sweep id.
    """
    import wandb

    cap = trial_cap(config, trials)
    folder = sweep_dir(config, out)
    folder.mkdir(parents=True, exist_ok=True)
    dd = str(data_dir) if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    sweep_id = wandb.sweep({k: v for k, v in config.items() if k != "command"})

    def agent_trial() -> None:
        with wandb.init() as run:
            params = dict(run.config)
            used = {t["k"] for t in load_trials(folder)}
            k = next(i for i in range(len(used) + 1) if i not in used)
            record = run_trial(folder, k, params, dd)
            run.log({key: record.get(key) for key in ("val_nll", "val_rmse")
                     if record.get(key) is not None})  # fmt: skip
            if on_trial is not None:
                on_trial(record)
            if record["status"] != "ok":
                run.finish(exit_code=1)

    wandb.agent(sweep_id, function=agent_trial, count=cap)
    return sweep_id
