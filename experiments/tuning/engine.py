"""The scheduler of :func:`udora.experiments.tuning.sweeps.run_sweeps`: sweeps and workers.

:class:`SweepState` is one sweep's trials so far and in flight; :class:`SweepEngine` keeps
an executor's workers (spawned once, so their caches and compiled programs serve every
trial; in process for one job) busy with the sweeps' trials. A sweep proposes only when none of
its trials runs, up to ``per_sweep`` at once, so its proposals depend on its results
alone (docs/design.md, "Tuning without the oracle").
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from udora.experiments.run import interrupts
from udora.experiments.tuning.proposals import SweepSummary, propose
from udora.experiments.tuning.trials import load_trial, load_trials, record_crashed_trial, run_trial
from udora.oracle.atomic import write_text


class SweepState:
    """One sweep's state in :func:`run_sweeps`: its trials so far and those in flight."""

    def __init__(self, config: dict[str, Any], folder: Path, cap: int) -> None:
        self.config, self.folder, self.cap = config, folder, cap
        self.summary = SweepSummary(folder, goal=config.get("metric", {}).get("goal", "minimize"))
        self.running: set[int] = set()  # trial numbers in flight
        self.exhausted = False  # a grid with every point tried
        self.reported = False

    def prepare(self) -> None:
        """Clear half-written trials, save the YAML once, read back finished trials."""
        for tmp in self.folder.glob(".trial-*.tmp"):
            shutil.rmtree(tmp, ignore_errors=True)
        saved = self.folder / "sweep.yaml"
        if not saved.exists():
            write_text(saved, yaml.safe_dump(self.config, sort_keys=False))
        self.summary.trials = load_trials(self.folder)

    @property
    def done(self) -> bool:
        return not self.running and (self.exhausted or len(self.summary.trials) >= self.cap)

    def propose(self, n: int) -> list[tuple[int, dict[str, Any]]]:
        """Up to ``n`` new (trial number, params); only when nothing of this sweep runs."""
        n = min(n, self.cap - len(self.summary.trials))
        if self.running or n < 1 or self.exhausted:
            return []
        batch = propose(self.config, self.summary.trials, n)
        if not batch:
            self.exhausted = True
            return []
        used = {t["k"] for t in self.summary.trials}
        free = (k for k in range(self.cap + len(used) + len(batch)) if k not in used)
        ks = [next(free) for _ in batch]
        self.running.update(ks)
        return list(zip(ks, batch, strict=True))

    def finish(self, record: dict[str, Any]) -> None:
        self.running.discard(record["k"])
        self.summary.trials.append(record)
        self.summary.trials.sort(key=lambda r: r["k"])
        self.summary.ran += 1


class SweepEngine:
    """Keeps an executor's workers busy with the trials of the sweeps
    (:mod:`udora.experiments.grid.executors`); a trial whose worker died is recorded failed."""

    def __init__(self, states, executor, per_sweep, dd, on_trial, on_done, marker_dir) -> None:
        self.states, self.executor, self.per_sweep, self.dd = states, executor, per_sweep, dd
        self.jobs = executor.jobs  # sweeps under way at once
        self.on_trial, self.on_done, self.marker_dir = on_trial, on_done, marker_dir

    def _report_finished(self) -> None:
        for s in self.states:
            if s.done and not s.reported:
                s.reported = True
                if self.on_done is not None:
                    self.on_done(s.summary)

    def _next(self, free: int) -> list[tuple[SweepState, int, dict[str, Any]]]:
        """New trials for ``free`` slots: sweeps already started first, then the next ones,
        with at most ``jobs`` sweeps started and unfinished at a time."""
        out: list[tuple[SweepState, int, dict[str, Any]]] = []
        started = 0
        for s in self.states:
            if free <= 0:
                break
            if s.done:
                continue
            if not s.running and started >= self.jobs:
                continue
            started += 1
            for k, params in s.propose(min(free, self.per_sweep)):
                out.append((s, k, params))
                free -= 1
            self._report_finished()  # a grid found exhausted
        return out

    def _finish(self, s: SweepState, record: dict[str, Any]) -> None:
        s.finish(record)
        if self.on_trial is not None:
            self.on_trial(record)

    def run(self) -> None:
        self._report_finished()  # sweeps complete on disk already
        ex = self.executor.make(self.marker_dir)
        self.jobs = ex.capacity  # Ray's default: as many as the cluster holds
        self.per_sweep = self.per_sweep or ex.capacity
        running: dict[int, tuple[SweepState, int, dict[str, Any]]] = {}
        try:
            while True:
                for s, k, params in self._next(ex.capacity - len(running)):
                    running[ex.submit(run_trial, (str(s.folder), k, params, self.dd))] = (
                        s,
                        k,
                        params,
                    )
                if not running:
                    break
                ended = [(running.pop(t), o) for t, o in ex.wait()]
                for (s, k, params), outcome in sorted(ended, key=lambda e: e[0][0].folder.name):
                    record = (
                        outcome.value
                        if outcome.crash is None
                        else (record_crashed_trial(s.folder, k, params, outcome.crash))
                    )
                    self._finish(s, record)
                self._report_finished()
                if interrupts.requested():
                    raise KeyboardInterrupt
        except BaseException:
            interrupts.stopping()
            ex.close(now=True)
            for s, k, _ in running.values():  # trials written before the stop still count
                record = load_trial(s.folder, k)
                if record is not None:
                    s.finish(record)
            raise
        ex.close()
