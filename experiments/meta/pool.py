"""The processes that share ``udora meta``'s per-cell work (:class:`CellPool`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class CellPool:
    """Runs a function on one cell of a meta-evaluation in one of ``jobs`` spawned
    processes while this process goes on (:meth:`submit`; at once, here, for ``jobs``
    1). The processes start at the first call and serve every later one until the
    ``with`` block ends; they ignore Ctrl-C, which cancels what is pending here (one
    line, no worker tracebacks)."""

    def __init__(self, jobs: int = 1):
        self.jobs = jobs
        self._executor: Any = None

    def submit(self, fn: Callable[..., Any], k: int, cell: Any, *args: Any) -> Any:
        """``fn(k, cell, *args)`` as a future: running in a process while this one goes
        on (done at once when serial); its ``.result()`` is the value."""
        if self.jobs <= 1:
            from concurrent.futures import Future

            done: Future = Future()
            done.set_result(fn(k, cell, *args))
            return done
        return self._start().submit(fn, k, cell, *args)

    def _start(self) -> Any:
        if self._executor is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            from udora.experiments.run.interrupts import ignore_in_worker

            ctx = multiprocessing.get_context("spawn")  # workers leave Ctrl-C to this process
            self._executor = ProcessPoolExecutor(self.jobs, ctx, ignore_in_worker)
        return self._executor

    def __enter__(self) -> CellPool:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=exc[0] is None, cancel_futures=True)
            self._executor = None
