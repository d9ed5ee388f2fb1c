"""``udora ablate``: run an ablation study (a YAML file or ``--factor key=v1,v2,...``).

Argument parsing only; the study is :mod:`udora.experiments.studies.study`, the grid is ``bench``'s
(:func:`udora.experiments.grid.bench.run_grid`), and ``udora report`` on the study folder adds the
ablation section (docs/ablations.md). Registered on the root app by
:mod:`udora.experiments.cli.main`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from udora.errors import UserError
from udora.experiments.cli import options as opts
from udora.experiments.cli.errors import user_errors
from udora.scoring.acquisition import BATCH

console = Console()


def ablate_cmd(
    study_file: Annotated[
        Path | None,
        typer.Argument(help="A study YAML, or a shipped study's name (width, depth, ...)."),
    ] = None,
    factor: Annotated[
        str | None, typer.Option(help="Without a file: key=level1,level2,... (e.g. width=16,32).")
    ] = None,
    scale: Annotated[
        str | None,
        typer.Option(
            help="With --factor: log2, linear or ordinal (default: the levels choose; "
            "docs/ablations.md)."
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="With --factor: the study's name.")] = None,
    suite: Annotated[str, typer.Option(help="With --factor: dev, heldout or all.")] = "dev",
    presets: Annotated[str | None, typer.Option(help="With --factor: comma-separated.")] = None,
    methods_: Annotated[
        str | None, typer.Option("--methods", help="With --factor: comma-separated methods.")
    ] = None,
    seeds: Annotated[str, typer.Option(help="With --factor: comma-separated seeds.")] = "0",
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="With --factor: fixed key=value overrides.")
    ] = None,
    tune_trials: Annotated[
        int | None,
        typer.Option(
            help="With --factor: tune the other fields at every level, N trials "
            "per preset x method (udora tune; docs/ablations.md)."
        ),
    ] = None,
    jobs: opts.Jobs = None,
    out: Annotated[
        Path | None, opts.path_option("Results folder (default ablations/<study name>).")
    ] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
    wait_lock: Annotated[
        bool, typer.Option("--wait-lock", help="Wait while another grid uses --out.")
    ] = False,
    executor: opts.Executor = "local",
    address: opts.Address = None,
    cpus_per_run: opts.CpusPerRun = None,
) -> None:
    """Run an ablation study: presets x methods x levels x seeds, resumable like bench.

    Then `udora report OUT` writes its slopes, Kendall's W and figures. Exit 0 when every
    run is ok, 1 when any failed or was skipped, 2 on a user error, 130 on Ctrl-C.
    """
    from udora.experiments.run import interrupts
    from udora.experiments.run.checks import UsageError, check_out_dir
    from udora.experiments.run.execute import parse_set
    from udora.experiments.studies.runner import run_study
    from udora.experiments.studies.study import (
        load_study,
        study_from_factor,
        study_runs,
        write_study,
    )

    with interrupts.catch_interrupts():
        with user_errors(console):
            if (study_file is None) == (factor is None):
                raise UsageError("give a study file or --factor key=level1,level2,..., not both")
            if study_file is not None:
                for option, given, key in (
                    ("--tune-trials", tune_trials, "tune"),
                    ("--scale", scale, "scale"),
                ):
                    if given is not None:
                        raise UsageError(f"{option}: only with --factor (a file says `{key}:`)")
                study = load_study(study_file)
                origin = str(study_file)
            else:
                chosen = opts.names(methods_, "--methods", console, "method names")
                if chosen is None:
                    raise UsageError("--factor needs --methods")
                study = study_from_factor(
                    factor,
                    name=name,
                    scale=scale,
                    suite=suite,
                    presets=opts.names(presets, "--presets", console, "preset names or YAML paths"),
                    methods=chosen,
                    seeds=opts.seeds(seeds, console),
                    fixed=parse_set(set_ or []),
                    tune_trials=tune_trials,
                )
                origin = "--factor"
            folder = out if out is not None else Path("ablations") / study.name
            spec = opts.executor_spec(executor, jobs, address, cpus_per_run)
            check_out_dir(folder)
            n_runs = (
                len(study_runs(study, data_dir, origin=origin))
                if study.tune is None
                else (
                    len(study.preset_names())
                    * len(study.methods)
                    * len(study.levels)
                    * len(study.seeds)
                )
            )
            write_study(study, folder)
            tuned = f", tuned per level ({study.tune.trials} trials)" if study.tune else ""
            console.print(
                f"study {study.name}: {study.factor} at {len(study.levels)} levels "
                f"{study.level_names()}, {n_runs} runs{tuned}; "
                f"scale: {study.scale} ({_why_scale(study, scale, study_file)})",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
            summary = run_study(
                study,
                folder,
                data_dir=data_dir,
                console=console,
                wait_lock=wait_lock,
                origin=origin,
                executor=spec,
            )
        if summary.interrupted:
            interrupts.ignore_from_now()
        console.print(
            f"{'interrupted: ' if summary.interrupted else ''}{summary.line()}; "
            f"results in {folder}; `udora report {folder}` summarises the study",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if summary.interrupted:
        raise typer.Exit(interrupts.exit_code())
    if not summary.ok:
        raise typer.Exit(1)


def _why_scale(study, scale: str | None, study_file: Path | None) -> str:
    """Why the study has its scale: the file, --scale, or the rule on its levels."""
    from udora.experiments.studies.scales import choose_scale

    if study_file is not None:
        return "the study file"
    return "--scale" if scale is not None else choose_scale(study.level_values())[1]


def robustness_cmd(
    results: Annotated[
        Path,
        typer.Argument(
            help="The truth study's results folder, or the runs' table a "
            "page wrote (docs/data/robustness_runs.parquet)."
        ),
    ],
    docs: Annotated[Path, typer.Option(help="The docs folder to write into.")] = Path("docs"),
    reference_seeds: Annotated[
        str, typer.Option(help="Seeds of the GP reference ranking (comma-separated).")
    ] = "2,3",
    other_seeds: Annotated[
        str, typer.Option(help="Seeds of every other ranking (comma-separated).")
    ] = "0,1",
    boot: Annotated[int, typer.Option(help="Bootstrap draws of presets.")] = 2000,
    page: Annotated[
        str,
        typer.Option(
            help="The page's name: DOCS/PAGE.md, its figure and its runs' table "
            "(robustness_tuned for the tuned study)."
        ),
    ] = "robustness",
) -> None:
    """Write DOCS/robustness.md: Kendall's tau between the GP's method rankings and each
    other ground-truth family's, beside the GP-vs-GP ceiling, and the rank shifts."""
    from udora.experiments.studies.robustness_page import write_robustness_page

    with user_errors(console):
        if boot < 100:
            raise UserError(f"--boot: at least 100 draws, got {boot}")
        ref = opts.seeds(reference_seeds, console, "--reference-seeds")
        other = opts.seeds(other_seeds, console, "--other-seeds")
        if set(ref) & set(other):
            shared = sorted(set(ref) & set(other))
            raise UserError(
                f"--reference-seeds and --other-seeds share seeds {shared}: "
                "the ceiling needs disjoint sets"
            )
        if not page.replace("_", "").replace("-", "").isalnum():
            raise UserError(
                f"--page: expected a plain file name (letters, digits, _ or -), got {page!r}"
            )
        path = write_robustness_page(results, docs, ref, other, boot, page)
    console.print(f"wrote {path}", highlight=False, markup=False, soft_wrap=True)


def acquire_cmd(
    suite: Annotated[str, typer.Option(help="dev, heldout or all (regression only).")] = "dev",
    presets: Annotated[str | None, typer.Option(help="Comma-separated presets.")] = None,
    methods_: Annotated[
        str | None, typer.Option("--methods", help="Comma-separated methods (default: all).")
    ] = None,
    seeds: Annotated[str, typer.Option(help="Comma-separated task seeds.")] = "0",
    strategies: Annotated[
        str, typer.Option(help="Comma-separated: eu, bald, random, exact (gp_oracle only).")
    ] = "eu,bald,random,exact",
    rounds: Annotated[int, typer.Option(help="Rounds of labelling after the first fit.")] = 3,
    batch: Annotated[int, typer.Option(help="Points labelled per round.")] = BATCH,
    tuned: Annotated[
        Path | None, opts.path_option("Folder of tuned configs (as bench --tuned).", "--tuned")
    ] = None,
    jobs: opts.Jobs = None,
    out: Annotated[Path, opts.path_option("Results folder.")] = Path("acquisition"),
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
    timeout: opts.Timeout = None,
) -> None:
    """The active-learning study: rounds of labelling chosen by each method's EU, its BALD,
    at random (and the exact value for gp_oracle), scored under the exact posterior
    (docs/joint_and_acquisition.md). Resumes; writes OUT/acquisition.parquet."""
    from udora import methods as registry
    from udora.experiments.acquisition.study import make_chains, run_acquisition
    from udora.experiments.grid.bench import methods_for, suite_presets
    from udora.experiments.run import interrupts
    from udora.experiments.run.checks import check_out_dir
    from udora.oracle.preset import load_preset

    # a Ctrl-C before a round's grid started: nothing of that round ran
    with user_errors(console, "interrupted: finished rounds are kept; rerun to resume"):
        names = opts.names(presets, "--presets", console, "preset names") or suite_presets(suite)
        kinds = {load_preset(n).kind for n in names}
        if kinds != {"regression"}:
            raise UserError(f"--presets: the study needs regression presets; got kinds {kinds}")
        chosen = opts.names(methods_, "--methods", console, "method names")
        chosen = chosen or methods_for(names, registry.list_methods())
        spec = opts.executor_spec("local", jobs, None, None, timeout)
        check_out_dir(out)
        try:
            chains = make_chains(
                names, chosen, opts.seeds(seeds, console), tuple(strategies.split(","))
            )
        except ValueError as err:
            raise UserError(f"--strategies: {err}") from None
        if rounds < 0 or batch < 1:
            raise UserError(f"--rounds must be >= 0 and --batch >= 1; got {rounds}, {batch}")
        with interrupts.catch_interrupts():
            summary, path = run_acquisition(
                chains,
                out,
                rounds=rounds,
                batch=batch,
                tuned=tuned,
                data_dir=data_dir,
                executor=spec,
                console=console,
            )
            if summary.interrupted:  # a further Ctrl-C must not kill the exit
                interrupts.ignore_from_now()
    done = "interrupted: " if summary.interrupted else ""
    console.print(f"{done}{summary.line()}; rows in {path}", highlight=False, markup=False)
    if summary.interrupted:
        raise typer.Exit(interrupts.exit_code())
    if not summary.ok:
        raise typer.Exit(1)
