"""The ``udora`` command line: parses arguments and calls one library function per job."""

from __future__ import annotations

import importlib.metadata
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    name="udora",
    help="Score uncertainty disentanglement against exact GP posterior-risk targets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
presets_app = typer.Typer(help="List, show and fit the semi-synthetic presets.")
app.add_typer(presets_app, name="presets")
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
    from experiments.jax_cache import configure_compilation_cache

    configure_compilation_cache()


@presets_app.callback(invoke_without_command=True)
def presets_list(
    ctx: typer.Context,
    suite: Annotated[str, typer.Option(help="dev, heldout or all.")] = "all",
) -> None:
    """List the presets found (name, suite, d, pool size, n_train, kernel)."""
    if ctx.invoked_subcommand is not None:
        return
    from oracle.preset import list_presets, load_preset

    table = Table("preset", "suite", "d", "pool", "n_train", "kernel", "shift")
    for name in list_presets(suite):
        p = load_preset(name)
        kernel = " + ".join(c["type"] for c in p.kernel)
        shift = " ".join(f"{f:g}" for f in p.shift)
        table.add_row(name, p.suite, str(p.d), str(p.pool_size), str(p.n_train), kernel, shift)
    console.print(table)


@app.command("methods")
def methods_list() -> None:
    """List the registered UQ methods."""
    import methods

    names = methods.list_methods()
    if not names:
        console.print("no methods registered yet")
    for name in names:
        doc = (methods.get_method_class(name).__doc__ or "").strip().splitlines()
        console.print(f"{name:16s} {doc[0] if doc else ''}")


def main() -> None:
    """Console-script entry point: user errors print one line, not a traceback."""
    try:
        app()
    except (ValueError, KeyError, FileNotFoundError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False)
        sys.exit(2)
