"""Command-line options shared by ``bench``, ``sweep run``, ``tune`` and ``ablate``: where
their runs execute (:mod:`udora.experiments.grid.executors`, docs/scaling.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
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
CpusPerRun = Annotated[
    int | None,
    typer.Option(
        help="Cores per run, for --jobs > 1 and Ray (default: cores / --jobs locally, 1 on Ray)."
    ),
]


def executor_spec(
    executor: str, jobs: int | None, address: str | None, cpus_per_run: int | None
) -> ExecutorSpec:
    """The options as a checked :class:`ExecutorSpec` (a UsageError names a bad option);
    ``jobs`` None: 1 locally, the cluster's worth on Ray."""
    from udora.experiments.grid.executors import ExecutorSpec

    if jobs is None and executor != "ray":
        jobs = 1
    return ExecutorSpec(executor, jobs, address, cpus_per_run).check()
