"""Where the runs of a grid and the trials of a sweep execute: in process, a local pool, Ray.

Every executor takes calls ``fn(*args)`` (``submit``) and hands back finished ones
(``wait``) as :class:`~udora.experiments.grid.workers.Outcome`: the call's value, or
``crash``, the reason its worker died before it returned. A crash fails that call only;
the others go on. ``bench``, ``sweep run``, ``tune`` and ``ablate`` choose one with
``--executor local|ray`` (docs/scaling.md):

- ``InProcess`` (``--jobs 1``, :mod:`udora.experiments.grid.local`): the calls run one
  after another in this process.
- ``LocalPool`` (``--jobs J``, :mod:`udora.experiments.grid.local`): J spawned workers on
  this machine, each pinned to its own ``cpus_per_run`` cores
  (:func:`udora.experiments.grid.workers.init_worker`). A worker that dies breaks a
  ``concurrent.futures`` pool, which fails every outstanding call alike; in-flight marker
  files and the workers' exit codes tell which call's worker died
  (:mod:`udora.experiments.grid.workers`), the pool is respawned and the rest resubmitted.
- ``RayPool`` (``--executor ray``, :mod:`udora.experiments.grid.ray_pool`): each call is a
  Ray task with ``num_cpus = cpus_per_run`` and no retries, on a running cluster
  (``address``) or on a local Ray started for the command. Ray isolates tasks, so a
  killed worker fails its task alone.

The calls write their own result folders (atomically), so with Ray on several machines
the results folder and the data folder must be on a filesystem every node sees; the
driver checks that each finished run's folder is there (docs/scaling.md, "What travels").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from udora.experiments.run import interrupts
from udora.experiments.run.checks import UsageError, check_jobs

# What every executor offers: ``capacity`` (calls run at once), ``submit(fn, args) ->
# ticket``, ``wait() -> [(ticket, Outcome)]`` (blocks until one ends; [] when none is
# left), ``outstanding`` and ``close(now)``.
Executor = Any


@dataclass(frozen=True)
class ExecutorSpec:
    """The command line's choice: ``kind``, ``jobs`` (calls in flight at once; None on Ray:
    as many as the cluster holds), Ray's
    ``address`` (None: start a local Ray for this command), ``cpus_per_run`` (None:
    the machine's usable cores divided by ``jobs`` for the local pool, 1 for Ray) and
    ``timeout``, the seconds a run may take before its worker process is killed and the
    run recorded as failed (a hang in native code too; ``--jobs 1`` then runs in one
    worker process rather than in the command's own)."""

    kind: Literal["local", "ray"] = "local"
    jobs: int | None = 1
    address: str | None = None
    cpus_per_run: int | None = None
    timeout: float | None = None  # seconds a run may take; its worker is killed after

    def check(self) -> ExecutorSpec:
        """Raise a UsageError naming the option that is wrong; returns ``self``."""
        if self.kind not in ("local", "ray"):
            raise UsageError(f"--executor: expected local or ray, got {self.kind!r}")
        if self.jobs is not None:
            check_jobs(self.jobs)
        elif self.kind == "local":
            raise UsageError("--jobs: the local executor needs a number of workers")
        if self.cpus_per_run is not None and self.cpus_per_run < 1:
            raise UsageError(f"--cpus-per-run: expected an integer >= 1, got {self.cpus_per_run}")
        if self.address is not None and self.kind != "ray":
            raise UsageError("--address: only with --executor ray")
        if self.timeout is not None:
            if isinstance(self.timeout, bool) or not self.timeout > 0:
                raise UsageError(f"--timeout: expected seconds > 0, got {self.timeout!r}")
            if self.kind == "ray":
                raise UsageError("--timeout: with the local executor only (not --executor ray)")
        if self.kind == "ray":
            import importlib.util

            if importlib.util.find_spec("ray") is None:
                raise UsageError('--executor ray: Ray is not installed (pip install "udora[ray]")')
        return self

    def make(self, marker_parent: str | Path) -> Executor:
        """The executor; a local pool keeps its in-flight markers under ``marker_parent``."""
        from udora.experiments.grid.local import InProcess, LocalPool

        if self.kind == "ray":
            from udora.experiments.grid.ray_pool import RayPool

            return RayPool(self.jobs, self.address, self.cpus_per_run or 1)
        if self.jobs == 1 and self.cpus_per_run is None and self.timeout is None:
            return InProcess()
        cores = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1)
        )
        if self.jobs == 1 and self.timeout is None and self.cpus_per_run >= cores:
            return InProcess()
        # one pinned worker when a single job asks for fewer cores than this process has
        # (to rerun a release row on the cores it recorded, docs/release.md), or has a
        # time limit (a worker can be killed; the command's own process cannot)
        per_run = self.cpus_per_run or max(1, cores // self.jobs)
        return LocalPool(self.jobs, per_run, marker_parent, timeout=self.timeout)


def run_all(
    executor: Executor,
    calls: Iterable[tuple],
    fn: Callable[..., Any],
    on_result: Callable[[tuple, Any], None],
    on_crash: Callable[[tuple, str], None],
) -> None:
    """``fn(*args)`` for every ``args`` of ``calls`` on ``executor``; ``on_result(args,
    value)`` or ``on_crash(args, reason)`` in this process as each ends. On any other exit
    (Ctrl-C, an error in a callback) the executor is stopped at once and the exception
    propagates; otherwise it is closed."""
    pending: dict[int, tuple] = {}
    queue, end = iter(calls), object()
    try:
        while True:
            # keep one call queued per worker beyond those running, so none waits idle
            while len(pending) < 2 * executor.capacity and (args := next(queue, end)) is not end:
                pending[executor.submit(fn, args)] = args
            if not pending:
                break
            for ticket, outcome in executor.wait():
                args = pending.pop(ticket)
                if outcome.crash is None:
                    on_result(args, outcome.value)
                else:
                    on_crash(args, outcome.crash)
    except BaseException:
        interrupts.stopping()  # a second Ctrl-C must not cut the cleanup short
        executor.close(now=True)
        raise
    executor.close()
