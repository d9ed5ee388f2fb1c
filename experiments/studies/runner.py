"""Running a study: one grid, or for a tuned study a tune then a grid per level.

An untuned study is one ``bench`` grid of every level (:func:`udora.experiments.studies.study.
study_runs`). A study with a ``tune:`` block repeats the paper's protocol at every level:
``udora tune`` for every preset x method with the level held (a method field such as
``optimizer: sgd``, whose own search space is then searched; or the tuning objective for
``tuning.objective``), written to ``<out>/tuned/<level>/``; then the grid of that level
refits each method with its tuned config, as ``bench --tuned``. Everything resumes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from udora.experiments.grid.bench import GridSummary, make_grid, run_grid
from udora.experiments.grid.executors import ExecutorSpec
from udora.experiments.studies.study import TUNING_PREFIX, Study, StudyError, study_runs


def tuned_dir(out: str | Path, level_name: str) -> Path:
    """``<out>/tuned/<level>`` (characters other than letters, digits, ``._-`` as ``_``)."""
    return Path(out) / "tuned" / re.sub(r"[^A-Za-z0-9._-]", "_", level_name)


def _add(total: GridSummary, part: GridSummary) -> None:
    for field in ("done", "skipped", "failed", "not_run"):
        setattr(total, field, getattr(total, field) + getattr(part, field))
    total.interrupted = total.interrupted or part.interrupted


def run_study(
    study: Study,
    out: str | Path,
    *,
    jobs: int = 1,
    data_dir: str | Path | None = None,
    console: Any = None,
    wait_lock: bool = False,
    on_trial: Callable[[dict[str, Any]], None] | None = None,
    origin: str = "study",
    executor: ExecutorSpec | None = None,
) -> GridSummary:
    """Run ``study`` into ``out`` (see the module doc); the summed grid summary.

    Every level's runs are resolved before anything is fitted (errors name ``origin``).
    ``executor`` (default: the local one with ``jobs``) runs the trials and the runs.
    """
    executor = executor or ExecutorSpec(jobs=jobs)
    if study.tune is None:
        runs = study_runs(study, data_dir, origin=origin)
        return run_grid(
            runs, out, data_dir=data_dir, console=console, wait_lock=wait_lock, executor=executor
        )
    from udora.experiments.tuning.tune import tune_many
    from udora.experiments.tuning.tuned_files import check_tuned_preset_fields, tuned_configs

    presets = study.preset_names()
    pairs = [(p, m) for p in presets for m in study.methods]
    plans = []
    for name, value in zip(study.level_names(), study.level_values(), strict=True):
        tune = study.tune.model_dump()
        if study.factor.startswith(TUNING_PREFIX):
            tune[study.factor[len(TUNING_PREFIX) :]] = value
        plans.append((name, tune, study.overrides(value)))
    for name, _, held in plans:  # every level's fields checked before anything is tuned
        try:
            make_grid(presets, study.methods, study.seeds[:1], held, data_dir=data_dir)
        except (ValueError, KeyError) as err:
            raise StudyError(f"{origin}: level {name}: {err}") from None
    total = GridSummary()
    for name, tune, held in plans:
        folder = tuned_dir(out, name)
        summaries = tune_many(
            pairs,
            folder,
            fixed=held,
            data_dir=data_dir,
            on_trial=on_trial,
            executor=executor,
            **tune,
        )
        if any(s.interrupted for s in summaries):
            total.interrupted = True
            return total
        configs, sources, _ = tuned_configs(folder, presets, study.methods)
        check_tuned_preset_fields(sources, held.task)  # holds by construction
        runs = make_grid(
            presets, study.methods, study.seeds, held, data_dir=data_dir, tuned=configs
        )
        _add(
            total,
            run_grid(
                runs,
                out,
                data_dir=data_dir,
                console=console,
                wait_lock=wait_lock,
                config_sources=sources,
                executor=executor,
            ),
        )
        if total.interrupted:
            return total
    return total
