"""``udora diagnose``: the estimation / approximation split of epistemic risk (Appendix B).

Argument parsing only; the diagnosis is :mod:`udora.experiments.diagnostics.diagnose`, the summary
:mod:`udora.experiments.diagnostics.summary` (docs/diagnostics.md). Registered on the root app
by :mod:`udora.experiments.cli.main`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from udora.experiments.cli import options as opts
from udora.experiments.cli.errors import user_errors

console = Console()
SANITY_METHODS = ("gp_oracle", "gp_linear")


def diagnose_cmd(
    preset: Annotated[str | None, typer.Option(help="Preset(s), comma-separated.")] = None,
    suite: Annotated[
        str | None, typer.Option(help="Instead of --preset: dev, heldout or all.")
    ] = None,
    method: Annotated[str | None, typer.Option(help="Method(s), comma-separated.")] = None,
    sanity: Annotated[
        bool,
        typer.Option(
            "--sanity",
            help="The paper's GP sanity check: gp_oracle and gp_linear (default --suite dev, "
            "--n 100,300,1000).",
        ),
    ] = False,
    seed: Annotated[int, typer.Option(help="The run's seed (task and fits).")] = 0,
    draws: Annotated[int, typer.Option(help="M: posterior draws g_i (at least 2).")] = 8,
    scale: Annotated[
        int, typer.Option(help="K: each reference sample has K times the training size.")
    ] = 4,
    n: Annotated[
        str | None,
        typer.Option("--n", help="Training sizes, comma-separated (preset.n_train levels)."),
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="key=value method or preset.X override.")
    ] = None,
    quick: Annotated[bool, typer.Option(help="Start from each method's quick budget.")] = False,
    out: Annotated[Path, opts.path_option("Results folder.")] = Path("diagnostics"),
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
    wait_lock: Annotated[
        bool, typer.Option("--wait-lock", help="Wait while another command uses --out.")
    ] = False,
    jobs: opts.Jobs = None,
    executor: opts.Executor = "local",
    address: opts.Address = None,
    cpus_per_run: opts.CpusPerRun = None,
) -> None:
    """Split each method's epistemic target into estimation and approximation error.

    Draws M posterior functions, refits the method on K times more data from each, and
    writes per point and pooled Equations 31-32 with Monte Carlo standard errors, the check
    that both add up to the EU target, summary.md and figures under --out. Exit 0 when
    every diagnosis is ok, 1 when any failed, 2 on a user error, 130 on Ctrl-C.
    """
    from udora.errors import UnknownNameError
    from udora.experiments.diagnostics.diagnose import Diagnosis
    from udora.experiments.diagnostics.runner import run_diagnoses
    from udora.experiments.diagnostics.summary import markdown
    from udora.experiments.grid.bench import make_grid, suite_presets
    from udora.experiments.run import interrupts
    from udora.experiments.run.checks import UsageError, check_out_dir, check_seed
    from udora.experiments.run.execute import Overrides
    from udora.methods.base import ConfigError
    from udora.oracle.preset import load_preset

    with interrupts.catch_interrupts():
        with user_errors(console):
            if sanity and method is not None:
                raise UsageError(
                    "--sanity chooses the methods (gp_oracle, gp_linear): drop --method"
                )
            if preset is not None and suite is not None:
                raise UsageError("give --preset or --suite, not both")
            suite = suite if suite is not None else ("dev" if sanity else None)
            given = opts.names(preset, "--preset", console, "preset names or YAML paths")
            presets = given or (suite_presets(suite) if suite is not None else [])
            methods = (
                list(SANITY_METHODS)
                if sanity
                else (opts.names(method, "--method", console, "method names") or [])
            )
            if not presets:
                raise UsageError("give --preset P (or --suite S, or --sanity)")
            if not methods:
                raise UsageError("give --method M (or --sanity)")
            check_seed(seed)
            check_out_dir(out)
            overrides = Overrides.parse(set_ or [])
            sizes = _sizes(n if n is not None else ("100,300,1000" if sanity else None))
            if sizes and "n_train" in overrides.task:
                raise UsageError("give --n or --set preset.n_train, not both")
            diagnoses = []
            for size in sizes or [None]:
                usable = presets
                if size is not None:
                    pools = {
                        p: overrides.task.get("pool_size", load_preset(p).pool_size)
                        for p in presets
                    }
                    usable = [p for p in presets if size <= pools[p]]
                    for name in sorted(set(presets) - set(usable)):
                        console.print(
                            f"[yellow]skipped[/] {escape(name)} at n = {size}: its "
                            f"pool has {pools[name]} points"
                        )
                if not usable:
                    continue
                extra = Overrides(task={} if size is None else {"n_train": size})
                try:
                    runs = make_grid(
                        usable,
                        methods,
                        [seed],
                        overrides.updated(extra),
                        quick=quick,
                        data_dir=data_dir,
                    )
                except ConfigError as err:  # a --set field the method does not have
                    raise UsageError(f"--set: {err}") from None
                except UnknownNameError as err:  # "unknown method ...; valid ..."
                    raise UsageError(f"--method: {err}") from None
                diagnoses += [Diagnosis(run, draws, scale) for run in runs]
            if not diagnoses:
                raise UsageError("no preset's pool holds any of the --n sizes")
            spec = opts.executor_spec(executor, jobs, address, cpus_per_run)
            console.print(
                f"{_count(len(diagnoses), 'diagnosis', 'diagnoses')} "
                f"({_count(len(presets), 'preset')}, {_count(len(methods), 'method')}, "
                f"{_count(max(len(sizes), 1), 'size')}); M = {draws}, K = {scale}",
                highlight=False,
            )
            summary = run_diagnoses(
                diagnoses,
                out,
                executor=spec,
                data_dir=data_dir,
                console=console,
                wait_lock=wait_lock,
                summarise=True,
            )
        if summary.interrupted:
            interrupts.ignore_from_now()
    report = summary.report
    if report is not None and not report["groups"].empty:
        console.print(markdown(report["groups"]), highlight=False, markup=False, soft_wrap=True)
    wrote = (
        f"; wrote {', '.join(p.name for p in report['written'])} in {out}"
        if report
        else f"; results in {out}"
    )
    console.print(
        f"{'interrupted: ' if summary.interrupted else ''}{summary.line()}{wrote}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if summary.interrupted:
        raise typer.Exit(interrupts.exit_code())
    if not summary.ok:
        raise typer.Exit(1)


def _count(k: int, one: str, many: str | None = None) -> str:
    return f"{k} {one if k == 1 else (many or one + 's')}"


def _sizes(text: str | None) -> list[int]:
    """``--n``: positive integers, once each in the order given (a note on repeats)."""
    from udora.experiments.run.checks import once_each, parse_names

    if text is None:
        return []
    sizes, note = once_each([_size(v) for v in parse_names(text, "--n", "training sizes")], "--n")
    if note:
        console.print(note, highlight=False, markup=False, soft_wrap=True)
    return sizes


def _size(text: str) -> int:
    from udora.experiments.run.checks import UsageError

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"--n: expected positive integers, got {text!r}")
    return value
