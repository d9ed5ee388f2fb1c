"""The ``udora`` command line: parses arguments and calls one library function per job."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from udora.experiments import cli_options as opts
from udora.experiments.cli_data import oracle_app, presets_app
from udora.experiments.cli_diagnose import diagnose_cmd
from udora.experiments.cli_errors import usage_error as _usage_error
from udora.experiments.cli_errors import user_errors
from udora.experiments.cli_meta import meta_cmd
from udora.experiments.cli_study import ablate_cmd
from udora.experiments.cli_tuning import sweep_app, tune_cmd

app = typer.Typer(
    name="udora",
    help="Score uncertainty disentanglement against exact GP posterior-risk targets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(presets_app, name="presets")
app.add_typer(oracle_app, name="oracle")
app.add_typer(sweep_app, name="sweep")
app.command("tune")(tune_cmd)
app.command("ablate")(ablate_cmd)
app.command("diagnose")(diagnose_cmd)
app.command("meta")(meta_cmd)
console = Console()


def _version(value: bool) -> None:
    if value:
        console.print(f"udora {importlib.metadata.version('udora')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    from udora.experiments.jax_cache import configure_compilation_cache  # imports no JAX

    configure_compilation_cache()


@app.command("run")
def run_cmd(
    preset: Annotated[str, typer.Option(help="Preset name or YAML path.")],
    method: Annotated[str, typer.Option(help="Registered method name (see `udora methods`).")],
    seed: Annotated[int, typer.Option(help="Run seed.")] = 0,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="key=value: a method config field, or preset.FIELD."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results"),
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
) -> None:
    """Run one method on one preset at one seed and write its run folder."""
    from udora.experiments.checks import UsageError, check_out_dir, check_seed
    from udora.experiments.run import parse_set, run_one

    try:  # before anything is fitted (docs/running.md, "One run")
        check_seed(seed)
        check_out_dir(out)
    except UsageError as err:
        _usage_error(err)
    result = run_one(preset, method, seed, parse_set(set_ or []), out, data_dir=data_dir)
    m = result.metrics
    console.print(f"{result.status}: {result.path}")
    if result.status != "ok":
        console.print(f"[red]{result.error}[/]")
        raise typer.Exit(1)
    keys = ("spearman_mean_f", "spearman_au", "spearman_eu", "spearman_total", "nll", "crps")
    console.print("  ".join(f"{k}={m[k]:.3f}" for k in keys if k in m))


@app.command("bench")
def bench_cmd(
    suite: Annotated[str, typer.Option(help="dev, heldout or all.")] = "dev",
    presets: Annotated[str | None, typer.Option(help="Comma-separated presets.")] = None,
    methods_: Annotated[
        str | None, typer.Option("--methods", help="Comma-separated methods (default: all).")
    ] = None,
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds.")] = "0",
    jobs: opts.Jobs = None,
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results"),
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value overrides.")] = None,
    wandb: Annotated[bool, typer.Option("--wandb", help="Log runs to W&B.")] = False,
    quick: Annotated[
        bool, typer.Option("--quick", help="Shipped presets, fast methods, fewer epochs.")
    ] = False,
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
    wait_lock: Annotated[
        bool, typer.Option("--wait-lock", help="Wait while another bench uses --out.")
    ] = False,
    tuned: Annotated[
        Path | None,
        typer.Option(help="Folder written by `udora tune`: tuned configs (--set wins)."),
    ] = None,
    executor: opts.Executor = "local",
    address: opts.Address = None,
    cpus_per_run: opts.CpusPerRun = None,
) -> None:
    """Run a grid of presets x methods x seeds; resumes, isolates failures, Ctrl-C safe.

    Exit 0 when every run is ok, 1 when any failed or was skipped, 2 on a user error,
    130 on Ctrl-C (docs/running.md, "A grid").
    """
    from udora import methods as registry
    from udora.experiments import interrupts
    from udora.experiments.bench import QUICK_METHODS, make_grid, run_grid, suite_presets
    from udora.experiments.checks import UsageError, check_out_dir, parse_seeds
    from udora.experiments.lock import LockHeldError
    from udora.experiments.run import parse_set

    with interrupts.catch_interrupts():
        try:
            seed_list = parse_seeds(seeds)
            spec = opts.executor_spec(executor, jobs, address, cpus_per_run)
            check_out_dir(out)
            names = presets.split(",") if presets else suite_presets("quick" if quick else suite)
            default = [m for m in QUICK_METHODS if m in registry.list_methods()] if quick else None
            chosen = methods_.split(",") if methods_ else (default or registry.list_methods())
            over = parse_set(set_ or [])
            configs, sources = _tuned_configs(tuned, names, chosen, over)
            runs = make_grid(names, chosen, seed_list, over, quick=quick, data_dir=data_dir,
                             tuned=configs)  # fmt: skip
            summary = run_grid(
                runs, out, data_dir=data_dir, wandb=wandb, console=console,
                wait_lock=wait_lock, config_sources=sources, executor=spec,
            )  # fmt: skip
        except (UsageError, LockHeldError) as err:
            _usage_error(err)
        except KeyboardInterrupt:  # before the grid started: nothing ran
            interrupts.ignore_from_now()
            console.print("interrupted")
            raise typer.Exit(130) from None
        if summary.interrupted:  # a further Ctrl-C must not kill the exit (-2 instead of 130)
            interrupts.ignore_from_now()
        console.print(
            f"{'interrupted: ' if summary.interrupted else ''}{summary.line()}; results in {out}",
            highlight=False, markup=False, soft_wrap=True,
        )  # fmt: skip
    if summary.interrupted:
        raise typer.Exit(130)
    if not summary.ok:
        raise typer.Exit(1)


def _tuned_configs(tuned: Path | None, presets: list[str], methods: list[str], over: dict):
    """``bench --tuned``: ({(preset, method): config}, {(preset, method): source}); prints
    one line per method without a tuned file and one when --set overrides tuned values."""
    if tuned is None:
        return None, None
    from udora.experiments.tune import tuned_configs

    configs, sources, missing = tuned_configs(tuned, presets, methods)
    plain = {"highlight": False, "markup": False, "soft_wrap": True}
    for (preset, method), config in configs.items():
        won = sorted(set(over) & set(config))
        if won:
            path = sources[(preset, method)]["path"]
            console.print(f"{preset}/{method}: --set {', '.join(won)} wins over {path}", **plain)
    for method, where in missing.items():
        console.print(f"{method}: no tuned file in {tuned} for {', '.join(where)}; default config",
                      **plain)  # fmt: skip
    return configs, sources


@app.command("report")
def report_cmd(
    results: Annotated[
        Path, typer.Argument(help="A results folder written by run, bench or ablate.")
    ],
    out: Annotated[
        Path | None, typer.Option(help="Report folder (default RESULTS/report).")
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="Folder of <preset>.csv.gz (meta-evaluation section).")
    ] = None,
) -> None:
    """Tables (parquet, csv), figures (PNG, PDF) and report.md from a results folder.

    A folder of `udora ablate` also gets the study's section: slopes, Kendall's W, shifts
    and their figures (docs/ablations.md). A folder with 4 or more methods on a preset and
    seed also gets the meta-evaluation section (docs/metrics.md, `udora meta`).
    """
    import warnings

    from udora.experiments.legacy import legacy_note, legacy_results
    from udora.experiments.report import write_report
    from udora.experiments.results import LegacyRunsWarning, UnreadableRunWarning

    n_legacy = len(legacy_results(results))
    if n_legacy:
        note = f"note: the report excludes {legacy_note(results, n_legacy)}"
        console.print(note, highlight=False, markup=False, soft_wrap=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", LegacyRunsWarning)  # said above, once
        warnings.simplefilter("always", UnreadableRunWarning)
        with user_errors(console, "interrupted: the report folder may be incomplete; run "
                                  "udora report again"):  # fmt: skip
            path = write_report(results, out, str(data_dir) if data_dir else None)
    for w in caught:  # e.g. "skipped <path>: is not valid JSON ..."
        console.print(f"warning: {w.message}", highlight=False, markup=False, soft_wrap=True)
    site = path.parent / "index.html"
    console.print(f"wrote {path} and the browsable report {site} (open it in a browser; "
                  "it works offline)", highlight=False, markup=False, soft_wrap=True)  # fmt: skip


@app.command("methods")
def methods_list(
    name: Annotated[
        str | None, typer.Argument(help="A method: show its config, search space, budget.")
    ] = None,
) -> None:
    """List the UQ methods (built-in and plugins), or show one method's config."""
    from udora.methods import registry

    if name is not None:
        _show_method(name)
        return
    table = Table("method", "family", "from", "summary")
    for info in registry.method_infos():  # reads docstrings; imports no method module
        table.add_row(info.name, info.family, info.origin, info.summary)
    Console(width=160).print(table)


def _show_method(name: str) -> None:
    """Print method ``name``'s config fields (type, default), search space, quick budget."""
    import json

    from udora.methods import registry

    cls = registry.get_method_class(name)
    info = next(i for i in registry.method_infos() if i.name == name)  # loaded: listed
    out = Console(width=160)
    plain = {"markup": False, "highlight": False}
    out.print(f"{name}: {info.summary}", **plain)
    out.print(f"class {info.target} ({info.origin})", **plain)
    out.print(f"uses the task prior: {'yes' if cls.uses_task_prior else 'no'}", **plain)
    table = Table("field", "type", "default", title=cls.Config.__name__)
    for field_name, field in cls.Config.model_fields.items():
        kind = getattr(field.annotation, "__name__", None) or str(field.annotation)
        table.add_row(field_name, kind, repr(field.get_default(call_default_factory=True)))
    out.print(table)
    as_json = {"separators": (", ", ": "), "default": str}
    space = json.dumps(cls.Config().search_space(), **as_json)
    out.print(f"search space (default optimizer): {space}", **plain)
    out.print(f"quick budget (--quick): {json.dumps(cls.Config.QUICK, **as_json)}", **plain)


def main() -> None:
    """Console-script entry point: user errors print one line, not a traceback."""
    try:
        app()
    except (ValueError, KeyError, FileNotFoundError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        # one line, never wrapped: a user error must stay greppable in logs
        Console(stderr=True).print(
            f"error: {message}", highlight=False, markup=False, soft_wrap=True
        )
        sys.exit(2)
