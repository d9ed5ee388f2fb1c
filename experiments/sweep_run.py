"""Run sweeps offline: the ``sweeps`` package proposes, trials run locally, results on disk.

``udora sweep run FILE.yaml`` needs no W&B account. The sweep YAML (written by ``udora sweep
init`` and validated by :func:`udora.experiments.sweep_config.load_sweep_config`) is given
to the ``sweeps`` package, which proposes each next configuration (random, grid or bayes)
from the trials so far.

**Scheduling.** :func:`run_sweeps` runs several sweeps over one pool of ``jobs`` spawned
worker processes (as in ``udora bench``), so workers, their task caches and their
compiled JAX programs are reused by every trial. A sweep proposes only when none of its
trials is running, up to ``per_sweep`` configurations at once, and sees every finished
result first: with ``per_sweep=1`` (``udora tune``) each sweep is the fully sequential
Bayesian search, and the pool is kept busy by the other sweeps; :func:`run_sweep` (one
sweep, ``udora sweep run --jobs J``) proposes batches of J. The random draws of a proposal
are seeded by the sweep's hash and its number of finished trials, so the proposals depend
only on earlier results, never on the timing of the workers: a sweep is reproducible.

Each trial is written atomically to ``<out>/<name>-<hash>/trial-<k>/``
(:mod:`udora.experiments.sweep_trials`). The hash covers the sweep YAML without
``run_cap``, so ``--trials`` may grow a sweep. Rerunning resumes: finished trials are read
back and fed to the search. A trial that raises or gives a non-finite objective is
recorded as ``failed`` with its reason, reported to the search as ``RunState.failed``
(bayes imputes the worst value seen), and the sweep goes on. Each sweep folder takes the
results lock; Ctrl-C stops cleanly, keeping finished trials.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from udora.experiments import interrupts
from udora.experiments.executors import ExecutorSpec
from udora.experiments.lock import results_lock
from udora.experiments.sweep_config import load_sweep_config
from udora.experiments.sweep_trials import load_trials, trial_line

DEFAULT_TRIALS = 20  # when neither --trials nor the YAML's run_cap says

__all__ = ["SweepSummary", "load_trials", "propose", "run_sweep", "run_sweeps", "sweep_dir",
           "sweep_hash", "trial_cap", "trial_line"]  # fmt: skip


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
    executor: ExecutorSpec | None = None,
) -> SweepSummary:
    """Run (or resume) the sweep of the YAML at ``path`` until it has ``trials`` trials.

    ``trials`` defaults to the YAML's ``run_cap`` (else 20); a grid stops when exhausted.
    ``jobs`` configurations are proposed at once and run in parallel. ``on_trial`` is
    called with each new trial's record. Raises SweepConfigError (a bad file), ValueError
    (bad ``trials``/``jobs``), LockHeldError (the folder is in use).
    """
    config = load_sweep_config(path) if not isinstance(path, dict) else path
    spec = executor or ExecutorSpec(jobs=jobs)
    (summary,) = run_sweeps([config], out, trials=trials, per_sweep=spec.jobs, data_dir=data_dir,
                            on_trial=on_trial, wait_lock=wait_lock, executor=spec)  # fmt: skip
    return summary


def run_sweeps(
    configs: list[dict[str, Any]],
    out: str | Path = "sweeps",
    *,
    trials: int | None = None,
    jobs: int = 1,
    per_sweep: int | None = 1,
    data_dir: str | Path | None = None,
    on_trial: Callable[[dict[str, Any]], None] | None = None,
    on_done: Callable[[SweepSummary], None] | None = None,
    wait_lock: bool = False,
    executor: ExecutorSpec | None = None,
) -> list[SweepSummary]:
    """Run (or resume) validated sweep ``configs`` over one pool of ``jobs`` workers.

    Sweeps start in order and at most ``jobs`` run at a time; each has at most
    ``per_sweep`` trials in flight (see module doc). ``on_done`` is called with a sweep's
    summary as soon as it has its trials. Returns one summary per config, in order; after
    Ctrl-C every summary is marked ``interrupted`` and holds the trials on disk.
    ``executor`` (default: the local one with ``jobs``) says where trials execute.
    """
    from udora.experiments.checks import check_jobs
    from udora.experiments.sweep_engine import SweepEngine, SweepState

    caps = [trial_cap(c, trials) for c in configs]
    spec = (executor or ExecutorSpec(jobs=jobs)).check()
    if per_sweep is not None:  # None: as many as the executor runs at once
        check_jobs(per_sweep)
    dd = str(data_dir) if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    states = [SweepState(c, sweep_dir(c, out), cap) for c, cap in zip(configs, caps, strict=True)]
    if len({s.folder for s in states}) != len(states):
        raise ValueError("the same sweep is given twice")
    with interrupts.catch_interrupts(), contextlib.ExitStack() as locks:
        try:
            for s in states:
                s.folder.mkdir(parents=True, exist_ok=True)
                locks.enter_context(results_lock(s.folder, wait=wait_lock))
                s.prepare()
            SweepEngine(states, spec, per_sweep, dd, on_trial, on_done, Path(out)).run()
        except KeyboardInterrupt:
            interrupts.stopping()
            for s in states:
                s.summary.interrupted = True
                s.summary.trials = load_trials(s.folder)
    return [s.summary for s in states]
