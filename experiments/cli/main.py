"""The ``udora`` command line: parses arguments and calls one library function per job."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console

from udora.experiments.cli.data import methods_list, oracle_app, presets_app
from udora.experiments.cli.diagnose import diagnose_cmd
from udora.experiments.cli.errors import USER_EXIT, os_error_line, print_line, report_bug
from udora.experiments.cli.grid import bench_cmd, run_cmd
from udora.experiments.cli.meta import meta_cmd
from udora.experiments.cli.open import export_cmd, score_cmd
from udora.experiments.cli.report import release_app, report_cmd
from udora.experiments.cli.study import ablate_cmd, acquire_cmd, robustness_cmd
from udora.experiments.cli.tuning import sweep_app, tune_cmd

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
app.add_typer(release_app, name="release")
app.command("tune")(tune_cmd)
app.command("ablate")(ablate_cmd)
app.command("robustness")(robustness_cmd)
app.command("acquire")(acquire_cmd)
app.command("diagnose")(diagnose_cmd)
app.command("meta")(meta_cmd)
app.command("run")(run_cmd)
app.command("bench")(bench_cmd)
app.command("report")(report_cmd)
app.command("methods")(methods_list)
app.command("export")(export_cmd)
app.command("score")(score_cmd)
console = Console()


def _version(value: bool) -> None:
    """``udora --version``: the installed distribution's version (``udora.__version__``)."""
    if value:
        from udora import __version__

        console.print(f"udora {__version__}", highlight=False, markup=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    import warnings

    from udora.experiments.run.jax_cache import CacheUnusableWarning, configure_compilation_cache

    with warnings.catch_warnings(record=True) as caught:  # imports no JAX
        warnings.simplefilter("always", CacheUnusableWarning)
        configure_compilation_cache()
    for w in caught:
        Console(stderr=True).print(
            f"warning: {w.message}", highlight=False, markup=False, soft_wrap=True
        )


def _one_line_warnings() -> None:
    """udora's own warnings (a plugin left out, a run folder skipped, an unusable cache)
    print as one line ``warning: <message>``; other libraries' as Python prints them."""
    import warnings

    other = warnings.formatwarning

    def one_line(message, category, *args, **kwargs) -> str:
        if category.__module__.startswith("udora."):
            return f"warning: {message}\n"
        return other(message, category, *args, **kwargs)

    warnings.formatwarning = one_line


def main() -> None:
    """Console-script entry point: a user error or file-system fault prints one line (exit
    2, or 1 for the machine's fault); anything else is a bug, one line naming the file
    that holds its traceback (exit 3; :mod:`udora.experiments.cli.errors`)."""
    from udora.errors import UserError

    _one_line_warnings()
    try:
        app()
    except UserError as err:
        print_line(f"error: {err}")
        sys.exit(USER_EXIT)
    except OSError as err:  # a folder that cannot be written, a full disk: one line
        code, line = os_error_line(err)
        print_line(line)
        sys.exit(code)
    except Exception as err:  # anything else is udora's fault, not the input's
        sys.exit(report_bug(err))
