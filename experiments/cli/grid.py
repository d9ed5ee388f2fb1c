"""``udora run`` and ``udora bench``: one run, a grid of runs (docs/running.md). Registered on
the root app by :mod:`udora.experiments.cli.main`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from udora.experiments.cli import options as opts
from udora.experiments.cli.errors import usage_error as _usage_error

if TYPE_CHECKING:
    from udora.experiments.run.overrides import Overrides

console = Console()


def run_cmd(
    preset: Annotated[str, typer.Option(help="Preset name or YAML path.")],
    method: Annotated[str, typer.Option(help="Registered method name (see `udora methods`).")],
    seed: Annotated[int, typer.Option(help="Run seed.")] = 0,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="key=value: a method config field, or preset.FIELD."),
    ] = None,
    out: Annotated[Path, opts.path_option("Results folder.")] = Path("results"),
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
    timeout: opts.Timeout = None,
) -> None:
    """Run one method on one preset at one seed and write its run folder.

    Exit 0 when the run is ok, 1 when it failed (its error is printed and recorded), 2 on
    a user error, 130 on Ctrl-C and 143 on SIGTERM, saying the run was not recorded
    (docs/running.md, "One run").
    """
    from udora.experiments.grid.dispatch import run_alone
    from udora.experiments.run import interrupts
    from udora.experiments.run.checks import UsageError, check_out_dir, check_seed
    from udora.experiments.run.execute import Overrides, run_resolved
    from udora.experiments.run.records import read_run
    from udora.experiments.run.spec import RunSpec, resolve
    from udora.scoring.registry import names

    plain = {"highlight": False, "markup": False, "soft_wrap": True}
    with interrupts.catch_interrupts():
        try:  # before anything is fitted (docs/running.md, "One run")
            check_seed(seed)
            check_out_dir(out)
            if timeout is not None:
                opts.executor_spec("local", 1, None, None, timeout)
            spec = RunSpec(preset, method, seed, Overrides.parse(set_ or []))
            run = resolve(spec, data_dir)
        except UsageError as err:
            _usage_error(err)
        except KeyboardInterrupt:
            interrupts.ignore_from_now()
            console.print("interrupted before the run started: nothing recorded", **plain)
            raise typer.Exit(interrupts.exit_code()) from None
        folder = run.run_dir(out)
        try:
            if timeout is None:
                result = run_resolved(run, out, data_dir=data_dir)
                status, error, metrics = result.status, result.error, result.metrics
            else:  # in a worker process, killed when overdue (a hang in native code too)
                status, error = run_alone(run, out, data_dir, timeout)
                found = read_run(folder, verify_files=False)
                metrics = found.record.metrics if found.record is not None else {}
        except KeyboardInterrupt:
            interrupts.ignore_from_now()
            why = "SIGTERM" if interrupts.exit_code() == 143 else "Ctrl-C"
            console.print(f"interrupted ({why}): {folder} was not recorded", **plain)
            raise typer.Exit(interrupts.exit_code()) from None
    console.print(f"{status}: {folder}", **plain)
    if status != "ok":
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(1)
    keys = names(run.preset.kind, role="console")
    line = "  ".join(f"{k}={metrics[k]:.3f}" for k in keys if metrics.get(k) is not None)
    console.print(line, **plain)


def bench_cmd(
    suite: Annotated[str, typer.Option(help="dev, heldout, cls-dev, cls-heldout or all.")] = "dev",
    presets: Annotated[str | None, typer.Option(help="Comma-separated presets.")] = None,
    methods_: Annotated[
        str | None, typer.Option("--methods", help="Comma-separated methods (default: all).")
    ] = None,
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds.")] = "0",
    jobs: opts.Jobs = None,
    out: Annotated[Path, opts.path_option("Results folder.")] = Path("results"),
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value overrides.")] = None,
    wandb: Annotated[
        bool,
        typer.Option(
            "--wandb",
            help="Log runs to W&B; offline (no login, or WANDB_MODE=offline) into one "
            "folder, named at the end with the `wandb sync` command that uploads it.",
        ),
    ] = False,
    quick: Annotated[
        bool, typer.Option("--quick", help="Shipped presets, fast methods, fewer epochs.")
    ] = False,
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
    wait_lock: Annotated[
        bool, typer.Option("--wait-lock", help="Wait while another bench uses --out.")
    ] = False,
    tuned: Annotated[
        Path | None,
        opts.path_option(
            "Folder written by `udora tune` or `udora sweep run --tuned-out`: "
            "tuned configs (--set wins).",
            "--tuned",
        ),
    ] = None,
    executor: opts.Executor = "local",
    address: opts.Address = None,
    cpus_per_run: opts.CpusPerRun = None,
    timeout: opts.Timeout = None,
) -> None:
    """Run a grid of presets x methods x seeds; resumes, isolates failures, Ctrl-C safe.

    Exit 0 when every run is ok, 1 when any failed or was skipped, 2 on a user error,
    130 on Ctrl-C (docs/running.md, "A grid").
    """
    from udora import methods as registry
    from udora.experiments.grid.bench import (
        make_grid,
        methods_for,
        quick_methods,
        run_grid,
        suite_presets,
    )
    from udora.experiments.grid.lock import LockHeldError
    from udora.experiments.run import interrupts
    from udora.experiments.run.checks import UsageError, check_out_dir
    from udora.experiments.run.execute import Overrides
    from udora.experiments.run.wandb_log import offline_note, offline_runs

    logged_before = offline_runs(out) if wandb else set()
    with interrupts.catch_interrupts():
        try:
            names = opts.names(presets, "--presets", console, "preset names or YAML paths")
            chosen = opts.names(methods_, "--methods", console, "method names")
            seed_list = opts.seeds(seeds, console)
            spec = opts.executor_spec(executor, jobs, address, cpus_per_run, timeout)
            check_out_dir(out)
            names = names or suite_presets(suite, quick=quick)
            listed = registry.list_methods()
            default = [m for m in quick_methods(suite) if m in listed] if quick else None
            chosen = chosen or default or methods_for(names, registry.list_methods())
            over = Overrides.parse(set_ or [])
            configs, sources = _tuned_configs(tuned, names, chosen, over)
            runs = make_grid(
                names, chosen, seed_list, over, quick=quick, data_dir=data_dir, tuned=configs
            )
            summary = run_grid(
                runs,
                out,
                data_dir=data_dir,
                wandb=wandb,
                console=console,
                wait_lock=wait_lock,
                config_sources=sources,
                executor=spec,
            )
        except (UsageError, LockHeldError) as err:
            _usage_error(err)
        except KeyboardInterrupt:  # before the grid started: nothing ran
            interrupts.ignore_from_now()
            console.print("interrupted")
            raise typer.Exit(interrupts.exit_code()) from None
        if summary.interrupted:  # a further Ctrl-C must not kill the exit (-2 instead of 130)
            interrupts.ignore_from_now()
        console.print(
            f"{'interrupted: ' if summary.interrupted else ''}{summary.line()}; results in {out}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        note = offline_note(out, logged_before) if wandb else None
        if note:
            console.print(note, highlight=False, markup=False, soft_wrap=True)
    if summary.interrupted:
        raise typer.Exit(interrupts.exit_code())
    if not summary.ok:
        raise typer.Exit(1)


def _tuned_configs(tuned: Path | None, presets: list[str], methods: list[str], over: Overrides):
    """``bench --tuned``: ({(preset, method): config}, {(preset, method): source}); prints
    one line per method without a tuned file and one when --set overrides tuned values."""
    if tuned is None:
        return None, None
    from udora.experiments.tuning.tuned_files import check_tuned_preset_fields, tuned_configs

    configs, sources, missing = tuned_configs(tuned, presets, methods)
    check_tuned_preset_fields(sources, over.task)
    plain = {"highlight": False, "markup": False, "soft_wrap": True}
    for (preset, method), config in configs.items():
        won = sorted(set(over.for_method(method, methods).method) & set(config.method))
        if won:
            path = sources[(preset, method)]["path"]
            console.print(f"{preset}/{method}: --set {', '.join(won)} wins over {path}", **plain)
    for method, where in missing.items():
        console.print(
            f"{method}: no tuned file in {tuned} for {', '.join(where)}; default config", **plain
        )
    return configs, sources
