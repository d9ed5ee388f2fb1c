"""Command-line options shared by the commands: where runs execute (``--jobs``,
``--executor``, ...; :mod:`udora.experiments.grid.executors`, docs/scaling.md), path
options that refuse an empty value (:func:`path_option`), and comma-separated lists that
are never empty and count a repeated item once (:func:`names`, :func:`seeds`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from udora.experiments.cli.errors import usage_error

if TYPE_CHECKING:
    from rich.console import Console

    from udora.experiments.grid.executors import ExecutorSpec

Jobs = Annotated[
    int | None,
    typer.Option(
        help="Runs (or trials) at once: worker processes (default 1); with "
        "--executor ray, Ray tasks (default: as many as the cluster's CPUs hold)."
    ),
]
Executor = Annotated[
    str, typer.Option("--executor", help="local (this machine's processes) or ray.")
]
Address = Annotated[
    str | None,
    typer.Option(
        help="With --executor ray: auto or HOST:PORT of a running cluster "
        "(default: start a local Ray)."
    ),
]
Timeout = Annotated[
    float | None,
    typer.Option(
        help="Seconds a run may take: past it its worker process is killed and the run "
        "recorded as failed (with --jobs 1 too, in one worker process).",
    ),
]
CpusPerRun = Annotated[
    int | None,
    typer.Option(
        help="Cores per run, for --jobs > 1 and Ray (default: cores / --jobs locally, 1 on Ray)."
    ),
]


def executor_spec(
    executor: str,
    jobs: int | None,
    address: str | None,
    cpus_per_run: int | None,
    timeout: float | None = None,
) -> ExecutorSpec:
    """The options as a checked :class:`ExecutorSpec` (a UsageError names a bad option);
    ``jobs`` None: 1 locally, the cluster's worth on Ray."""
    from udora.experiments.grid.executors import ExecutorSpec

    if jobs is None and executor != "ray":
        jobs = 1
    return ExecutorSpec(executor, jobs, address, cpus_per_run, timeout).check()


def path_option(help: str, option: str = "--out", what: str = "a folder") -> Any:
    """A ``typer.Option`` for a path: ``--out ''`` is a user error (one line, exit 2) when
    it is parsed, before the command starts; Typer would turn it into ``Path(".")``."""

    def parse(value: str | Path) -> Path:
        from udora.experiments.run.checks import UsageError, parse_path

        try:
            return parse_path(value, option, what)
        except UsageError as err:
            usage_error(err)
            raise  # unreachable: usage_error exits

    return typer.Option(option, help=help, parser=parse, metavar="<path>")


def _note(console: Console, line: str | None) -> None:
    if line is not None:
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def names(text: str | None, option: str, console: Console, what: str = "names") -> list[str] | None:
    """A comma-separated list option: None when not given (the command's default), else
    its items once each in the order given; a repeat prints one note line, an empty value
    or item is a UsageError (:func:`udora.experiments.run.checks.parse_names`)."""
    from udora.experiments.run.checks import once_each, parse_names

    if text is None:
        return None
    items, note = once_each(parse_names(text, option, what), option)
    _note(console, note)
    return items


def seeds(text: str, console: Console, option: str = "--seeds") -> list[int]:
    """``--seeds``: non-negative integers, once each in the order given (a note on repeats)."""
    from udora.experiments.run.checks import once_each, parse_seeds

    items, note = once_each(parse_seeds(text, option), option)
    _note(console, note)
    return items
