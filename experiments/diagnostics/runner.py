"""A grid of diagnoses (``udora diagnose``) on any executor, resumable, one lock per folder.

Each diagnosis (:mod:`udora.experiments.diagnostics.diagnose`) runs as one call of the executor
(:mod:`udora.experiments.grid.executors`) and writes its own folder; anything it raises fails
that diagnosis only, and so does a worker that dies under it. Ctrl-C keeps finished ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from udora.experiments.diagnostics.diagnose import (
    SCHEMA,
    Diagnosis,
    diagnose,
    finite_json,
    is_current,
    load_diagnosis,
    write_diagnosis,
)
from udora.experiments.grid.bench import clean_temporaries
from udora.experiments.grid.executors import ExecutorSpec, run_all
from udora.experiments.grid.lock import results_lock
from udora.experiments.grid.progress import LogLines
from udora.experiments.run import interrupts


def _worker(job: Diagnosis, out: str, data_dir: str | None) -> tuple[str, str]:
    """Diagnose and write; (status, error) for the driver. Nothing a diagnosis raises
    (but Ctrl-C) reaches the grid: it is this diagnosis's failure."""
    try:
        record, arrays = diagnose(job, data_dir)
        write_diagnosis(job.folder(out), finite_json(record), arrays)
    except Exception as err:
        if interrupts.requested():
            raise KeyboardInterrupt from err
        record = {"schema": SCHEMA, "status": "failed", "error": f"{type(err).__name__}: {err}"}
        try:
            write_diagnosis(job.folder(out), record, {})
        except Exception as again:  # e.g. the folder cannot be written: say so, go on
            record["error"] += f"; its record could not be written: {again}"
    return record["status"], record.get("error") or ""


@dataclass
class DiagnoseSummary:
    done: int = 0
    failed: int = 0
    already: int = 0
    interrupted: bool = False
    report: dict[str, Any] | None = None  # what write_summary wrote, when asked

    @property
    def ok(self) -> bool:
        return not (self.failed or self.interrupted)

    def line(self) -> str:
        return f"{self.done} ran, {self.failed} failed, {self.already} already done"


def run_diagnoses(
    jobs: list[Diagnosis],
    out: str | Path,
    *,
    executor: ExecutorSpec | None = None,
    data_dir: str | Path | None = None,
    console: Console | None = None,
    wait_lock: bool = False,
    summarise: bool = False,
) -> DiagnoseSummary:
    """Every diagnosis not already ok under ``out``, on ``executor``, holding the folder's
    lock; a worker that dies fails its diagnosis only. Ctrl-C keeps finished ones. With
    ``summarise``, the folder's summary is written before the lock is released
    (:func:`udora.experiments.diagnostics.summary.write_summary`; ``summary.report``)."""
    console = console or Console()
    spec = (executor or ExecutorSpec(jobs=1)).check()
    out = Path(out)
    summary = DiagnoseSummary()
    dd = str(data_dir) if data_dir is not None else None
    with interrupts.catch_interrupts():
        try:
            out.mkdir(parents=True, exist_ok=True)
            with results_lock(out, wait=wait_lock):
                clean_temporaries(out)
                todo = []
                for job in jobs:
                    previous = load_diagnosis(job.folder(out))
                    if is_current(previous) and previous.get("status") == "ok":
                        summary.already += 1
                    else:
                        todo.append(job)
                _run(spec, todo, out, dd, console, summary)
                if summarise and not summary.interrupted:
                    from udora.experiments.diagnostics.summary import write_summary

                    summary.report = write_summary(out)
        except KeyboardInterrupt:
            interrupts.stopping()
            summary.interrupted = True
            console.print("[yellow]interrupted[/]: finished diagnoses are kept; rerun to resume")
    return summary


def _run(
    spec: ExecutorSpec,
    todo: list[Diagnosis],
    out: Path,
    dd: str | None,
    console: Console,
    summary: DiagnoseSummary,
) -> None:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with interrupts.entered_without_signals(Progress(*columns, console=console)) as progress:
        noun = "diagnosis" if len(todo) == 1 else "diagnoses"
        bar = progress.add_task(
            f"{len(todo)} {noun} ({summary.already} already done)", total=len(todo)
        )
        lines = LogLines(console, len(todo), "diagnoses")

        def done(job: Diagnosis, status: str, error: str) -> None:
            summary.done += 1
            if status != "ok":
                summary.failed += 1
                run = job.run
                where = f"{run.preset.name}/{run.method}/{run.label}/seed {run.seed}"
                progress.console.print(f"[red]failed[/] {escape(where)}: {escape(error)}")
            progress.advance(bar)
            lines.tick(summary.done, summary.failed)
            if interrupts.requested():
                raise KeyboardInterrupt

        def crashed(args: tuple, reason: str) -> None:
            job = args[0]
            write_diagnosis(
                job.folder(out), {"schema": SCHEMA, "status": "failed", "error": reason}, {}
            )
            done(job, "failed", reason)

        finished: Callable[[tuple, tuple[str, str]], None] = lambda a, v: done(a[0], *v)  # noqa: E731
        calls = [(job, str(out), dd) for job in todo]
        run_all(spec.make(out), calls, _worker, finished, crashed)
