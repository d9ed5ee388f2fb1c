"""The processes that share ``udora meta``'s per-cell work (:class:`CellPool`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class CellPool:
    """Maps a function over the cells of a meta-evaluation, in ``jobs`` spawned processes
    (serially for ``jobs`` 1 or a single cell), or runs it on one cell (:meth:`submit`)
    while this process goes on. The processes start at the first parallel call and serve
    every later one until the ``with`` block ends; they ignore Ctrl-C, which cancels what
    is pending here (one line, no worker tracebacks)."""

    def __init__(self, jobs: int = 1):
        self.jobs = jobs
        self._executor: Any = None

    def map(self, fn: Callable[..., Any], cells: Sequence[Any], *args: Any) -> list[Any]:
        """``[fn(k, cell, *args) for k, cell in enumerate(cells)]``; ``fn`` must be a
        module-level function (it is pickled by name)."""
        if self.jobs <= 1 or len(cells) < 2:
            return [fn(k, cell, *args) for k, cell in enumerate(cells)]
        n = len(cells)
        try:
            return list(self._start().map(fn, range(n), cells, *([a] * n for a in args)))
        except KeyboardInterrupt:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
            raise

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
