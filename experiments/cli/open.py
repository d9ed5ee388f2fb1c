"""``udora export`` (tasks as files for a method outside udora) and ``udora score`` (its
predictions file scored like a built-in run); docs/evaluate_any_model.md. Registered on
the root app by :mod:`udora.experiments.cli.main`."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from udora.experiments.cli import options as opts
from udora.experiments.cli.errors import user_errors

console = Console()
plain = {"highlight": False, "markup": False, "soft_wrap": True}


def export_cmd(
    out: Annotated[Path, opts.path_option("Folder of the tasks: OUT/<preset>/seed-<s>/.")],
    suite: Annotated[str, typer.Option(help="dev, heldout or all (without --presets).")] = "dev",
    presets: Annotated[str | None, typer.Option(help="Comma-separated presets.")] = None,
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds.")] = "0",
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
) -> None:
    """Write each (preset, seed) task as files: training sample, pool, task.json.

    No oracle array and no pool outcome is written. Predict every pool row (training rows
    included) and score the file with `udora score`.
    """
    from udora.experiments.grid.bench import suite_presets
    from udora.experiments.open.tasks import export_task, load_task

    with user_errors(console):
        names = opts.names(presets, "--presets", console, "preset names or YAML paths")
        chosen = names or suite_presets(suite)
        seed_list = opts.seeds(seeds, console)
        for preset in chosen:
            for seed in seed_list:
                task = load_task(preset, seed, data_dir)
                folder = out / task.preset / f"seed-{seed}"
                export_task(task, folder)
                console.print(
                    f"wrote {folder} (task {task.task_hash}: {len(task.y_train)} "
                    f"training points, {task.n_pool} pool rows)",
                    **plain,
                )


def score_cmd(
    predictions: Annotated[
        Path | None, typer.Argument(help="A .npz, .csv or .parquet file (or --estimator).")
    ] = None,
    method: Annotated[str | None, typer.Option(help="The name the run is reported under.")] = None,
    estimator: Annotated[
        str | None,
        typer.Option(
            help="Instead of a file: module:Class of a scikit-learn-style regressor or classifier, "
            "fitted on the task's training sample here (random_state=0 where it has one; "
            "bagged: members' resamples and states drawn from seed 0)."
        ),
    ] = None,
    bagged: Annotated[
        int | None, typer.Option(help="With --estimator: a bagged ensemble of this many.")
    ] = None,
    task: Annotated[
        Path | None, opts.path_option("A task folder of `udora export`.", "--task")
    ] = None,
    preset: Annotated[str | None, typer.Option(help="Instead of --task: a preset.")] = None,
    seed: Annotated[int | None, typer.Option(help="With --preset: the seed.")] = None,
    out: Annotated[Path | None, opts.path_option("Results folder to write the run in.")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
) -> None:
    """Score a predictions file exactly as a built-in run and (with --out) write its run.

    The run folder is a built-in run's, marked external; `udora report` and `udora meta`
    read it beside built-in methods. Exit 2 on bad input (one line naming the file and
    field), with nothing written.
    """
    from udora.experiments.open.adapters import NoPredictiveStd
    from udora.experiments.open.score import score_file
    from udora.experiments.open.tasks import load_task, read_task
    from udora.experiments.run.checks import UsageError, check_out_dir
    from udora.names import check_name
    from udora.scoring.registry import names

    with user_errors(console):
        if (task is None) == (preset is None) or (preset is not None and seed is None):
            raise UsageError("give --task DIR, or --preset P with --seed S")
        if (predictions is None) == (estimator is None):
            raise UsageError("give a PREDICTIONS file or --estimator module:Class, not both")
        if bagged is not None and (estimator is None or bagged < 2):
            raise UsageError(f"--bagged: expected a number >= 2 with --estimator, got {bagged}")
        if out is not None:
            check_out_dir(out)
        found = read_task(task) if task is not None else load_task(preset, seed, data_dir)
        if estimator is None:
            if method is None:
                raise UsageError("--method: give the name the run is reported under")
            record = score_file(predictions, found, method, out, data_dir)
        else:
            method = check_name(method or estimator.rsplit(":", 1)[-1], "--method")
            made = f"--estimator {estimator}" + (f" --bagged {bagged}" if bagged else "")
            with tempfile.TemporaryDirectory(prefix="udora-estimator-") as scratch:
                try:  # the run folder keeps the fields (predictions.npz); scratch goes
                    fields = _fit_here(estimator, bagged, found, Path(scratch), method)
                except NoPredictiveStd as err:  # the command line's way round it is a flag
                    raise UsageError(
                        f"{err}; from the command line, --bagged K (K >= 2) fits K bootstrap "
                        "copies and scores their spread as EU"
                    ) from None
                record = score_file(fields, found, method, out, data_dir, source=made)
    m = record["metrics"]
    head = f"{record['external']['form']} form"
    if not record["external"]["split"]:
        head += " (total only: the metrics that need an AU/EU split are NaN)"
    where = f"; wrote {record['path']}" if "path" in record else ""
    console.print(f"ok: {method} on {found.preset}, seed {found.seed}: {head}{where}", **plain)
    keys = names(found.kind, role="console")
    shown = "  ".join(f"{k}={m[k]:.3f}" for k in keys if m.get(k) is not None)
    console.print(shown, **plain)


def _fit_here(path: str, bagged: int | None, task, folder: Path, method: str) -> Path:
    """Fit the estimator at import ``path`` on ``task`` (seeded: ``random_state=0`` where
    it has one; bagged, :func:`~udora.experiments.open.adapters.bagged_fields` at seed 0)
    and save its prediction fields in ``folder`` (a scratch folder) as a file named by
    the run's method, preset and seed, which is scored like any file."""
    from udora.experiments.open.adapters import bagged_fields, estimator_from_path, sklearn_fields
    from udora.oracle.atomic import write_npz

    make = estimator_from_path(path)
    if hasattr(make, "get_params") and "random_state" in make.get_params():
        make.set_params(random_state=0)
    fields = (
        bagged_fields(lambda: estimator_from_path(path), task, bagged, seed=0)
        if bagged
        else sklearn_fields(make, task)
    )
    folder.mkdir(parents=True, exist_ok=True)
    return write_npz(folder / f".{method}-{task.preset}-seed{task.seed}-predictions.npz", fields)
