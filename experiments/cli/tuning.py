"""``udora sweep init|trial|run`` and ``udora tune``: tuning on a validation split.

Argument parsing only; the work is in :mod:`udora.experiments.tuning.protocol`,
:mod:`udora.experiments.tuning.sweeps` and :mod:`udora.experiments.tuning.tune` (docs/running.md,
"Hyperparameter sweeps"). Registered on the root app by :mod:`udora.experiments.cli.main`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from udora.errors import UserError
from udora.experiments.cli import options as opts
from udora.experiments.cli.errors import usage_error as _usage_error
from udora.experiments.cli.errors import user_errors

console = Console()


sweep_app = typer.Typer(
    help="Hyperparameter sweeps scored on a validation split, never on the oracle.",
    no_args_is_help=True,
)


# The tuning objective's option, one text for `sweep init` and `tune`.
Objective = Annotated[
    str,
    typer.Option(
        help="nll (validation negative log-likelihood: Gaussian, or the log loss), "
        "rmse (regression) or brier (classification)."
    ),
]


@sweep_app.command("init")
def sweep_init(
    preset: Annotated[str, typer.Option(help="Preset name or YAML path.")],
    method: Annotated[str, typer.Option(help="Registered method name (see `udora methods`).")],
    out: Annotated[Path, opts.path_option("The sweep YAML to write.", what="a file path")],
    objective: Objective = "nll",
    search: Annotated[str, typer.Option(help="bayes, random or grid.")] = "bayes",
    trials: Annotated[int, typer.Option(help="Trials in the sweep (run_cap).")] = 20,
    seed: Annotated[int, typer.Option(help="Seed of the task tuned on.")] = 0,
    val_fraction: Annotated[
        float, typer.Option(help="Fraction of the training sample held out for validation.")
    ] = 0.2,
) -> None:
    """Write a W&B sweep configuration (wandb sweep FILE) for METHOD on PRESET."""
    from udora.experiments.tuning.sweep_file import sweep_config, write_sweep_config

    try:
        config = sweep_config(
            preset,
            method,
            objective=objective,
            search=search,
            trials=trials,
            seed=seed,
            val_fraction=val_fraction,
        )
        path = write_sweep_config(config, out)
    except UserError as err:
        _usage_error(err)
    console.print(f"wrote {path} ({search}, {trials} trials, metric {config['metric']['name']})")


@sweep_app.command("trial")
def sweep_trial(
    args: Annotated[
        list[str] | None,
        typer.Argument(help="key=value: preset, method, seed, objective, config fields."),
    ] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
) -> None:
    """Run one sweep trial: fit on the fit part, print the validation objective as JSON.

    Under a W&B agent (WANDB_SWEEP_ID set) the objective is also logged to the run.
    """
    import json
    import os

    from udora.experiments.tuning.protocol import trial
    from udora.experiments.tuning.sweep_file import parse_trial_args

    try:
        kwargs = parse_trial_args(list(args or []))
        result = trial(data_dir=data_dir, **kwargs)
    except UserError as err:
        _usage_error(err)
    summary = result.summary()
    print(json.dumps(summary, default=str))
    if os.environ.get("WANDB_SWEEP_ID"):
        import wandb

        with wandb.init(config=kwargs["config_overrides"]) as run:
            from udora.experiments.tuning.trials import validation_fields

            fields = validation_fields(summary)
            run.log({**fields, "n_fit": summary["n_fit"], "n_val": summary["n_val"]})


@sweep_app.command("run")
def sweep_run_cmd(
    file: Annotated[Path, typer.Argument(help="A sweep YAML (udora sweep init).")],
    trials: Annotated[
        int | None, typer.Option(help="Trials the sweep should have (default: its run_cap).")
    ] = None,
    jobs: opts.Jobs = None,
    out: Annotated[Path, opts.path_option("Folder of sweep folders.")] = Path("sweeps"),
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
    wandb: Annotated[
        bool,
        typer.Option(
            "--wandb",
            help="Online: create the sweep on W&B and run it under an agent. Offline (no "
            "login, or WANDB_MODE=offline): run it here and log each trial offline, as "
            "bench --wandb does.",
        ),
    ] = False,
    tuned_out: Annotated[
        Path | None,
        opts.path_option(
            "Also write the best trial's config as DIR/<preset>/<method>.yaml, "
            "the file of `udora tune` (for `udora bench --tuned DIR`).",
            "--tuned-out",
        ),
    ] = None,
    executor: opts.Executor = "local",
    address: opts.Address = None,
    cpus_per_run: opts.CpusPerRun = None,
    timeout: opts.Timeout = None,
) -> None:
    """Run (or resume) a sweep offline: `sweeps` proposes, trials run here, written to --out.

    With --tuned-out DIR the best trial's config is written as `udora tune` writes it, so
    `udora bench --tuned DIR` runs it.

    With --wandb and W&B online the sweep is created on W&B and its trials run under an
    agent; offline (no login, or WANDB_MODE=offline) the sweep runs here and each trial is
    logged as an offline W&B run, and the last line names their folder and the `wandb
    sync` command that uploads them, as `udora bench --wandb` does.

    Exit 0 when the sweep completed (failed trials are counted, not fatal), 1 when no trial
    is ok, 2 on a user error (also WANDB_MODE=online without credentials), 130 on Ctrl-C.
    """
    from udora.experiments.run import interrupts
    from udora.experiments.run.checks import check_out_dir
    from udora.experiments.run.wandb_log import offline_note, offline_runs, wandb_mode
    from udora.experiments.tuning import on_wandb as sweep_wandb
    from udora.experiments.tuning import sweeps as sr
    from udora.experiments.tuning.proposals import disk_summary, sweep_dir, trial_cap
    from udora.experiments.tuning.sweep_file import load_sweep_config
    from udora.experiments.tuning.trials import trial_line

    plain = {"highlight": False, "markup": False, "soft_wrap": True}
    online = wandb and wandb_mode() == "online"
    offline = wandb and not online  # the same sweep here, each trial logged offline

    def show(record: dict) -> None:
        console.print(trial_line(record), **plain)
        if offline:
            sweep_wandb.log_trial(record, config, out)

    try:
        config = load_sweep_config(file)
        trial_cap(config, trials)
        spec = opts.executor_spec(executor, jobs, address, cpus_per_run, timeout)
        if tuned_out is not None:
            check_out_dir(tuned_out, "--tuned-out")
    except UserError as err:
        _usage_error(err)
    if online:
        if sweep_wandb.wandb_api_key() is None:
            _usage_error(
                "--wandb: WANDB_MODE=online but no W&B credentials (set WANDB_API_KEY or "
                "run `wandb login`); nothing was run. Unset WANDB_MODE to log offline."
            )
        sweep_id = sweep_wandb.run_on_wandb(
            config, out, trials=trials, data_dir=data_dir, on_trial=show
        )
        console.print(f"W&B sweep {sweep_id}; trials in {sweep_dir(config, out)}", **plain)
        _write_tuned(tuned_out, config, disk_summary(config, out), file, trials)
        return
    logged_before = offline_runs(sweep_dir(config, out)) if offline else set()
    try:
        summary = sr.run_sweep(
            config, out, trials=trials, data_dir=data_dir, on_trial=show, executor=spec
        )
    except UserError as err:
        _usage_error(err)
    note = offline_note(sweep_dir(config, out), logged_before) if offline else None
    if summary.interrupted:
        interrupts.ignore_from_now()
        console.print(f"interrupted: {summary.line()}; rerun to resume", **plain)
        if note:
            console.print(note, **plain)
        raise typer.Exit(interrupts.exit_code())
    console.print(summary.line(), **plain)
    if note:
        console.print(note, **plain)
    _write_tuned(tuned_out, config, summary, file, trials)
    if summary.best is None:
        raise typer.Exit(1)


def _write_tuned(tuned_out, config, summary, file, trials) -> None:
    """``sweep run --tuned-out``: the tuned file of the finished sweep, and a line naming it."""
    if tuned_out is None:
        return
    from udora.experiments.tuning.tune import tuned_from_sweep

    path, data = tuned_from_sweep(tuned_out, config, summary, file, trials)
    what = (
        "no trial ok: bench uses the default config"
        if not data["tuned"]
        else (f"best trial-{data['best_trial']}")
    )
    console.print(
        f"wrote {path} ({what}); `udora bench --tuned {tuned_out}` uses it",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def tune_cmd(
    suite: Annotated[
        str, typer.Option(help="dev, heldout, cls-dev, cls-heldout, or all (both kinds).")
    ] = "dev",
    presets: Annotated[str | None, typer.Option(help="Comma-separated presets.")] = None,
    methods_: Annotated[
        str | None, typer.Option("--methods", help="Comma-separated methods (default: all).")
    ] = None,
    trials: Annotated[int, typer.Option(help="Trials per (preset, method) sweep.")] = 10,
    jobs: opts.Jobs = None,
    objective: Objective = "nll",
    seed: Annotated[int, typer.Option(help="Seed of the task tuned on.")] = 0,
    out: Annotated[Path, opts.path_option("Folder of tuned configs.")] = Path("tuned"),
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Hold a field: key=value (method.key for one method)."),
    ] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
    executor: opts.Executor = "local",
    address: opts.Address = None,
    cpus_per_run: opts.CpusPerRun = None,
    timeout: opts.Timeout = None,
) -> None:
    """Tune every preset x method by an offline bayes sweep on a validation split.

    Writes OUT/<preset>/<method>.yaml (best config, objective, trial counts, sweep file and
    hash); resumable. Exit 0 when done, 1 when a sweep has no trial ok (its file says
    tuned: false), 2 on a user error, 130 on Ctrl-C.
    """
    from udora import methods as registry
    from udora.experiments.grid.bench import methods_for, suite_presets
    from udora.experiments.run import interrupts
    from udora.experiments.run.checks import check_out_dir
    from udora.experiments.tuning.proposals import SweepSummary
    from udora.experiments.tuning.trials import trial_line
    from udora.experiments.tuning.tune import tune_many

    plain = {"highlight": False, "markup": False, "soft_wrap": True}
    with user_errors(console):
        names = opts.names(presets, "--presets", console, "preset names or YAML paths")
        chosen = opts.names(methods_, "--methods", console, "method names")
        check_out_dir(out)
    names = names or suite_presets(suite)
    chosen = chosen or methods_for(names, registry.list_methods())  # the presets' kinds'

    def show(record: dict) -> None:
        where = f"{record['params'].get('preset')}/{record['params'].get('method')}"
        seconds = record.get("timings", {}).get("trial", 0.0)
        console.print(f"  {where} {trial_line(record)} ({seconds:.1f} s)", **plain)

    def tuned(path: Path, data: dict, summary: SweepSummary | None) -> None:
        if summary is None:
            console.print(
                f"{data['preset']}/{data['method']}: no tunable parameters; wrote {path}", **plain
            )
        else:
            console.print(
                f"{data['preset']}/{data['method']}: {summary.line()}; wrote {path}", **plain
            )

    from udora.experiments.grid.bench import pair_methods

    pairs = pair_methods(names, chosen)  # each method on the presets of its task kinds
    try:
        from udora.experiments.run.overrides import Overrides

        spec = opts.executor_spec(executor, jobs, address, cpus_per_run, timeout)
        summaries = tune_many(
            pairs,
            out,
            trials=trials,
            objective=objective,
            seed=seed,
            executor=spec,
            fixed=Overrides.parse(set_ or []),
            data_dir=data_dir,
            on_trial=show,
            on_tuned=tuned,
        )
    except UserError as err:
        _usage_error(err)
    if any(s.interrupted for s in summaries):
        interrupts.ignore_from_now()
        n = sum(len(s.trials) for s in summaries)
        console.print(
            f"interrupted: {n} trials on disk under {out}/sweeps; rerun to resume", **plain
        )
        raise typer.Exit(interrupts.exit_code())
    ran = sum(s.ran for s in summaries)
    console.print(
        f"tuned {len(pairs)} pairs ({len(summaries)} sweeps, {ran} trials ran now) into {out}",
        **plain,
    )
    if any(s.best is None for s in summaries):  # as `sweep run`: a sweep with no trial ok
        raise typer.Exit(1)
