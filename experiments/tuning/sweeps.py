"""Run sweeps offline: the ``sweeps`` package proposes, trials run locally, results on disk.

``udora sweep run FILE.yaml`` needs no W&B account. The sweep YAML (written by ``udora sweep
init`` and validated by :func:`udora.experiments.tuning.sweep_file.load_sweep_config`) is given
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
(:mod:`udora.experiments.tuning.trials`). The hash covers the sweep YAML without
``run_cap``, so ``--trials`` may grow a sweep. Rerunning resumes: finished trials are read
back and fed to the search. A trial that raises or gives a non-finite objective is
recorded as ``failed`` with its reason, reported to the search as ``RunState.failed``
(bayes imputes the worst value seen), and the sweep goes on. Each sweep folder takes the
results lock; Ctrl-C stops cleanly, keeping finished trials.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from udora.errors import UserError
from udora.experiments.grid.executors import ExecutorSpec
from udora.experiments.grid.lock import results_lock
from udora.experiments.run import interrupts
from udora.experiments.tuning.engine import SweepEngine, SweepState
from udora.experiments.tuning.proposals import SweepSummary, sweep_dir, trial_cap
from udora.experiments.tuning.sweep_file import load_sweep_config
from udora.experiments.tuning.trials import load_trials


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
    (summary,) = run_sweeps(
        [config],
        out,
        trials=trials,
        per_sweep=spec.jobs,
        data_dir=data_dir,
        on_trial=on_trial,
        wait_lock=wait_lock,
        executor=spec,
    )
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
    from udora.experiments.run.checks import check_jobs

    caps = [trial_cap(c, trials) for c in configs]
    spec = (executor or ExecutorSpec(jobs=jobs)).check()
    if per_sweep is not None:  # None: as many as the executor runs at once
        check_jobs(per_sweep)
    dd = str(data_dir) if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    states = [SweepState(c, sweep_dir(c, out), cap) for c, cap in zip(configs, caps, strict=True)]
    if len({s.folder for s in states}) != len(states):
        raise UserError("the same sweep is given twice")
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
