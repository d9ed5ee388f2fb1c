"""A grid's runs on an executor (:func:`run_on`): each run in a worker, a run that raised
before its method ran (its task refused: too large, an unusable table) and what a dead
worker leaves recorded as failed, and the runs finished after an interrupt counted
(:mod:`udora.experiments.grid.bench` plans and reports them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from udora.errors import UserError
from udora.experiments.grid.executors import run_all
from udora.experiments.run.execute import record_failed, run_resolved
from udora.experiments.run.records import RESULT, read_run
from udora.experiments.run.spec import ResolvedRun


def _worker(
    run: ResolvedRun, out_dir: str, data_dir: str | None, wandb: bool, source: Any = None
) -> tuple[str, str]:
    try:
        result = run_resolved(run, out_dir, data_dir=data_dir, config_source=source)
    except Exception as err:  # before the method ran (a data table that cannot be read,
        # its task refused): the grid goes on, and every planned run ends in a recorded
        # outcome (docs/running.md, "A grid")
        reason = str(err) if isinstance(err, UserError) else f"{type(err).__name__}: {err}"
        try:
            record_failed(run, out_dir, reason)
        except OSError as why:  # a full disk: the summary still counts the run failed
            reason += f" (and its failure could not be recorded: {why})"
        except UserError:  # a folder it must not replace (a newer udora's run): left alone
            pass
        return "failed", reason
    if wandb:
        from udora.experiments.run.wandb_log import log_run

        log_run(result.path, run, root=out_dir)  # one W&B folder per grid
    return result.status, result.error or ""


def _key(run: ResolvedRun) -> tuple[str, str]:
    return (run.preset_arg, run.method)


def count_unreported(
    todo: list[ResolvedRun], reported: set[Path], out: Path, since: float, summary: Any
) -> None:
    """Count into ``summary`` (a :class:`~udora.experiments.grid.bench.GridSummary`) the runs
    a worker wrote after the interrupt but before it was terminated.

    Their folders are complete (written atomically), so the summary line must count them;
    a ``result.json`` older than this grid is a previous attempt's and is not counted.
    """
    for run in todo:
        if run.rel_dir in reported:
            continue
        found = read_run(run.run_dir(out), verify_files=False)
        if found.usable and (found.folder / RESULT).stat().st_mtime >= since:
            summary.done += 1
            summary.failed += found.record.status != "ok"


def run_on(
    executor: Any,
    todo: list[ResolvedRun],
    out: str,
    dd: str | None,
    wandb: bool,
    done: Callable[[ResolvedRun, str, str], None],
    sources: dict[tuple[str, str], Any],
) -> None:
    """Run ``todo`` on ``executor``; a run whose worker died is recorded failed, and so is
    one whose folder this process cannot see (a Ray node writing to its own disk)."""

    def finished(args: tuple, value: tuple[str, str]) -> None:
        run = args[0]
        if value[0] == "ok" and not (run.run_dir(out) / "result.json").is_file():
            value = (
                "failed",
                f"its result folder is not under {out} on this machine: on "
                "a cluster, the results folder must be shared by every node "
                "(docs/scaling.md)",
            )
        done(run, *value)

    def crashed(args: tuple, reason: str) -> None:
        run = args[0]
        # only runs not yet ok are in todo, so a finished one is this run's:
        if read_run(run.run_dir(out)).finished:
            done(run, "ok", "")  # its worker died after writing it (Ray's cleanup, say)
            return
        record_failed(run, out, reason)
        done(run, "failed", reason)

    calls = [(run, out, dd, wandb, sources.get(_key(run))) for run in todo]
    run_all(executor, calls, _worker, finished, crashed)


def run_alone(
    run: ResolvedRun, out: str | Path, data_dir: str | Path | None, timeout: float
) -> tuple[str, str]:
    """``udora run --timeout``: ``run`` in one worker process, killed (SIGKILL) after
    ``timeout`` seconds and then recorded as failed, as a grid's run is; returns its
    (status, error)."""
    from udora.experiments.grid.executors import ExecutorSpec

    executor = ExecutorSpec(jobs=1, timeout=timeout).check().make(out)
    ends: list[tuple[str, str]] = []
    dd = None if data_dir is None else str(data_dir)
    run_on(executor, [run], str(out), dd, False, lambda _, *end: ends.append(end), {})
    return ends[0]
