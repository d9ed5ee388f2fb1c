"""``udora presets``, ``udora oracle`` and ``udora methods``: the presets, the oracle tasks
built from them and the UQ methods.

Argument parsing only; registered on the root app by :mod:`udora.experiments.cli.main`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from udora.errors import UserError
from udora.experiments.cli import options as opts
from udora.oracle.atomic import write_text

console = Console()
presets_app = typer.Typer(help="List, show and fit the semi-synthetic presets.")
oracle_app = typer.Typer(help="Build and inspect oracle tasks.", no_args_is_help=True)


@presets_app.callback(invoke_without_command=True)
def presets_list(
    ctx: typer.Context,
    suite: Annotated[str, typer.Option(help="A suite (dev, heldout, ...) or all.")] = "all",
) -> None:
    """List the presets found (name, task kind, suite, d, pool size, n_train, kernel)."""
    if ctx.invoked_subcommand is not None:
        return
    from udora.oracle.preset import list_presets, load_preset

    table = Table("preset", "kind", "suite", "d", "pool", "n_train", "kernel", "shift")
    for name in list_presets(suite):
        p = load_preset(name)
        kernel = " + ".join(c["type"] for c in getattr(p, "kernel", ()))
        shift = " ".join(f"{f:g}" for f in getattr(p, "shift", ()))
        row = (p.kind, p.suite, str(len(p.features)), str(p.pool_size), str(p.n_train))
        table.add_row(name, *row, kernel, shift)
    Console(width=160).print(table)


@presets_app.command("show")
def presets_show(
    name: Annotated[str | None, typer.Argument(help="Preset name or YAML path.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every shipped preset.")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the task whose medians are shown.")] = 0,
    markdown: Annotated[Path | None, typer.Option(help="Also write the table here.")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
) -> None:
    """Ours next to the paper: variances, lengthscale range, median sigma_eps and sigma_f."""
    from udora.experiments.preset_tools import compare as pr
    from udora.oracle.kinds import REGRESSION
    from udora.oracle.preset import list_presets, load_preset

    if (name is None) == (not all_):
        raise UserError("presets show: give one preset NAME or --all")
    names = list_presets(kind=REGRESSION) if all_ else [name]
    if load_preset(names[0]).kind != REGRESSION:
        raise UserError(
            f"presets show: {names[0]!r} is a {load_preset(names[0]).kind} preset; this table "
            "compares regression presets with the paper (see `udora presets` and "
            "docs/classification_presets.md)"
        )
    rows = [pr.preset_row(n, seed, data_dir) for n in names]
    paper = [
        pr.paper_variant_row(n, seed, data_dir)
        for n in names
        if load_preset(n).kernel_paper is not None
    ]
    for columns, table_rows in ((pr.COLUMNS, rows), (pr.PAPER_COLUMNS, paper)):
        if table_rows:
            table = Table(*columns)
            for row in table_rows:
                table.add_row(*(str(row[c]) for c in columns))
            Console(width=250).print(table)
    if markdown is not None:
        text = pr.markdown_table(rows)
        if paper:
            text += "\nPaper-constrained kernels (`--set preset.kernel=paper`):\n\n"
            text += pr.paper_markdown_table(paper)
        write_text(markdown, text)
        console.print(f"wrote {markdown}")


@presets_app.command("fit")
def presets_fit(
    name: Annotated[str, typer.Argument(help="Preset name or YAML path.")],
    subset: Annotated[
        int | None,
        typer.Option(
            help="Rows of the real data used (seeded); 2000, or with --paper the fit's; "
            "classification: set by the class count (docs/classification_presets.md, Kernel)."
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Seed of the row subset; 0, or with --paper the fit's.")
    ] = None,
    write: Annotated[bool, typer.Option("--write", help="Write the fit into the YAML.")] = False,
    paper: Annotated[
        bool,
        typer.Option(
            "--paper",
            help="Fit the paper-constrained variant (paper variances and mean, lengthscales "
            "in the paper's range) into the kernel_paper block.",
        ),
    ] = False,
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
) -> None:
    """Fit the preset's kernel family by marginal likelihood on its real data (a
    classification preset: the family by held-out log loss, EP or Laplace evidence)."""
    from udora.experiments.preset_tools.fit import fit_and_write, fit_paper_and_write
    from udora.oracle.kinds import REGRESSION
    from udora.oracle.preset import load_preset

    kind = load_preset(name).kind
    if kind != REGRESSION:
        if paper:
            raise UserError(f"presets fit --paper: {name!r} is a {kind} preset (regression only)")
        from udora.experiments.preset_tools.fit_classification import (
            fit_classification_and_write,
        )

        fit_classification_and_write(
            name, rows=subset, seed=seed or 0, write=write, data_dir=data_dir, console=console
        )
        return
    if paper:
        fit_paper_and_write(
            name, subset=subset, seed=seed, write=write, data_dir=data_dir, console=console
        )
        return
    fit_and_write(
        name,
        subset=2000 if subset is None else subset,
        seed=0 if seed is None else seed,
        write=write,
        data_dir=data_dir,
        console=console,
    )


@oracle_app.command("build")
def oracle_build(
    preset: Annotated[str, typer.Option(help="Preset name or path to a preset YAML.")],
    out: Annotated[Path, opts.path_option("Folder for oracle.npz and oracle.json.")],
    seed: Annotated[int, typer.Option(help="Run seed.")] = 0,
    data_dir: Annotated[
        Path | None, typer.Option(help="Folder of <preset>.csv.gz (default: $UDORA_DATA_DIR).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="A preset field: preset.KEY=VALUE (e.g. preset.truth=warped)."),
    ] = None,
) -> None:
    """Build the oracle task of PRESET at SEED and write it to OUT."""
    from dataclasses import replace

    from udora.experiments.run.overrides import Overrides
    from udora.experiments.run.processes import build
    from udora.oracle.preset import load_preset
    from udora.oracle.store import load_oracle, save_task, summary

    overrides = Overrides.parse(set_ or [])
    other = sorted(replace(overrides, task={}).flat())  # what is not a preset field
    if other:
        raise UserError(
            f"--set {other[0]}: oracle build takes preset fields only "
            "(preset.KEY=VALUE, e.g. preset.truth=warped)"
        )
    chosen = load_preset(preset)
    if overrides.task:
        chosen = chosen.with_overrides(dict(overrides.task), origin="--set preset")
    folder = save_task(build(chosen, seed, data_dir), out)  # as every run builds it
    _print_summary(summary(*load_oracle(folder)))
    console.print(f"wrote {folder / 'oracle.npz'} and {folder / 'oracle.json'}")


@oracle_app.command("show")
def oracle_show(folder: Annotated[Path, typer.Argument(help="A folder written by build.")]) -> None:
    """Print n, d, median sigma_eps and sigma_f (original units) and the bin counts."""
    from udora.oracle.store import load_oracle, summary

    _print_summary(summary(*load_oracle(folder)))


def _print_summary(info: dict) -> None:
    table = Table("field", "value", show_header=False)
    for key, value in info.items():
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        table.add_row(key, shown)
    console.print(table)


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
    table = Table("method", "family", "task kinds", "from", "summary")
    for info in registry.method_infos():  # reads docstrings; imports no method module
        kinds = ", ".join(info.kinds) + "".join(f"; not {k}: {why}" for k, why in info.not_for)
        table.add_row(info.name, info.family, kinds, info.origin, info.summary)
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
    out.print(f"task kinds: {', '.join(info.kinds)}", **plain)
    for kind, why in info.not_for:
        out.print(f"not for {kind} tasks: {why}", **plain)
    table = Table("field", "type", "default", title=cls.Config.__name__)
    for field_name, field in cls.Config.model_fields.items():
        kind = getattr(field.annotation, "__name__", None) or str(field.annotation)
        table.add_row(field_name, kind, repr(field.get_default(call_default_factory=True)))
    out.print(table)
    as_json = {"separators": (", ", ": "), "default": str}
    space = json.dumps(cls.Config().search_space(), **as_json)
    out.print(f"search space (default optimizer): {space}", **plain)
    out.print(f"quick budget (--quick): {json.dumps(cls.Config.QUICK, **as_json)}", **plain)
